import { guardrailsSchema } from '../../src/config/index.js';
import { compileGuardrails, Mapping, type PhaseRun, runPhase } from '../../src/guardrails/index.js';
import { seededRandom } from '../../src/routing/index.js';
import { median, round } from './percentiles.js';

// A large prompt through every built-in guardrail, in this process: the pure functions the
// input stage calls (compileGuardrails, then runPhase), timed on their own, with no HTTP,
// JSON or event loop around them. The prompt is prose with personal data planted in it and
// nothing a blocking guardrail would stop at, so every guardrail reads all of it (a block
// would end the run early and time less).

/** pii with every entity (masking), secrets with every category, a regex of a few rules as people write them. */
const DEFINITIONS = {
  pii: { type: 'pii', action: 'mask', restore: true },
  secrets: { type: 'secrets', action: 'block' },
  rules: {
    type: 'regex',
    action: 'block',
    patterns: ['(?i)ignore (all|previous) instructions', 'sk-[A-Za-z0-9]{20,}', '(?i)\\bconfidential\\b', '(?i)drop table'],
  },
} as const;

const WORDS = (
  'the of and to in is that for it as was with be by on not this are or from at which but have an they you were there ' +
  'been one all we their has would when if so no out up what about into than them can only other new some could time ' +
  'these two may then do first any my now such like our over even most made after also did many before must through ' +
  'back years where much your way well down should because each just those people how too little state good very make ' +
  'world still own see work long here get both between life being under never day same another know while last might ' +
  'great old year off come since against go came right used take three account invoice order shipment address payment'
).split(' ');

/** Values each detector finds, planted among the words. */
const PLANTED = [
  'ada.lovelace@example.com',
  '4111 1111 1111 1111',
  '+1 415 555 0134',
  '192.168.10.20',
  'DE89 3704 0044 0532 0130 00',
  'SSN 078-05-1120',
];
const PLANT_RATE = 0.002;

/** A text of exactly `chars` characters: seeded prose, sentences of words with a planted value now and then. */
export function largePrompt(chars: number, seed = 1): string {
  const random = seededRandom(seed);
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const planted = random() < PLANT_RATE;
    const word = planted ? PLANTED[Math.floor(random() * PLANTED.length)] : WORDS[Math.floor(random() * WORDS.length)];
    const part = `${word}${random() < 0.08 ? '. ' : ' '}`;
    parts.push(part);
    length += part.length;
  }
  return parts.join('').slice(0, chars);
}

export interface ScanFigures {
  readonly chars: number;
  readonly runs: number;
  readonly total_ms: { readonly p50: number; readonly min: number; readonly max: number };
  /** Each guardrail's own time (its verdict's latency), the median over the runs. */
  readonly per_guardrail_p50_ms: Readonly<Record<string, number>>;
  /** What the guardrails found in one run, by guardrail and category. */
  readonly findings: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly blocked: string | null;
}

/** `runs` timed checks of a `chars`-character prompt through every built-in guardrail, after `warmup` untimed ones. */
export function scanLargePrompt(chars: number, runs: number, warmup: number): ScanFigures {
  const compiled = compileGuardrails(guardrailsSchema.parse(DEFINITIONS));
  const guardrails = [...compiled.values()];
  const text = largePrompt(chars);
  const once = (): { ms: number; run: PhaseRun } => {
    const started = performance.now();
    const run = runPhase({
      phase: 'input',
      guardrails,
      texts: [{ role: 'user', text }],
      mapping: new Mapping(),
      subject: { protocol: 'openai', route: 'bench', model: 'bench', team: null, key: null },
      ask: () => Promise.reject(new Error('no service guardrail is configured')),
    });
    const ms = performance.now() - started;
    if (run instanceof Promise) throw new Error('a local-only phase turned asynchronous');
    return { ms, run };
  };
  for (let i = 0; i < warmup; i++) once();
  const timed = Array.from({ length: runs }, once);
  const totals = timed.map((t) => t.ms);
  const last = (timed.at(-1) as { run: PhaseRun }).run;
  return {
    chars,
    runs,
    total_ms: { p50: round(median(totals)), min: round(Math.min(...totals)), max: round(Math.max(...totals)) },
    per_guardrail_p50_ms: Object.fromEntries(
      guardrails.map((g) => [
        g.name,
        round(median(timed.map((t) => t.run.verdicts.find((v) => v.guardrail === g.name)?.latencyMs ?? Number.NaN))),
      ]),
    ),
    findings: Object.fromEntries(last.verdicts.map((v) => [v.guardrail, v.categories])),
    blocked: last.blocked?.guardrail ?? null,
  };
}
