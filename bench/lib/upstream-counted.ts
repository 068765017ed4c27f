import { alternate } from './alternation.js';
import type { MockProcess } from './fleet.js';
import { type LoadFigures, type LoadSpec, loadFigures, runLoad } from './load.js';
import { type LatencySummary, round, summarizeLatency } from './percentiles.js';
import { cpuUsedDuring } from './proc-cpu.js';
import { runFirstTokens, type StreamedRequest } from './sequential.js';

// Load and streams alternated over several ways, each slice with the mock's request count
// read around it: what reached the upstream tells a cache's hit (nothing) from its miss (one).

/** One way's slices: its load, the CPU of the process that answered, and the requests that reached the mock. */
export interface CountedLoad {
  readonly load: LoadFigures;
  readonly cpu_us_per_request: number | null;
  readonly upstream_requests: number;
}

/** One way's streams, one at a time: time to the first byte and to the first text, and the requests that reached the mock. */
export interface CountedStreams {
  readonly failures: number;
  readonly upstream_requests: number;
  readonly first_byte_ms: LatencySummary;
  readonly first_token_ms: LatencySummary;
}

/** Alternating load slices per way, each with the answering process's CPU and the mock's request count around it. */
export async function countedLoad<W extends string>(
  ways: readonly W[],
  spec: (way: W) => LoadSpec,
  pidOf: (way: W) => number,
  mock: MockProcess,
  rounds: number,
): Promise<Record<W, CountedLoad>> {
  const cpuMs = Object.fromEntries(ways.map((w) => [w, 0])) as Record<W, number>;
  const upstream = Object.fromEntries(ways.map((w) => [w, 0])) as Record<W, number>;
  const runs = await alternate(
    ways,
    async (way) => {
      const before = await mock.total();
      const { result, cpuMs: used } = await cpuUsedDuring([pidOf(way)], () => runLoad(spec(way)));
      upstream[way] += (await mock.total()) - before;
      cpuMs[way] += used[0] ?? Number.NaN;
      return result;
    },
    rounds,
  );
  const out = {} as Record<W, CountedLoad>;
  for (const way of ways) {
    const load = loadFigures(runs[way]);
    const cpu = load.ok > 0 && Number.isFinite(cpuMs[way]) ? round((cpuMs[way] * 1000) / load.ok, 1) : null;
    out[way] = { load, cpu_us_per_request: cpu, upstream_requests: upstream[way] };
  }
  return out;
}

/** `perHalf` streams per way and half (A-B-C-C-B-A), one at a time, to each way's origin. */
export async function countedStreams<W extends string>(
  ways: readonly W[],
  originOf: (way: W) => string,
  request: StreamedRequest,
  mock: MockProcess,
  perHalf: number,
): Promise<Record<W, CountedStreams>> {
  const upstream = Object.fromEntries(ways.map((w) => [w, 0])) as Record<W, number>;
  const runs = await alternate(ways, async (way) => {
    const before = await mock.total();
    const run = await runFirstTokens(originOf(way), request, perHalf);
    upstream[way] += (await mock.total()) - before;
    return run;
  });
  const out = {} as Record<W, CountedStreams>;
  for (const way of ways) {
    out[way] = {
      failures: runs[way].reduce((s, r) => s + r.failures, 0),
      upstream_requests: upstream[way],
      first_byte_ms: summarizeLatency(runs[way].flatMap((r) => r.firstByteMs)),
      first_token_ms: summarizeLatency(runs[way].flatMap((r) => r.samplesMs)),
    };
  }
  return out;
}
