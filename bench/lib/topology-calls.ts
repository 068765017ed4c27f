import { setTimeout as sleep } from 'node:timers/promises';

// The calls the topology-write scenario makes: an admin write of a provider, route or price,
// and a chat request polled until a model answers as asked. Every call has a time bound of its
// own, so a replica that stops answering ends the scenario with a problem instead of a hang.

/** One call's bound: far past anything a healthy gateway on loopback takes. */
const CALL_TIMEOUT_MS = 30_000;

export interface AdminWrite {
  readonly status: number;
  /** `x-switchyard-reload`: the reload the write caused, already serving ('applied') or not. */
  readonly reload: string | null;
  readonly text: string;
  /** Send to the last body byte, seen by the bench process. */
  readonly ms: number;
}

/** One write to `/admin/v1/<path>` (no admin token: the admin listener is on loopback). */
export async function adminWrite(adminUrl: string, method: string, path: string, body?: unknown): Promise<AdminWrite> {
  const started = performance.now();
  const res = await fetch(`${adminUrl}/admin/v1/${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, reload: res.headers.get('x-switchyard-reload'), text, ms: performance.now() - started };
}

/** The status of one non-streamed chat request for `model`; 0 when the connection failed or timed out. */
export async function chatStatus(url: string, model: string): Promise<number> {
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

export interface Poll {
  /** Set to stop the poll early: it then resolves with 'stopped'. */
  stopped: boolean;
}

/**
 * Sends chat requests for `model` every `gapMs` until one answers `want`: the instant
 * (performance.now()) that answer arrived, or what went wrong. While waiting, `meanwhile` is
 * the only other status accepted (404 `no_route` for a route not there yet, 200 for one not
 * gone yet); anything else, or `withinMs` passing, is a problem.
 */
export async function pollUntil(
  url: string,
  model: string,
  want: number,
  meanwhile: number,
  options: { gapMs: number; withinMs: number; poll?: Poll },
): Promise<number | string> {
  const deadline = performance.now() + options.withinMs;
  for (;;) {
    if (options.poll?.stopped === true) return 'stopped';
    const status = await chatStatus(url, model);
    const at = performance.now();
    if (status === want) return at;
    if (status !== meanwhile) return `${model} answered ${status} while waiting for ${want}`;
    if (at > deadline) return `${model} still answered ${status} after ${options.withinMs} ms (waiting for ${want})`;
    if (options.gapMs > 0) await sleep(options.gapMs);
  }
}

/**
 * The gateway's own durations (ms) of the topology rebuilds in its reload history (the last
 * 20 reloads, from /admin/status): what a write costs a replica, apart from hearing of it.
 */
export async function rebuildDurations(adminUrl: string): Promise<number[]> {
  const res = await fetch(`${adminUrl}/admin/status`, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  const status = (await res.json()) as {
    reloads?: Array<{ trigger: string; result: string; built: string[]; duration_ms: number }>;
  };
  return (status.reloads ?? [])
    .filter((r) => r.trigger === 'database' && r.result === 'applied' && r.built.includes('generation'))
    .map((r) => r.duration_ms);
}
