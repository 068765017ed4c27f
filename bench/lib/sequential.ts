import { Client } from 'undici';
import { type LatencySummary, summarizeLatency } from './percentiles.js';

export interface SequentialRun {
  readonly count: number;
  readonly failures: number;
  readonly samplesMs: readonly number[];
}

export interface SequentialFigures {
  readonly count: number;
  readonly failures: number;
  readonly latency_ms: LatencySummary;
}

/**
 * One request at a time on one keep-alive connection, timed with hrtime from send to the
 * last body byte: the cleanest view of the latency a single hop adds, with no queueing.
 */
export async function runSequential(url: string, body: string, count: number): Promise<SequentialRun> {
  const target = new URL(url);
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 30_000 });
  const samplesMs: number[] = [];
  let failures = 0;
  try {
    for (let i = 0; i < count; i++) {
      const t0 = process.hrtime.bigint();
      try {
        const res = await client.request({
          method: 'POST',
          path: target.pathname,
          headers: { 'content-type': 'application/json' },
          body,
        });
        await res.body.arrayBuffer();
        const t1 = process.hrtime.bigint();
        if (res.statusCode >= 200 && res.statusCode < 300) samplesMs.push(Number(t1 - t0) / 1e6);
        else failures += 1;
      } catch {
        failures += 1;
      }
    }
  } finally {
    await client.close().catch(() => undefined);
  }
  return { count, failures, samplesMs };
}

export function sequentialFigures(runs: readonly SequentialRun[]): SequentialFigures {
  return {
    count: runs.reduce((s, r) => s + r.count, 0),
    failures: runs.reduce((s, r) => s + r.failures, 0),
    latency_ms: summarizeLatency(runs.flatMap((r) => r.samplesMs)),
  };
}
