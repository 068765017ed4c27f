import { percentile, round } from './percentiles.js';
import { adminWrite, chatStatus } from './topology-calls.js';

// A burst of topology writes (routes and prices created, patched and deleted, one after the
// other, alternating between two replicas) while chat requests for routes that exist
// throughout go to both replicas. Each write rebuilds the generation on both; a request must
// never see a half-built one, so every request should be served.

export interface Replica {
  readonly name: string;
  readonly url: string;
  readonly adminUrl: string;
}

export interface BurstFigures {
  readonly writes: number;
  readonly writes_applied: number;
  /** The writes' `x-switchyard-reload` values, counted. */
  readonly reload_headers: Readonly<Record<string, number>>;
  readonly write_ms: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly burst_s: number;
  readonly chat: {
    readonly served: number;
    readonly failed: number;
    readonly status_codes: Readonly<Record<string, number>>;
    readonly by_replica: Readonly<Record<string, { readonly served: number; readonly failed: number }>>;
  };
}

/** Chat requests in flight at once on each replica during the burst. */
const LOOPS_PER_REPLICA = 2;
/** Past this the burst stops writing (a problem), and the load loops stop with it. */
const BURST_MAX_MS = 300_000;

interface Step {
  readonly method: 'POST' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly body?: unknown;
  readonly expect: number;
}

/** The i-th write: six to a model (route and price created, patched, deleted), so every write is valid in order. */
function step(i: number, provider: string): Step {
  const model = `burst-${Math.floor(i / 6)}`;
  switch (i % 6) {
    case 0:
      return { method: 'POST', path: 'routes', body: { id: model, candidates: [{ provider }] }, expect: 201 };
    case 1:
      return { method: 'POST', path: 'pricing', body: { model, input_usd_per_mtok: 1, output_usd_per_mtok: 2 }, expect: 201 };
    case 2:
      return { method: 'PATCH', path: `routes/${model}`, body: { policy: 'random' }, expect: 200 };
    case 3:
      return { method: 'PATCH', path: `pricing/${model}`, body: { input_usd_per_mtok: 3 }, expect: 200 };
    case 4:
      return { method: 'DELETE', path: `pricing/${model}`, expect: 204 };
    default:
      return { method: 'DELETE', path: `routes/${model}`, expect: 204 };
  }
}

/**
 * `writes` topology writes, alternating between the replicas, while LOOPS_PER_REPLICA chat
 * loops per replica ask for `models` (which must exist before and after). The loops stop when
 * the last write has answered.
 */
export async function topologyBurst(
  replicas: readonly [Replica, Replica],
  provider: string,
  models: readonly string[],
  writes: number,
  problems: string[],
): Promise<BurstFigures> {
  const started = performance.now();
  const deadline = started + BURST_MAX_MS;
  const stop = { done: false };
  const codes: Record<string, number> = {};
  const byReplica: Record<string, { served: number; failed: number }> = {};
  const loop = async (r: Replica, offset: number): Promise<void> => {
    const tally = (byReplica[r.name] ??= { served: 0, failed: 0 });
    for (let i = offset; !stop.done && performance.now() < deadline; i++) {
      const status = await chatStatus(r.url, models[i % models.length] as string);
      codes[status] = (codes[status] ?? 0) + 1;
      if (status === 200) tally.served += 1;
      else tally.failed += 1;
    }
  };
  const loops = replicas.flatMap((r) => Array.from({ length: LOOPS_PER_REPLICA }, (_, i) => loop(r, i)));

  const writeMs: number[] = [];
  let applied = 0;
  const reloads: Record<string, number> = {};
  try {
    for (let i = 0; i < writes; i++) {
      if (performance.now() > deadline) {
        problems.push(`burst: ${i} of ${writes} writes done after ${BURST_MAX_MS / 1000} s; the rest not sent`);
        break;
      }
      const s = step(i, provider);
      const target = replicas[i % 2] as Replica;
      const w = await adminWrite(target.adminUrl, s.method, s.path, s.body);
      writeMs.push(w.ms);
      const header = w.reload ?? 'none';
      reloads[header] = (reloads[header] ?? 0) + 1;
      if (w.status === s.expect) applied += 1;
      else problems.push(`burst write ${i + 1} (${s.method} ${s.path} on ${target.name}) answered ${w.status}: ${w.text.slice(0, 300)}`);
    }
  } finally {
    stop.done = true;
    await Promise.all(loops);
  }
  const burstS = round((performance.now() - started) / 1000, 1);
  const sorted = Float64Array.from(writeMs).sort();
  const served = Object.values(byReplica).reduce((n, t) => n + t.served, 0);
  const failed = Object.values(byReplica).reduce((n, t) => n + t.failed, 0);
  if (failed > 0) {
    const list = Object.entries(codes)
      .map(([c, n]) => `${c}x${n}`)
      .join(' ');
    problems.push(`burst: ${failed} chat requests for routes that existed throughout failed [${list}]`);
  }
  return {
    writes: writeMs.length,
    writes_applied: applied,
    reload_headers: reloads,
    write_ms: {
      p50: round(percentile(sorted, 0.5), 1),
      p99: round(percentile(sorted, 0.99), 1),
      max: round(sorted.at(-1) ?? Number.NaN, 1),
    },
    burst_s: burstS,
    chat: { served, failed, status_codes: codes, by_replica: byReplica },
  };
}
