import autocannon from 'autocannon';
import { type LatencySummary, round, summarizeLatency } from './percentiles.js';

export interface LoadSpec {
  /** Full URL, path included. */
  readonly url: string;
  readonly body: string;
  readonly connections: number;
  readonly durationS: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Called for every request: headers on top of `headers`, e.g. a different caller's credential each time. */
  readonly headersFor?: () => Readonly<Record<string, string>>;
  /** Called for every request: its body in place of `body`, e.g. a prompt no earlier request had. */
  readonly bodyFor?: () => string;
}

/** One autocannon run, with every response's latency kept (autocannon's own histogram has 1 ms resolution). */
export interface LoadRun {
  readonly connections: number;
  readonly durationS: number;
  readonly responses: number;
  readonly ok: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly statusCodes: Readonly<Record<string, number>>;
  /** 2xx latencies in ms, from autocannon's hrtime-based per-response timing. */
  readonly samplesMs: readonly number[];
}

/** What goes into the results file: one or more runs against the same target, merged. */
export interface LoadFigures {
  readonly connections: number;
  readonly runs: number;
  readonly duration_s: number;
  readonly ok: number;
  readonly req_per_s: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly status_codes: Readonly<Record<string, number>>;
  readonly latency_ms: LatencySummary;
  /** Each run on its own, in the order they ran: shows drift between the halves of a schedule. */
  readonly per_run: readonly { readonly req_per_s: number; readonly p50_ms: number; readonly p99_ms: number; readonly max_ms: number }[];
}

/** Drives one target at fixed concurrency for a fixed time with autocannon. */
export function runLoad(spec: LoadSpec): Promise<LoadRun> {
  const samplesMs: number[] = [];
  const statusCodes: Record<string, number> = {};
  let responses = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...spec.headers },
        body: spec.body,
        // A request with a setupRequest is rebuilt before each send; without one, autocannon sends one prebuilt buffer.
        ...(spec.headersFor === undefined && spec.bodyFor === undefined ? {} : { requests: [{ setupRequest: rebuilt(spec) }] }),
        connections: spec.connections,
        pipelining: 1,
        duration: spec.durationS,
        // The stop flag is only checked on a sample tick: a short interval ends the run on time.
        sampleInt: 100,
        timeout: 10,
      },
      (err, result) => {
        if (err !== null) return reject(err);
        resolve({
          connections: spec.connections,
          durationS: result.duration,
          responses,
          ok: result['2xx'],
          errors: result.errors,
          timeouts: result.timeouts,
          non2xx: result.non2xx,
          statusCodes,
          samplesMs,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      responses += 1;
      statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
      if (statusCode >= 200 && statusCode < 300) samplesMs.push(responseTimeMs);
    });
  });
}

function rebuilt(spec: LoadSpec): autocannon.SetupRequest {
  const { headersFor, bodyFor } = spec;
  return (req) => ({
    ...req,
    ...(headersFor === undefined ? {} : { headers: { ...req.headers, ...headersFor() } }),
    ...(bodyFor === undefined ? {} : { body: bodyFor() }),
  });
}

/** Merges runs against one target (e.g. the two halves of an A-B-B-A schedule). */
export function loadFigures(runs: readonly LoadRun[]): LoadFigures {
  const durationS = runs.reduce((s, r) => s + r.durationS, 0);
  const ok = runs.reduce((s, r) => s + r.ok, 0);
  const statusCodes: Record<string, number> = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    connections: runs[0]?.connections ?? 0,
    runs: runs.length,
    duration_s: round(durationS, 2),
    ok,
    req_per_s: round(durationS === 0 ? 0 : ok / durationS, 1),
    errors: runs.reduce((s, r) => s + r.errors, 0),
    timeouts: runs.reduce((s, r) => s + r.timeouts, 0),
    non2xx: runs.reduce((s, r) => s + r.non2xx, 0),
    status_codes: statusCodes,
    latency_ms: summarizeLatency(runs.flatMap((r) => r.samplesMs)),
    per_run: runs.map((r) => {
      const l = summarizeLatency(r.samplesMs);
      return { req_per_s: round(r.durationS === 0 ? 0 : r.ok / r.durationS, 1), p50_ms: l.p50Ms, p99_ms: l.p99Ms, max_ms: l.maxMs };
    }),
  };
}

/** A human-readable problem when a target answered anything but 2xx, or not at all. */
export function failuresOf(label: string, f: LoadFigures): string | null {
  if (f.errors === 0 && f.timeouts === 0 && f.non2xx === 0 && f.ok > 0) return null;
  const codes = Object.entries(f.status_codes)
    .map(([c, n]) => `${c}x${n}`)
    .join(' ');
  return `${label}: ${f.ok} ok, ${f.errors} errors (${f.timeouts} timeouts), ${f.non2xx} non-2xx [${codes}]`;
}
