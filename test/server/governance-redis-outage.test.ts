import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
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
// enforcement resumes once Redis is back.

const KEY = 'sy-outage-test-key-0000';

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
        teams: { t: { rate_limit: { rpm: 1000 } } },
        keys: [{ id: 'k', team: 't', sha256: hashKey(KEY) }],
        governance: { store: 'redis', redis_url: `redis://127.0.0.1:${port}`, key_prefix: `outage-${rule}:`, on_store_error: rule },
      },
    );
  const ask = (gw: GatewayProcess) => postChat(gw.url, chatBody('m'), { authorization: `Bearer ${KEY}` });

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
    const metrics = await scrapeMetrics(open.url);
    assert.ok((metricValue(metrics, 'switchyard_governance_store_errors_total', { operation: 'reserve' }) ?? 0) >= 1, metrics);
    assert.ok(
      closed.logs().some((l) => l.msg === 'governance store error'),
      'the outage is logged',
    );

    redis = await startRedis(port);
    await waitUntil(async () => (await ask(closed)).status === 200, 'fail_closed serves again once Redis is back', 15_000);
    assert.equal((await ask(open)).status, 200);
  });
});
