// Each guardrail's verdicts since the gateway started, for /admin/status and the status
// page: counts by phase and action, errors by outcome, and a latency histogram whose
// percentiles stand for p50/p99. Fixed memory per guardrail name (the names come from
// config, so they are few): a histogram of log-spaced buckets, never the samples.

/** The upper bound of latency bucket i is FIRST_MS × GROWTH^i ms; the last bucket is open-ended. */
const FIRST_MS = 0.01;
const GROWTH = 1.25;
const LOG_GROWTH = Math.log(GROWTH);
/** Enough buckets to reach 5 minutes, past any guardrail's timeout. */
const BUCKETS = Math.ceil(Math.log(300_000 / FIRST_MS) / LOG_GROWTH) + 1;

class GuardrailCounts {
  /** phase -> action -> verdicts. */
  readonly verdicts = new Map<string, Map<string, number>>();
  /** outcome (fail_open, fail_closed) -> verdicts with an error. */
  readonly errors = new Map<string, number>();
  readonly latency = new Uint32Array(BUCKETS);
  checks = 0;
}

export interface GuardrailStatsView {
  /** Verdicts since start, by phase, then by action. */
  readonly verdicts: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Checks a service could not answer, by what `on_error` made of it. */
  readonly errors: Readonly<Record<string, number>>;
  readonly checks: number;
  /** The latency percentiles, in ms (each the upper bound of its bucket, within 25%); null before any check. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export class GuardrailStats {
  readonly #byName = new Map<string, GuardrailCounts>();

  record(guardrail: string, phase: string, action: string, latencyMs: number, errorOutcome: string | null): void {
    let counts = this.#byName.get(guardrail);
    if (counts === undefined) this.#byName.set(guardrail, (counts = new GuardrailCounts()));
    let byAction = counts.verdicts.get(phase);
    if (byAction === undefined) counts.verdicts.set(phase, (byAction = new Map()));
    byAction.set(action, (byAction.get(action) ?? 0) + 1);
    if (errorOutcome !== null) counts.errors.set(errorOutcome, (counts.errors.get(errorOutcome) ?? 0) + 1);
    const i = bucketOf(latencyMs);
    counts.latency[i] = (counts.latency[i] as number) + 1;
    counts.checks += 1;
  }

  /** What `guardrail` did since start; every count zero (and no percentiles) when it never ran. */
  view(guardrail: string): GuardrailStatsView {
    const counts = this.#byName.get(guardrail);
    if (counts === undefined) return { verdicts: {}, errors: {}, checks: 0, p50Ms: null, p99Ms: null };
    const verdicts: Record<string, Record<string, number>> = {};
    for (const [phase, byAction] of counts.verdicts) verdicts[phase] = Object.fromEntries(byAction);
    return {
      verdicts,
      errors: Object.fromEntries(counts.errors),
      checks: counts.checks,
      p50Ms: percentile(counts.latency, counts.checks, 0.5),
      p99Ms: percentile(counts.latency, counts.checks, 0.99),
    };
  }
}

function bucketOf(ms: number): number {
  if (!(ms > FIRST_MS)) return 0;
  return Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / FIRST_MS) / LOG_GROWTH));
}

function upperMs(i: number): number {
  return Math.round(FIRST_MS * GROWTH ** i * 1000) / 1000;
}

function percentile(buckets: Uint32Array, total: number, q: number): number | null {
  if (total === 0) return null;
  const rank = Math.ceil(total * q);
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += buckets[i] as number;
    if (seen >= rank) return upperMs(i);
  }
  return upperMs(buckets.length - 1);
}
