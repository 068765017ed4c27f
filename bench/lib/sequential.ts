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

/** A streamed request, and how to tell the event that carries the first piece of answer text. */
export interface StreamedRequest {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  isFirstToken(event: string): boolean;
}

/**
 * Streams one at a time on one keep-alive connection: hrtime from send to the event holding
 * the first text (`samplesMs`), and to the body's first byte (`firstByteMs`).
 */
export async function runFirstTokens(
  base: string,
  r: StreamedRequest,
  count: number,
): Promise<{ failures: number; samplesMs: number[]; firstByteMs: number[] }> {
  const client = new Client(base, { pipelining: 1, keepAliveTimeout: 30_000 });
  const samplesMs: number[] = [];
  const firstByteMs: number[] = [];
  let failures = 0;
  try {
    for (let i = 0; i < count; i++) {
      const t0 = process.hrtime.bigint();
      try {
        const res = await client.request({ method: 'POST', path: r.path, headers: r.headers, body: r.body });
        let pending = '';
        let firstAt: bigint | null = null;
        let firstByteAt: bigint | null = null;
        for await (const chunk of res.body) {
          firstByteAt ??= process.hrtime.bigint();
          if (firstAt !== null) continue; // drain the rest so the connection is reused
          pending += (chunk as Buffer).toString('utf8');
          const events = pending.split('\n\n');
          pending = events.pop() ?? '';
          if (events.some((e) => r.isFirstToken(e))) firstAt = process.hrtime.bigint();
        }
        if (res.statusCode === 200 && firstAt !== null && firstByteAt !== null) {
          samplesMs.push(Number(firstAt - t0) / 1e6);
          firstByteMs.push(Number(firstByteAt - t0) / 1e6);
        } else failures += 1;
      } catch {
        failures += 1;
      }
    }
  } finally {
    await client.close().catch(() => undefined);
  }
  return { failures, samplesMs, firstByteMs };
}
