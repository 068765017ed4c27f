import type { GuardrailConfig, GuardrailsConfig } from '../config/index.js';
import type { Finding } from './detectors/finding.js';
import { detectorReach } from './detectors/index.js';
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

function compileOne(name: string, g: GuardrailConfig): CompiledGuardrail {
  switch (g.type) {
    case 'pii': {
      const entities = g.entities;
      return local(name, g, 'pii', { detect: (text) => detectPii(text, entities), reach: detectorReach(entities) }, g.restore);
    }
    case 'secrets': {
      const options = { categories: g.categories, minLength: g.entropy.min_length, minEntropy: g.entropy.min_entropy };
      // The high-entropy rule reads a whole token: its reach is the longest token it judges.
      const reach = Math.max(detectorReach(g.categories), g.categories.includes('high_entropy') ? g.entropy.min_length * 4 : 0);
      return local(name, g, 'secrets', { detect: (text) => detectSecrets(text, options), reach }, g.restore);
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
