import type { GuardrailConfig, GuardrailsConfig } from '../config/index.js';
import type { Finding } from './detectors/finding.js';
import { detectorReach, MAX_CONTEXT_CHARS, PEM_MAX_CHARS } from './detectors/index.js';
import { detectPii } from './detectors/pii.js';
import { detectSecrets } from './detectors/secrets.js';
import { compileRegexGuardrail } from './regex.js';
import type { StreamDetectors } from './stream.js';

// A guardrail's definition, made ready to run once per config: the built-in detectors and
// the regex patterns compiled with their reach, the services left to the request path
// (they are I/O). Built when a generation is first asked for it, shared by every request.

/** What a stream does under a blocking output guardrail (see the config's `stream`). */
export type StreamMode = 'hold' | 'window' | 'after';

interface CompiledBase {
  readonly name: string;
  readonly action: 'block' | 'mask' | 'warn';
  readonly stream: StreamMode;
  readonly windowChars: number;
  readonly onError: 'fail_open' | 'fail_closed';
}

/** A check that runs here, on the text, synchronously: pii, secrets, regex. */
export interface LocalGuardrail extends CompiledBase {
  readonly kind: 'local';
  readonly type: 'pii' | 'secrets' | 'regex';
  /** Every finding in a text, sorted, none overlapping; with the reach a stream must hold back. */
  readonly detectors: StreamDetectors;
  /** Put the originals back in the answer (mask only). */
  readonly restore: boolean;
}

/** A check another service answers: NeMo, a webhook, a judge route. */
export interface ServiceGuardrail extends CompiledBase {
  readonly kind: 'service';
  readonly type: 'nemo' | 'webhook' | 'judge';
  readonly config: GuardrailConfig;
  readonly timeoutMs: number;
}

export type CompiledGuardrail = LocalGuardrail | ServiceGuardrail;

const compiledByConfig = new WeakMap<GuardrailsConfig, ReadonlyMap<string, CompiledGuardrail>>();

/** Every guardrail of a config, by name, compiled once per config object. */
export function compileGuardrails(config: GuardrailsConfig | undefined): ReadonlyMap<string, CompiledGuardrail> {
  if (config === undefined) return EMPTY;
  let compiled = compiledByConfig.get(config);
  if (compiled === undefined) {
    compiled = new Map(Object.entries(config).map(([name, g]) => [name, compileOne(name, g)]));
    compiledByConfig.set(config, compiled);
  }
  return compiled;
}

const EMPTY: ReadonlyMap<string, CompiledGuardrail> = new Map();

/** The left context the built-in detectors read before a match (a context word, a label), and a boundary character. */
const CONTEXT = MAX_CONTEXT_CHARS + 2;

/** The length of the text's last run without whitespace, up to `max`. */
function lastRun(text: string, max: number): number {
  let i = text.length;
  const stop = Math.max(0, text.length - max);
  while (i > stop) {
    const c = text.charCodeAt(i - 1);
    if (c === 32 || c === 10 || c === 13 || c === 9 || c === 12 || c === 11 || c === 0xa0) break;
    i--;
  }
  return text.length - i;
}

function compileOne(name: string, g: GuardrailConfig): CompiledGuardrail {
  switch (g.type) {
    case 'pii': {
      const entities = g.entities;
      const reach = detectorReach(entities);
      // An email (the longest entity by far) has no whitespace in it: one still being written
      // lies in the text's last unbroken run. The other entities span at most their own reach.
      const spaced = entities.filter((e) => e !== 'email');
      const base = spaced.length === 0 ? MAX_CONTEXT_CHARS : detectorReach(spaced);
      const hold = entities.includes('email') ? (text: string) => Math.max(base, lastRun(text, reach) + 1) : () => base;
      return local(name, g, 'pii', { detect: (text) => detectPii(text, entities), reach, hold, context: CONTEXT }, g.restore);
    }
    case 'secrets': {
      const options = { categories: g.categories, minLength: g.entropy.min_length, minEntropy: g.entropy.min_entropy };
      // The high-entropy rule reads a whole token: its reach is the longest token it judges.
      const reach = Math.max(detectorReach(g.categories), g.categories.includes('high_entropy') ? g.entropy.min_length * 4 : 0);
      // Every secret but a PEM block is one token, with no whitespace: one still being written
      // lies in the text's last unbroken run. A PEM block is open from its BEGIN line to its END line.
      const pem = g.categories.includes('private_key');
      const hold = (text: string): number => {
        const run = lastRun(text, reach) + 1;
        if (!pem) return run;
        const begin = text.lastIndexOf('-----BEGIN');
        if (begin === -1 || text.length - begin > PEM_MAX_CHARS) return run;
        // Open until its END line is whole (and a character after it, for the boundary).
        const end = text.indexOf('-----END', begin);
        const closed = end === -1 ? -1 : text.indexOf('KEY-----', end);
        if (closed !== -1 && closed + 8 < text.length) return run;
        return Math.max(run, text.length - begin);
      };
      return local(name, g, 'secrets', { detect: (text) => detectSecrets(text, options), reach, hold, context: CONTEXT }, g.restore);
    }
    case 'regex': {
      const re = compileRegexGuardrail(g);
      return local(name, g, 'regex', { detect: (text): readonly Finding[] => re.findAll(text), reach: re.reach }, false);
    }
    default:
      return {
        kind: 'service',
        name,
        type: g.type,
        config: g,
        action: g.action,
        stream: g.stream,
        windowChars: g.window_chars,
        onError: g.on_error,
        timeoutMs: g.timeout_ms,
      };
  }
}

function local(
  name: string,
  g: GuardrailConfig & { stream: StreamMode; window_chars: number },
  type: LocalGuardrail['type'],
  detectors: StreamDetectors,
  restore: boolean,
): LocalGuardrail {
  return {
    kind: 'local',
    name,
    type,
    detectors,
    restore: restore && g.action === 'mask',
    action: g.action,
    stream: g.stream,
    windowChars: g.window_chars,
    onError: 'on_error' in g && g.on_error !== undefined ? g.on_error : 'fail_closed',
  };
}
