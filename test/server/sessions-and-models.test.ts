import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminReload, adminStatus } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { waitUntil } from '../support/observe.js';

// Two views a client or operator polls, seen from outside a real gateway process:
// `sessions` in /admin/status (live bindings only) and `created` in GET /v1/models (stable
// across reloads while a model stays routed).

let east: MockProvider;
const cleanup: Array<() => Promise<unknown>> = [];

before(async () => {
  east = await startMockProvider({ name: 'east' });
});

after(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
  await east?.close();
});

async function startGw(config: Record<string, unknown>): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(config);
  cleanup.push(() => gw.stop());
  return gw;
}

async function sessions(gw: GatewayProcess): Promise<number> {
  return ((await adminStatus(gw.adminUrl!)).body as unknown as { sessions: number }).sessions;
}

async function created(gw: GatewayProcess): Promise<{ list: Record<string, number>; one: number }> {
  const list = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string; created: number }> };
  const one = (await (await fetch(`${gw.url}/v1/models/m`)).json()) as { created: number };
  return { list: Object.fromEntries(list.data.map((d) => [d.id, d.created])), one: one.created };
}

/** Waits until the wall clock is in a later second than `seconds`, so a rebuilt time would differ. */
async function nextSecond(seconds: number): Promise<void> {
  await waitUntil(() => Math.floor(Date.now() / 1000) > seconds, 'the next second', 5_000);
}

describe('/admin/status sessions', () => {
  it('counts live bindings: bindings whose TTL has passed are not counted, though nobody looked them up', async () => {
    const routing = {
      routes: { m: { candidates: [{ provider: 'east' }] } },
      session_affinity: { header: 'x-session-id', ttl_s: 1, max_entries: 100 },
    };
    const gw = await startGw(baseConfig({ east: east.baseUrl }, {}, { routing }));
    for (const s of ['s1', 's2', 's3']) assert.equal((await postChat(gw.url, chatBody('m'), { 'x-session-id': s })).status, 200);
    assert.equal(await sessions(gw), 3);
    // ttl_s is 1: bounded wait for expiry (the bound only catches a count that never drops).
    await waitUntil(async () => (await sessions(gw)) === 0, 'the expired bindings are no longer counted', 10_000);
  });
});

describe('GET /v1/models created', () => {
  it('stays the same across reloads while a model stays routed; a model routed again later gets a new time', async () => {
    const routes = (models: string[]): Record<string, unknown> =>
      Object.fromEntries(models.map((m) => [m, { candidates: [{ provider: 'east' }] }]));
    const gw = await startGw(baseConfig({ east: east.baseUrl }, routes(['m', 'n'])));
    const first = await created(gw);
    assert.equal(first.one, first.list.m, 'GET /v1/models/m agrees with the list');

    await nextSecond(Math.max(first.list.m!, first.list.n!));
    gw.writeConfig(baseConfig({ east: east.baseUrl }, routes(['m'])));
    assert.equal((await adminReload(gw.adminUrl!)).body.result, 'applied');
    const second = await created(gw);
    assert.deepEqual(second, { list: { m: first.list.m }, one: first.list.m }, 'm keeps its first-seen time');

    await nextSecond(first.list.n!);
    gw.writeConfig(baseConfig({ east: east.baseUrl }, routes(['m', 'n'])));
    assert.equal((await adminReload(gw.adminUrl!)).body.result, 'applied');
    const third = await created(gw);
    assert.equal(third.list.m, first.list.m);
    assert.ok(third.list.n! > first.list.n!, 'n was withdrawn and routed again: its time is new');
  });
});
