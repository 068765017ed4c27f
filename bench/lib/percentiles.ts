/** Latency figures in milliseconds, from exact per-request samples. */
export interface LatencySummary {
  readonly count: number;
  readonly meanMs: number;
  readonly minMs: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
}

/** Nearest-rank percentile of an ascending array; q in [0, 1]. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] as number;
}

export function median(values: readonly number[]): number {
  return percentile(Float64Array.from(values).sort(), 0.5);
}

export function summarizeLatency(samplesMs: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(samplesMs).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    meanMs: round(sorted.length === 0 ? Number.NaN : sum / sorted.length),
    minMs: round(sorted[0] ?? Number.NaN),
    p50Ms: round(percentile(sorted, 0.5)),
    p90Ms: round(percentile(sorted, 0.9)),
    p99Ms: round(percentile(sorted, 0.99)),
    p999Ms: round(percentile(sorted, 0.999)),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
  };
}

/** Microsecond precision is all a loopback figure can honestly carry. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
