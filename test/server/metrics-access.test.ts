import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// Invariant "tenant data stays on the admin side": the metrics name every team and key id
// and show their spend. With keys configured, the API listener, which every tenant reaches,
// serves /metrics only to a caller with the admin token, unless server.public_metrics opens
// it; the admin listener serves them as the admin API's rule says; /healthz and /readyz
// stay public; an open gateway has no tenants to keep apart.

const ADMIN_TOKEN = 'sy-admin-token-for-the-metrics-test';
const TENANT_KEY = 'sy-tenant-key-for-the-metrics-test';
const resources = fileResources('switchyard-metrics-access-');
let mock: MockProvider;

before(async () => {
  mock = await resources.startMock({ name: 'east' });
});

function keyed(server: Record<string, unknown> = {}, withKeys = true): Record<string, unknown> {
  return baseConfig(
    { east: mock.baseUrl },
    { m: { candidates: [{ provider: 'east' }] } },
    withKeys
      ? {
          server,
          teams: { acme: { budget: { usd_per_month: 10 } } },
          keys: [{ id: 'acme-app', team: 'acme', sha256: hashKey(TENANT_KEY) }],
        }
      : { server },
  );
}

function withAdminToken(server: Record<string, unknown> = {}): Record<string, unknown> {
  const file = join(resources.tempDir(), 'admin-token');
  writeFileSync(file, ADMIN_TOKEN);
  return { admin_token: { file }, ...server };
}

async function metricsAt(url: string, token?: string): Promise<{ status: number; text: string; authenticate: string | null }> {
  const res = await fetch(`${url}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text(), authenticate: res.headers.get('www-authenticate') };
}

/** One served request, so that the tenant's series exist. */
async function serveOne(gw: GatewayProcess): Promise<void> {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: TENANT_KEY, maxRetries: 0 });
  await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
}

describe('invariant "tenant data stays on the admin side": /metrics', () => {
  it("with keys, the API listener's /metrics refuses a caller without the admin token (a tenant's key is not enough) and serves one with it", async () => {
    const gw = await resources.startGw(keyed(withAdminToken()));
    await serveOne(gw);
    const anonymous = await metricsAt(gw.url);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.authenticate, 'Bearer');
    const error = JSON.parse(anonymous.text) as { error: { code: string; message: string } };
    assert.equal(error.error.code, 'unauthorized');
    assert.match(error.error.message, /server\.admin_token/);
    assert.doesNotMatch(anonymous.text, /acme/, 'no team name in the refusal');
    assert.equal((await metricsAt(gw.url, TENANT_KEY)).status, 401, "a tenant's API key does not open it");
    const admitted = await metricsAt(gw.url, ADMIN_TOKEN);
    assert.equal(admitted.status, 200);
    assert.match(admitted.text, /team="acme"/);
    const admin = await metricsAt(gw.adminUrl as string, ADMIN_TOKEN);
    assert.equal(admin.status, 200, 'the admin listener serves them with its token');
    assert.equal((await metricsAt(gw.adminUrl as string)).status, 401, 'and refuses them without it');
  });

  it('with keys and no admin token, only the admin listener (loopback) serves them', async () => {
    const gw = await resources.startGw(keyed());
    await serveOne(gw);
    assert.equal((await metricsAt(gw.url)).status, 401);
    const admin = await metricsAt(gw.adminUrl as string);
    assert.equal(admin.status, 200);
    assert.match(admin.text, /team="acme"/);
  });

  it('server.public_metrics: true opens the API listener to anyone', async () => {
    const gw = await resources.startGw(keyed({ public_metrics: true }));
    await serveOne(gw);
    const open = await metricsAt(gw.url);
    assert.equal(open.status, 200);
    assert.match(open.text, /team="acme"/);
  });

  it('an open gateway (no keys) serves them to anyone, and /healthz and /readyz stay public either way', async () => {
    const open = await resources.startGw(keyed({}, false));
    assert.equal((await metricsAt(open.url)).status, 200);
    const guarded = await resources.startGw(keyed(withAdminToken()));
    for (const path of ['/healthz', '/readyz']) assert.equal((await fetch(`${guarded.url}${path}`)).status, 200, path);
  });
});
