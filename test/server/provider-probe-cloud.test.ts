import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';
import { createTestCa, issueTestCertificate } from '../support/test-ca.js';

// POST /admin/v1/providers/test for the cloud-authenticated types, through real gateway
// processes: bedrock against the mock's SigV4 check (a one-token Converse, signed), vertex
// with a token from the mock's own OAuth2 endpoint (then a one-token generateContent), and
// azure_openai on Entra ID with a local https authority (then the model list). Token
// endpoints are the caller's to name, so they are judged like the provider's host: one on an
// unlisted loopback address is refused before anything is sent to it.

const resources = fileResources('switchyard-probe-cloud-');
const ADMIN = 'admin-token-for-the-cloud-probe-tests';
const AKID = 'AKIDPROBETEST0000001';
const SECRET = 'aws-secret-for-the-cloud-probe-tests-0000';
const WRONG_SECRET = 'a-wrong-aws-secret-for-the-probe-tests-00';
const ENTRA_SECRET = 'entra-client-secret-for-the-probe';
const ENTRA_TOKEN = 'entra-token-issued-for-the-probe';
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const GEMINI = 'gemini-2.5-flash';
const PROJECT = 'switchyard-test';
const FIVE = ['auth', 'latency_ms', 'models', 'reachable', 'tls'];
const ENV = { ADMIN_TOKEN: ADMIN, BR_AKID: AKID, BR_SECRET: SECRET, WRONG_SECRET, ENTRA_SECRET, WRONG_ENTRA: 'not-the-secret' };

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });

let dir: string;
let br: MockProvider;
let vx: MockProvider;
/** A vertex mock on 127.0.0.2, which the narrow gateway does not list: its token endpoint must never be asked. */
let farTokens: MockProvider;
let azure: MockProvider;
let authority: Server;
let authorityUrl: string;
let grants = 0;
/** server.admin_probe_allow lists all of 127.0.0.0/8. */
let allowing: GatewayProcess;
/** server.admin_probe_allow lists 127.0.0.1 alone. */
let narrow: GatewayProcess;
/** server.admin_probe_allow left empty. */
let strict: GatewayProcess;

function keyFile(name: string, key: typeof privateKey): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      type: 'service_account',
      project_id: PROJECT,
      client_email: `switchyard@${PROJECT}.iam.gserviceaccount.com`,
      private_key: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    }),
  );
  return path;
}

before(async () => {
  dir = resources.tempDir();
  const gcpPublicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  createTestCa(dir, 'switchyard-probe-entra-ca');
  issueTestCertificate(dir, 'server', '127.0.0.2', 'subjectAltName=IP:127.0.0.2\nextendedKeyUsage=serverAuth\n');
  // The v2.0 token endpoint: a token for the right client secret, invalid_client otherwise.
  authority = createServer({ key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')) }, (req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      grants += 1;
      const form = Object.fromEntries(new URLSearchParams(text));
      const ok = req.url === '/tenant-1/oauth2/v2.0/token' && form.client_id === 'app-1' && form.client_secret === ENTRA_SECRET;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { token_type: 'Bearer', expires_in: 3600, access_token: ENTRA_TOKEN } : { error: 'invalid_client' }));
    });
  });
  await new Promise<void>((r) => authority.listen(0, '127.0.0.2', r));
  authorityUrl = `https://127.0.0.2:${(authority.address() as AddressInfo).port}`;
  resources.addUpstream(() => new Promise<void>((r) => authority.close(() => r())));
  [br, vx, farTokens, azure] = await Promise.all([
    resources.startMock({ name: 'bedrock-up', protocol: 'bedrock', awsAccessKeyId: AKID, awsSecretAccessKey: SECRET }),
    resources.startMock({ name: 'vertex-up', protocol: 'vertex', gcpPublicKeyPem }),
    resources.startMock({ name: 'far-tokens', protocol: 'vertex', gcpPublicKeyPem, host: '127.0.0.2' }),
    // The Entra token is the only bearer its model list takes.
    resources.startMock({ name: 'azure-up', apiKey: ENTRA_TOKEN }),
  ]);
  const server = { admin_token: { env: 'ADMIN_TOKEN' } };
  const routes = { m: { candidates: [{ provider: 'east' }] } };
  const env = { env: { ...ENV, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') } };
  [allowing, narrow, strict] = await Promise.all([
    resources.startGw(baseConfig({ east: azure.baseUrl }, routes, { server: { ...server, admin_probe_allow: ['127.0.0.0/8'] } }), env),
    resources.startGw(baseConfig({ east: azure.baseUrl }, routes, { server: { ...server, admin_probe_allow: ['127.0.0.1'] } }), env),
    resources.startGw(baseConfig({ east: azure.baseUrl }, routes, { server }), env),
  ]);
});

interface Reply {
  readonly status: number;
  readonly text: string;
  readonly body: Record<string, unknown> & { error?: { code: string; param: string | null; message: string } };
}

async function probe(gw: GatewayProcess, draft: unknown): Promise<Reply> {
  const res = await fetch(`${gw.adminUrl}/admin/v1/providers/test`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(draft),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Reply['body'] };
}

/** The answer's five keys, and no secret or token in it. */
function assertShape(reply: Reply): void {
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(
    Object.keys(reply.body)
      .filter((k) => k !== 'error')
      .sort(),
    FIVE,
  );
  for (const secret of [SECRET, WRONG_SECRET, ENTRA_SECRET, ENTRA_TOKEN, 'PRIVATE KEY'])
    assert.ok(!reply.text.includes(secret), 'no secret in the answer');
}

const bedrock = (aws: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'bedrock',
  region: 'us-east-1',
  base_url: br.origin,
  aws,
  models: { claude: MODEL },
  ...extra,
});
const KEYS = { access_key_id: { env: 'BR_AKID' }, secret_access_key: { env: 'BR_SECRET' } };

describe('the probe of a bedrock draft', () => {
  it('sends one signed one-token Converse to the first model and shows it accepted', async () => {
    const before = br.stats().total;
    const reply = await probe(allowing, bedrock(KEYS));
    assertShape(reply);
    assert.equal(reply.body.reachable, true);
    assert.equal(reply.body.auth, 'accepted', reply.text);
    assert.deepEqual(reply.body.models, [MODEL]);
    assert.equal(br.stats().total, before + 1, 'one request, no more');
    const seen = br.stats().recent.at(-1);
    assert.equal(seen?.path, `/model/${encodeURIComponent(MODEL)}/converse`);
    assert.match(String(seen?.headers.authorization), new RegExp(`^AWS4-HMAC-SHA256 Credential=${AKID}/\\d{8}/us-east-1/bedrock/`));
    assert.deepEqual(JSON.parse(seen?.body ?? ''), {
      messages: [{ role: 'user', content: [{ text: 'hi' }] }],
      inferenceConfig: { maxTokens: 1 },
    });
  });

  it('reports a wrong secret (a bad signature) as refused', async () => {
    const reply = await probe(allowing, bedrock({ ...KEYS, secret_access_key: { env: 'WRONG_SECRET' } }));
    assertShape(reply);
    assert.equal(reply.body.reachable, true);
    assert.equal(reply.body.auth, 'refused', reply.text);
    assert.deepEqual(reply.body.models, []);
  });

  it('needs a model, refuses a web identity, and refuses an unlisted loopback host, all before sending', async () => {
    const before = br.stats().total;
    const noModel = await probe(allowing, bedrock(KEYS, { models: undefined }));
    assert.equal(noModel.status, 400, noModel.text);
    assert.equal(noModel.body.error?.code, 'invalid_request');
    assert.equal(noModel.body.error?.param, 'models');
    assert.match(noModel.body.error?.message ?? '', /needs a model in models/);
    const irsa = await probe(allowing, bedrock({ web_identity: true, sts_endpoint: 'http://127.0.0.1:1' }));
    assert.equal(irsa.status, 400, irsa.text);
    assert.equal(irsa.body.error?.param, 'aws');
    const guarded = await probe(strict, bedrock(KEYS));
    assert.equal(guarded.status, 400, guarded.text);
    assert.equal(guarded.body.error?.code, 'probe_address_not_allowed');
    assert.equal(br.stats().total, before, 'nothing sent');
  });
});

const vertex = (gcp: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'vertex',
  project: PROJECT,
  location: 'us-east5',
  base_url: vx.origin,
  gcp,
  models: { flash: GEMINI },
  ...extra,
});

describe('the probe of a vertex draft', () => {
  it('fetches a token from the service account’s endpoint, then sends one one-token generateContent', async () => {
    const sa = keyFile('sa', privateKey);
    const before = vx.stats().total;
    const reply = await probe(allowing, vertex({ service_account: { file: sa }, token_url: `${vx.origin}/token` }));
    assertShape(reply);
    assert.equal(reply.body.auth, 'accepted', reply.text);
    assert.deepEqual(reply.body.models, [GEMINI]);
    const sent = vx.stats().recent.slice(-2);
    assert.equal(vx.stats().total, before + 2, 'the grant and the call');
    assert.equal(sent[0]?.path, '/token');
    assert.equal(sent[1]?.path, `/v1/projects/${PROJECT}/locations/us-east5/publishers/google/models/${GEMINI}:generateContent`);
    assert.match(String(sent[1]?.headers.authorization), /^Bearer /);
    assert.deepEqual(JSON.parse(sent[1]?.body ?? '').generationConfig, { maxOutputTokens: 1 });
  });

  it('reports a key the token endpoint refuses as auth refused, saying no token could be had', async () => {
    const wrong = keyFile('wrong', other.privateKey);
    const before = vx.stats().total;
    const reply = await probe(allowing, vertex({ service_account: { file: wrong }, token_url: `${vx.origin}/token` }));
    assertShape(reply);
    assert.equal(reply.body.auth, 'refused', reply.text);
    assert.match(String(reply.body.error), /no Google Cloud token could be had: the token endpoint answered 400, invalid_grant/);
    assert.equal(vx.stats().total, before + 1, 'the grant only: no call without a token');
  });

  it('answers within the probe’s bound when the token endpoint never answers', async () => {
    const held: Array<() => void> = [];
    const silent = createHttpServer((_req, res) => held.push(() => res.destroy()));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const sa = keyFile('sa', privateKey);
      const before = vx.stats().total;
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/token`;
      const reply = await probe(
        allowing,
        vertex({ service_account: { file: sa }, token_url: url }, { timeout_ms: 300, connect_timeout_ms: 300 }),
      );
      assertShape(reply);
      assert.equal(reply.body.auth, null, reply.text);
      assert.equal(reply.body.reachable, false);
      assert.match(String(reply.body.error), /no Google Cloud token could be had: the probe took too long/);
      assert.equal(held.length, 1, 'the grant was sent once');
      assert.equal(vx.stats().total, before, 'no call without a token');
    } finally {
      for (const drop of held) drop();
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it('refuses a token endpoint on an unlisted loopback address before anything is sent to it', async () => {
    const sa = keyFile('sa', privateKey);
    const [before, farBefore] = [vx.stats().total, farTokens.stats().total];
    const reply = await probe(narrow, vertex({ service_account: { file: sa }, token_url: `${farTokens.origin}/token` }));
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error?.code, 'probe_address_not_allowed');
    assert.equal(reply.body.error?.param, 'gcp.token_url');
    assert.match(reply.body.error?.message ?? '', /127\.0\.0\.2/);
    assert.equal(farTokens.stats().total, farBefore, 'the token endpoint was not asked');
    assert.equal(vx.stats().total, before, 'nor the provider');
    const noModel = await probe(allowing, vertex({ service_account: { file: sa } }, { models: undefined }));
    assert.equal(noModel.body.error?.param, 'models', noModel.text);
    const metadata = await probe(allowing, vertex({ metadata_server: true }));
    assert.equal(metadata.body.error?.param, 'gcp', metadata.text);
  });
});

const entra = (auth: Record<string, unknown>) => ({
  type: 'azure_openai',
  base_url: azure.origin,
  api_version: '2024-10-21',
  auth: { type: 'entra', tenant_id: 'tenant-1', client_id: 'app-1', authority_host: authorityUrl, ...auth },
});

describe('the probe of an azure_openai draft on Entra ID', () => {
  it('fetches an Entra token, then lists the resource’s models with it as a bearer', async () => {
    const before = grants;
    const reply = await probe(allowing, entra({ client_secret: { env: 'ENTRA_SECRET' } }));
    assertShape(reply);
    assert.equal(reply.body.auth, 'accepted', reply.text);
    assert.ok((reply.body.models as string[]).includes('gpt-4o'), reply.text);
    assert.equal(grants, before + 1);
    const seen = azure.stats().recent.at(-1);
    assert.equal(seen?.path, '/openai/models');
    assert.equal(seen?.headers.authorization, `Bearer ${ENTRA_TOKEN}`);
    assert.equal(seen?.headers['api-key'], undefined);
  });

  it('reports a secret the authority refuses as auth refused, and sends nothing to the resource', async () => {
    const before = azure.stats().total;
    const reply = await probe(allowing, entra({ client_secret: { env: 'WRONG_ENTRA' } }));
    assertShape(reply);
    assert.equal(reply.body.auth, 'refused', reply.text);
    assert.match(String(reply.body.error), /no Entra ID token could be had: authority .* answered 401, invalid_client/);
    assert.equal(azure.stats().total, before);
  });

  it('refuses an authority on an unlisted loopback address before asking it', async () => {
    const [before, azureBefore] = [grants, azure.stats().total];
    const reply = await probe(narrow, entra({ client_secret: { env: 'ENTRA_SECRET' } }));
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error?.code, 'probe_address_not_allowed');
    assert.equal(reply.body.error?.param, 'auth.authority_host');
    assert.equal(grants, before, 'the authority was not asked');
    assert.equal(azure.stats().total, azureBefore);
    const unset = await probe(allowing, entra({ client_secret: { env: 'NOT_SET_ANYWHERE' } }));
    assert.equal(unset.status, 400, unset.text);
    assert.equal(unset.body.error?.param, 'auth.client_secret');
  });
});
