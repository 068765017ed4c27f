import { setTimeout as sleep } from 'node:timers/promises';

// The admin API's managed teams and keys from outside: a JSON call with a bearer token,
// and a wait for a key to start (or stop) authenticating at a gateway.

export interface V1Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, any>;
  readonly text: string;
}

export async function v1(
  adminUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; ifMatch?: string } = {},
): Promise<V1Reply> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch;
  const res = await fetch(`${adminUrl}/admin/v1/${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text === '' ? {} : (JSON.parse(text) as Record<string, any>) };
}

/** The status of GET /v1/models with this key (200 when it authenticates, 401 when not). */
export async function keyStatus(url: string, key: string): Promise<number> {
  const res = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

/** Polls until the key answers `status` at the gateway; the milliseconds it took. Throws after `withinMs`. */
export async function untilKeyStatus(url: string, key: string, status: number, withinMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const got = await keyStatus(url, key);
    const elapsed = performance.now() - started;
    if (got === status) return elapsed;
    if (elapsed > withinMs) throw new Error(`the key still answers ${got} after ${Math.round(elapsed)} ms (waited for ${status})`);
    await sleep(20);
  }
}
