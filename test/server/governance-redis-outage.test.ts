import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics, waitUntil } from '../support/observe.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';

// Redis stopped mid-run under two gateway processes, one per on_store_error rule, on a
// private redis-server (never the shared one): fail_closed answers 503
// governance_unavailable, fail_open serves and counts the store errors; both log it, and
// enforcement resumes once Redis is back. Then Redis paused (CLIENT PAUSE) past the store's
// command timeout: the reserve it runs late must not hold the slot of the request that was
// refused or served without it.

const KEY = 'sy-outage-test-key-0000';
const TIGHT_KEY = 'sy-outage-test-key-tight';

describe('a Redis outage under real gateways', () => {
  let mock: MockProvider;
  let port: number;
  let redis: ChildProcess;
  let closed: GatewayProcess;
  let open: GatewayProcess;

  const configFor = (rule: 'fail_closed' | 'fail_open') =>
    baseConfig(
      { east: mock.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      {
        teams: { t: { rate_limit: { rpm: 1000 } }, tight: { rate_limit: { rpm: 2 } } },
        keys: [
          { id: 'k', team: 't', sha256: hashKey(KEY) },
          { id: 'tight', team: 'tight', sha256: hashKey(TIGHT_KEY) },
        ],
        governance: { store: 'redis', redis_url: `redis://127.0.0.1:${port}`, key_prefix: `outage-${rule}:`, on_store_error: rule },
      },
    );
  const ask = (gw: GatewayProcess, key = KEY) => postChat(gw.url, chatBody('m'), { authorization: `Bearer ${key}` });

  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    port = await freePort();
    redis = await startRedis(port);
    [closed, open] = await Promise.all([startGatewayProcess(configFor('fail_closed')), startGatewayProcess(configFor('fail_open'))]);
  });

  after(async () => {
    await Promise.all([closed?.stop(), open?.stop()]);
    if (redis !== undefined) await stopRedis(redis);
    await mock?.close();
  });

  it('both serve while Redis is up; while it is down fail_closed answers 503 and fail_open serves; both recover', async () => {
    assert.equal((await ask(closed)).status, 200);
    assert.equal((await ask(open)).status, 200);

    await stopRedis(redis);
    const refused = await ask(closed);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.json<{ error: { code: string } }>().error.code, 'governance_unavailable');
    assert.equal((await ask(open)).status, 200, 'fail_open serves without the store');
    await waitUntil(
      async () =>
        (metricValue(await scrapeMetrics(open.adminUrl as string), 'switchyard_governance_unbooked_total', { reason: 'fail_open' }) ?? 0) >=
        1,
      'the request served without the store is counted as unbooked',
    );
    const metrics = await scrapeMetrics(open.adminUrl as string);
    assert.ok((metricValue(metrics, 'switchyard_governance_store_errors_total', { operation: 'reserve' }) ?? 0) >= 1, metrics);
    assert.ok(
      closed.logs().some((l) => l.msg === 'governance store error'),
      'the outage is logged',
    );
    // Probes and dashboards see it: the gauge, /admin/status and /readyz's body (which stays 200).
    assert.equal(metricValue(await scrapeMetrics(closed.adminUrl as string), 'switchyard_governance_store_up', {}), 0);
    const down = (await (await fetch(`${closed.adminUrl}/admin/status`)).json()) as {
      governance: { store_up: boolean; last_store_error: { operation: string; message: string; at: string } | null };
    };
    assert.equal(down.governance.store_up, false);
    assert.ok(
      down.governance.last_store_error !== null && down.governance.last_store_error.operation !== '',
      JSON.stringify(down.governance),
    );
    const readyDown = await fetch(`${closed.url}/readyz`);
    assert.equal(readyDown.status, 200, 'still ready: every replica out would refuse connections instead');
    assert.deepEqual(await readyDown.json(), { status: 'ready', governance_store: 'down' });

    redis = await startRedis(port);
    await waitUntil(async () => (await ask(closed)).status === 200, 'fail_closed serves again once Redis is back', 15_000);
    assert.equal((await ask(open)).status, 200);
    assert.equal(metricValue(await scrapeMetrics(closed.adminUrl as string), 'switchyard_governance_store_up', {}), 1);
    assert.deepEqual(await (await fetch(`${closed.url}/readyz`)).json(), { status: 'ready', governance_store: 'up' });
  });

  for (const rule of ['fail_closed', 'fail_open'] as const) {
    it(`${rule}: a reserve Redis runs after the gateway's timeout (CLIENT PAUSE) holds no rpm slot afterwards`, async () => {
      const gw = rule === 'fail_closed' ? closed : open;
      const admin = new Redis(`redis://127.0.0.1:${port}`);
      try {
        assert.equal((await ask(gw, TIGHT_KEY)).status, 200, 'the first of rpm 2');
        // Scripts wait 2.5 s; the store gives up after its 1 s command timeout.
        await admin.call('CLIENT', 'PAUSE', '2500', 'WRITE');
        const during = await ask(gw, TIGHT_KEY);
        assert.equal(during.status, rule === 'fail_closed' ? 503 : 200, during.text);
        // A write sent now waits behind the paused reserve, which Redis runs first.
        await admin.set('outage-test:unpaused', '1', 'PX', 1000);
        const after = await ask(gw, TIGHT_KEY);
        assert.equal(after.status, 200, `the second slot is free: ${after.text}`);
        assert.equal((await ask(gw, TIGHT_KEY)).status, 429, 'and rpm 2 still holds');
      } finally {
        admin.disconnect();
      }
    });
  }
});
