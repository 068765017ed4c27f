import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';

// The cache shared by a fleet: two gateway processes on one Redis (a private redis-server,
// since one test pauses it), a miss on one answered as a hit by the other, entries dropped
// fleet-wide by the admin API, and a paused Redis that makes misses, never errors or waits.

const ADMIN = 'cache-fleet-admin-token';
const KEY_A = 'sk-fleet-team-a-0001';
const KEY_B = 'sk-fleet-team-b-0001';
const TEAM_A_TOKEN = 'cache-fleet-team-a-token';

let redis: ChildProcess;
let port: number;
let mock: MockProvider;
let one: GatewayProcess;
let two: GatewayProcess;

function config(): Record<string, unknown> {
  return {
    server: {
      listen: '127.0.0.1:0',
      admin_listen: '127.0.0.1:0',
      drain_timeout_ms: 2000,
      admin_token: { env: 'ADMIN_TOKEN' },
      admin_tokens: [{ id: 'team-a-ops', token: { env: 'TEAM_A_TOKEN' }, role: 'team:a' }],
    },
    providers: { oai: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000 } },
    routing: {
      routes: {
        cached: { cache: { mode: 'exact', ttl_s: 600 }, candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
        other: { cache: { mode: 'exact', ttl_s: 600 }, candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
      },
    },
    teams: { a: {}, b: {} },
    keys: [
      { id: 'a-1', team: 'a', sha256: hashKey(KEY_A) },
      { id: 'b-1', team: 'b', sha256: hashKey(KEY_B) },
    ],
    // The cache's own Redis (governance counts in memory): pausing it pauses nothing but the cache.
    cache: { store: 'redis', redis_url: `redis://127.0.0.1:${port}`, lookup_timeout_ms: 50 },
  };
}

before(async () => {
  port = await freePort();
  redis = await startRedis(port);
  mock = await startMockProvider({ name: 'fleet', port: 0 });
  const env = { ADMIN_TOKEN: ADMIN, TEAM_A_TOKEN };
  [one, two] = await Promise.all([startGatewayProcess(config(), { env }), startGatewayProcess(config(), { env })]);
});

after(async () => {
  await Promise.all([one?.stop(), two?.stop()]);
  await mock?.close();
  if (redis !== undefined) await stopRedis(redis);
});

let serial = 0;
function fresh(label: string): string {
  serial += 1;
  return `${label} ${serial} ${process.pid}`;
}

async function ask(gw: GatewayProcess, key: string, model: string, content: string): Promise<Response> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  });
  await res.text();
  return res;
}

/** The cache header of `gw`'s answer, asked until it is `want` (a replica's write reaches Redis a moment after its answer): bounded. */
async function askUntil(gw: GatewayProcess, key: string, model: string, content: string, want: string): Promise<string | null> {
  let got: string | null = null;
  for (let i = 0; i < 20; i++) {
    got = (await ask(gw, key, model, content)).headers.get('x-switchyard-cache');
    if (got === want) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  return got;
}

async function drop(query: string, token: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${one.adminUrl}/admin/v1/cache${query}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('a fleet on one Redis', { timeout: 120_000 }, () => {
  it('a miss on one replica is a hit on the other, through the official client', async () => {
    const content = fresh('shared');
    const calls = mock.stats().total;
    const first = await new OpenAI({ baseURL: `${one.url}/v1`, apiKey: KEY_A, maxRetries: 0 }).chat.completions
      .create({ model: 'cached', messages: [{ role: 'user', content }] })
      .withResponse();
    assert.equal(first.response.headers.get('x-switchyard-cache'), 'miss');
    assert.equal(await askUntil(two, KEY_A, 'cached', content, 'hit'), 'hit');
    const second = await new OpenAI({ baseURL: `${two.url}/v1`, apiKey: KEY_A, maxRetries: 0 }).chat.completions
      .create({ model: 'cached', messages: [{ role: 'user', content }] })
      .withResponse();
    assert.equal(second.response.headers.get('x-switchyard-cache'), 'hit');
    assert.equal(second.data.choices[0]?.message.content, first.data.choices[0]?.message.content);
    assert.equal(mock.stats().total - calls, 1, 'one upstream call for the fleet');
  });

  it('DELETE /admin/v1/cache drops entries fleet-wide, by route and by team; a team token drops its own team’s only', async () => {
    const a = fresh('drop a');
    const b = fresh('drop b');
    await ask(one, KEY_A, 'cached', a);
    await ask(one, KEY_A, 'other', a);
    await ask(one, KEY_B, 'cached', b);
    assert.equal(await askUntil(two, KEY_A, 'cached', a, 'hit'), 'hit');
    assert.equal(await askUntil(two, KEY_B, 'cached', b, 'hit'), 'hit');
    assert.equal((await drop('?team=b', TEAM_A_TOKEN)).status, 403, "a team token may not drop another team's entries");
    const byRoute = await drop('?route=other&team=a', ADMIN);
    assert.equal(byRoute.status, 200);
    assert.ok((byRoute.body.deleted as number) >= 1, JSON.stringify(byRoute.body));
    assert.equal((await ask(two, KEY_A, 'other', a)).headers.get('x-switchyard-cache'), 'miss', 'dropped on the other replica too');
    assert.equal((await ask(two, KEY_A, 'cached', a)).headers.get('x-switchyard-cache'), 'hit', 'another route kept');
    const own = await drop('', TEAM_A_TOKEN);
    assert.equal(own.status, 200);
    assert.ok((own.body.deleted as number) >= 1);
    assert.equal((await ask(two, KEY_A, 'cached', a)).headers.get('x-switchyard-cache'), 'miss');
    assert.equal((await ask(two, KEY_B, 'cached', b)).headers.get('x-switchyard-cache'), 'hit', "team b's entries kept");
    const bad = await fetch(`${one.adminUrl}/admin/v1/cache?model=x`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(bad.status, 400);
  });

  it('a paused Redis makes misses within the lookup timeout, never errors; the cache counts them', async () => {
    const content = fresh('paused');
    await ask(one, KEY_A, 'cached', content);
    assert.equal(await askUntil(one, KEY_A, 'cached', content, 'hit'), 'hit');
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
    await client.connect();
    try {
      await client.call('CLIENT', 'PAUSE', '1500', 'ALL');
      const res = await ask(one, KEY_A, 'cached', content);
      assert.equal(res.status, 200, 'answered by the upstream');
      assert.equal(res.headers.get('x-switchyard-cache'), 'miss');
    } finally {
      await client.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      client.disconnect();
    }
    const metrics = await (await fetch(`${one.adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    assert.match(metrics, /switchyard_cache_errors_total\{operation="lookup"\} [1-9]/);
    assert.match(metrics, /switchyard_cache_lookups_total\{route="cached",result="error"\} [1-9]/);
  });
});
