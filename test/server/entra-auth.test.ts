import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';
import { createTestCa, issueTestCertificate } from '../support/test-ca.js';

// azure_openai on Microsoft Entra ID, end to end: a real gateway process, the real mock
// provider as Azure, and a local https authority (its CA and certificate made here with
// openssl, trusted by the gateway through NODE_EXTRA_CA_CERTS) that issues tokens for the
// client-credentials and the federated (workload identity) grants and checks their forms.

const resources = fileResources('switchyard-entra-');
const SECRET = 'entra-client-secret-value';
const SCOPE = 'https://cognitiveservices.azure.com/.default';
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

let dir: string;
let authority: Server;
let authorityUrl: string;
let mock: MockProvider;
let fallback: MockProvider;

interface TokenCall {
  readonly tenant: string;
  readonly form: Record<string, string>;
  readonly token: string | null;
}
const calls: TokenCall[] = [];
/**
 * Per tenant: the lifetime of the tokens it issues, or the status it refuses with, and how
 * long it holds every answer after its first (a slow authority, so a refresh is seen in flight).
 */
const tenants: Record<string, { expiresIn?: number; refuse?: number; holdRefreshMs?: number }> = {
  secret: { expiresIn: 3600 },
  short: { expiresIn: 3, holdRefreshMs: 400 },
  federated: { expiresIn: 3 },
  refused: { refuse: 401 },
};
let issued = 0;
/** Token requests the authority is holding (a refresh in flight). */
let holding = 0;

/** Answers as the v2.0 token endpoint does: a token for a well-formed grant, invalid_client otherwise. */
function issueToken(tenant: string, form: Record<string, string>): { status: number; body: object } {
  const t = tenants[tenant];
  if (t === undefined) return { status: 400, body: { error: 'invalid_tenant' } };
  if (t.refuse !== undefined) return { status: t.refuse, body: { error: 'invalid_client', error_description: 'refused by the test' } };
  const secretOk = form.client_secret === SECRET && form.client_assertion === undefined;
  const assertionOk =
    form.client_secret === undefined &&
    form.client_assertion_type === JWT_BEARER &&
    form.client_assertion === readFileSync(join(dir, 'federated-token'), 'utf8').trim();
  if (form.grant_type !== 'client_credentials' || form.scope !== SCOPE || form.client_id !== 'app-1' || !(secretOk || assertionOk))
    return { status: 401, body: { error: 'invalid_client' } };
  issued += 1;
  return { status: 200, body: { token_type: 'Bearer', expires_in: t.expiresIn, access_token: `entra-token-${tenant}-${issued}` } };
}

before(async () => {
  dir = resources.tempDir();
  createTestCa(dir, 'switchyard-entra-test-ca');
  issueTestCertificate(dir, 'server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  writeFileSync(join(dir, 'federated-token'), 'projected-sa-token-1\n');
  authority = createServer({ key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')) }, (req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(req.url ?? '');
      const form = Object.fromEntries(new URLSearchParams(text));
      const answer =
        req.method !== 'POST' || m === null || req.headers['content-type'] !== 'application/x-www-form-urlencoded'
          ? { status: 404, body: { error: 'not_found' } }
          : issueToken(m[1] as string, form);
      const tenant = m?.[1] ?? '';
      const reply = (): void => {
        calls.push({ tenant, form, token: (answer.body as { access_token?: string }).access_token ?? null });
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      };
      const hold = tenants[tenant]?.holdRefreshMs;
      if (hold === undefined || !calls.some((c) => c.tenant === tenant)) return reply();
      holding += 1;
      setTimeout(() => {
        holding -= 1;
        reply();
      }, hold);
    });
  });
  await new Promise<void>((r) => authority.listen(0, '127.0.0.1', r));
  authorityUrl = `https://127.0.0.1:${(authority.address() as AddressInfo).port}`;
  resources.addUpstream(() => new Promise<void>((r) => authority.close(() => r())));
  mock = await resources.startMock({ name: 'azure' });
  fallback = await resources.startMock({ name: 'fallback' });
});

function entraConfig(auth: Record<string, unknown>): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
    providers: {
      azure: {
        type: 'azure_openai',
        base_url: mock.origin,
        api_version: '2024-10-21',
        timeout_ms: 5000,
        expose_headers: ['x-mock-provider'],
        auth,
      },
      backup: { type: 'openai', base_url: fallback.baseUrl, timeout_ms: 5000, expose_headers: ['x-mock-provider'] },
    },
    routing: {
      routes: {
        gpt: { candidates: [{ provider: 'azure', deployment: 'gpt4o-deploy' }, { provider: 'backup' }] },
        'azure-only': { candidates: [{ provider: 'azure', deployment: 'gpt4o-deploy' }] },
      },
    },
  };
}

function startEntraGw(auth: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  return resources.startGw(entraConfig({ type: 'entra', client_id: 'app-1', authority_host: authorityUrl, ...auth }), {
    env: { NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem'), ENTRA_SECRET: SECRET, ...env },
  });
}

/** What the Azure mock received for the deployment, newest last. */
function azureCalls(): Array<{ headers: Record<string, unknown> }> {
  return mock.stats().recent.filter((r) => r.path.startsWith('/openai/deployments/gpt4o-deploy/chat/completions')) as never;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('azure_openai with Microsoft Entra ID', () => {
  it('client credentials: the token is fetched before serving and sent as a bearer, never api-key; the official openai client is served', async () => {
    const before = calls.length;
    const gw = await startEntraGw({ tenant_id: 'secret', client_secret: { env: 'ENTRA_SECRET' } });
    const grant = calls.slice(before).find((c) => c.tenant === 'secret');
    assert.ok(grant !== undefined, 'the authority was asked before the gateway listened');
    assert.deepEqual(
      { ...grant.form },
      { grant_type: 'client_credentials', client_id: 'app-1', scope: SCOPE, client_secret: SECRET },
      'the client-credentials form',
    );
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
    const { data, response } = await openai.chat.completions
      .create({ model: 'gpt', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(response.headers.get('x-mock-provider'), 'azure');
    assert.ok(data.choices[0]?.message.content);
    const sent = azureCalls().at(-1);
    assert.equal(sent?.headers.authorization, `Bearer ${grant.token}`);
    assert.equal(sent?.headers['api-key'], undefined);
    // Neither the secret nor the token is in a log line or the admin status.
    const status = await fetch(`${gw.adminUrl}/admin/status`).then((r) => r.text());
    assert.match(status, /entra:secret\/app-1 \(client_secret env:ENTRA_SECRET\)/);
    for (const text of [gw.output.join('\n'), status]) {
      assert.ok(!text.includes(SECRET), 'the client secret never shows');
      assert.ok(!text.includes(grant.token as string), 'the token never shows');
    }
    assert.ok(gw.logs().some((l) => l.msg === 'Entra ID token fetched' && l.provider === 'azure'));
  });

  it('a short-lived token is refreshed ahead of expiry by the timer, while requests keep succeeding without waiting', async () => {
    const before = calls.length;
    const gw = await startEntraGw({ tenant_id: 'short', client_secret: { env: 'ENTRA_SECRET' } });
    const seen = new Set<unknown>();
    // The authority holds each refresh a while: requests answered while it holds one were
    // served on the current token, not queued behind the refresh.
    let servedDuringRefresh = 0;
    const started = Date.now();
    while (Date.now() - started < 6_500) {
      const r = await postChat(gw.url, chatBody('azure-only'));
      assert.equal(r.status, 200, r.text);
      if (holding > 0) servedDuringRefresh += 1;
      seen.add(azureCalls().at(-1)?.headers.authorization);
      await sleep(100);
    }
    assert.ok(servedDuringRefresh >= 1, 'requests were answered while a refresh was in flight');
    const grants = calls.slice(before).filter((c) => c.tenant === 'short' && c.token !== null);
    // expires_in 3 s: refreshed at 80% of its life (2.4 s, answered 0.4 s later), twice in 6.5 s.
    assert.ok(grants.length >= 3, `the authority was asked again ahead of expiry (${grants.length} grants)`);
    assert.ok(seen.size >= 2, 'the upstream saw the refreshed token');
    for (const token of seen) assert.ok(grants.some((g) => `Bearer ${g.token}` === token));
  });

  it('an authority that is down or refuses: the candidate fails as credential_unavailable (a breaker failure), the next candidate serves, and the log says why', async () => {
    for (const auth of [
      { tenant_id: 'refused', client_secret: { env: 'ENTRA_SECRET' } },
      { tenant_id: 'secret', client_secret: { env: 'ENTRA_SECRET' }, authority_host: 'https://127.0.0.1:1' },
    ]) {
      const gw = await startEntraGw(auth);
      const r = await postChat(gw.url, chatBody('gpt'));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-mock-provider'), 'fallback');
      const line = await gw.waitForLog((l) => l.msg === 'request' && l.status === 200);
      assert.deepEqual(line.fallback, ['azure:credential_unavailable']);
      const only = await postChat(gw.url, chatBody('azure-only'));
      assert.equal(only.status, 503, only.text);
      assert.equal(only.json().error.code, 'credential_unavailable');
      const warned = await gw.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('Entra ID token unavailable'));
      assert.equal(warned.provider, 'azure');
      assert.match(String(warned.msg), auth.tenant_id === 'refused' ? /answered 401, invalid_client/ : /failed \(ECONNREFUSED\)/);
      assert.ok(!gw.output.join('\n').includes(SECRET));
      // Each such failure counts against the provider's breaker (5 by default), as an upstream failure does.
      for (let i = 0; i < 3; i += 1) await postChat(gw.url, chatBody('azure-only'));
      const opened = await gw.waitForLog((l) => l.msg === 'breaker' && l.state === 'open');
      assert.equal(opened.provider, 'azure');
      assert.equal(opened.cause, 'credential_unavailable');
    }
  });

  it('workload identity: the assertion is the AZURE_FEDERATED_TOKEN_FILE, re-read for every fetch, so a rotated file is used next', async () => {
    const file = join(dir, 'federated-token');
    const before = calls.length;
    const gw = await startEntraGw({ tenant_id: 'federated' }, { AZURE_FEDERATED_TOKEN_FILE: file });
    const first = calls.slice(before).find((c) => c.tenant === 'federated');
    assert.deepEqual(
      { ...first?.form },
      {
        grant_type: 'client_credentials',
        client_id: 'app-1',
        scope: SCOPE,
        client_assertion_type: JWT_BEARER,
        client_assertion: 'projected-sa-token-1',
      },
    );
    assert.equal((await postChat(gw.url, chatBody('azure-only'))).status, 200);
    assert.equal(azureCalls().at(-1)?.headers.authorization, `Bearer ${first?.token}`);
    // The kubelet rotates the projected token; the next refresh (at 2.4 s) must present the new one.
    writeFileSync(file, 'projected-sa-token-2\n');
    // A bound that only catches a hang: the refresh is due in 2.4 s.
    const deadline = Date.now() + 20_000;
    while (!calls.some((c) => c.form.client_assertion === 'projected-sa-token-2' && c.token !== null)) {
      assert.ok(Date.now() < deadline, 'the rotated assertion was presented');
      assert.equal((await postChat(gw.url, chatBody('azure-only'))).status, 200);
      await sleep(200);
    }
    const rotated = [...calls].reverse().find((c) => c.form.client_assertion === 'projected-sa-token-2' && c.token !== null);
    await sleep(100);
    assert.equal((await postChat(gw.url, chatBody('azure-only'))).status, 200);
    assert.equal(azureCalls().at(-1)?.headers.authorization, `Bearer ${rotated?.token}`);
    assert.ok(!gw.output.join('\n').includes('projected-sa-token'), 'the assertion never shows');
  });

  it('a reload re-reads the client_secret file: a corrected secret gets a token before the swap, and the provider serves again', async () => {
    const secretFile = join(dir, 'client-secret');
    writeFileSync(secretFile, 'not-the-secret\n');
    const gw = await startEntraGw({ tenant_id: 'secret', client_secret: { file: secretFile } });
    assert.equal((await postChat(gw.url, chatBody('gpt'))).headers.get('x-mock-provider'), 'fallback', 'refused: invalid_client');
    writeFileSync(secretFile, `${SECRET}\n`);
    const before = calls.length;
    const reload = await adminReload(gw.adminUrl as string);
    assert.equal(reload.body.result, 'applied', reload.text);
    const grant = calls.slice(before).find((c) => c.token !== null);
    assert.equal(grant?.form.client_secret, SECRET);
    const r = await postChat(gw.url, chatBody('gpt'));
    assert.equal(r.headers.get('x-mock-provider'), 'azure', 'served at once after the swap');
    assert.equal(azureCalls().at(-1)?.headers.authorization, `Bearer ${grant?.token}`);
    assert.ok(!gw.output.join('\n').includes(SECRET));
  });
});
