import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';

// Upstream connection pools seen from the upstream's side: the mock counts the TCP
// connections it accepts, so a gateway that opens and closes a connection per request (a
// pool retired under a provider that still uses it) shows up as one connection per request.

let upstream: MockProvider;
let gw: GatewayProcess;

describe('upstream pools', () => {
  before(async () => {
    upstream = await startMockProvider({ name: 'shared' });
    // Two providers on one endpoint (one identity) with different pool settings.
    gw = await startGatewayProcess({
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
      log: { level: 'info', access: false },
      providers: {
        small: { type: 'openai', base_url: upstream.baseUrl, max_connections: 4 },
        large: { type: 'openai', base_url: upstream.baseUrl, max_connections: 8 },
      },
      routing: { routes: { m: { policy: 'round_robin', candidates: [{ provider: 'small' }, { provider: 'large' }] } } },
    });
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  async function serve(n: number): Promise<string[]> {
    const providers: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await postChat(gw.url, chatBody('m'));
      assert.equal(r.status, 200, r.text);
      providers.push(r.headers.get('x-switchyard-provider') ?? '');
    }
    return providers;
  }

  it('two providers with the same base_url but different pool settings each keep their own pool: sequential requests reuse two connections, across reloads too', async () => {
    const served = await serve(30);
    assert.deepEqual(new Set(served), new Set(['small', 'large']), 'both providers served');
    assert.equal(
      upstream.stats().connections,
      2,
      `one keep-alive connection per pool for 30 sequential requests (got ${upstream.stats().connections})`,
    );

    for (let i = 0; i < 3; i++) {
      const reload = await adminReload(gw.adminUrl!);
      assert.equal(reload.body.result, 'applied', reload.text);
      await serve(4);
    }
    assert.equal(
      upstream.stats().connections,
      2,
      `reloads that change nothing keep both pools and their connections (got ${upstream.stats().connections})`,
    );
  });
});
