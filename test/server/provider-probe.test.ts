import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// POST /admin/v1/providers/test through real gateway processes and real mock providers: a
// draft provider is probed with one call (the model list, an MCP initialize, an agent card),
// its key accepted or refused; its host is judged by the address it resolves to, and a
// link-local, metadata, or unlisted loopback address is refused before anything is sent.

const resources = fileResources('switchyard-probe-');
const ADMIN = 'admin-token-for-the-probe-tests';
const READER = 'read-only-token-for-the-probe-tests';
const RIGHT = 'sk-the-right-key-for-the-probe-0000';
const WRONG = 'sk-a-wrong-key-for-the-probe-00000';
const ENV = { ADMIN_TOKEN: ADMIN, READER_TOKEN: READER, RIGHT_KEY: RIGHT, WRONG_KEY: WRONG };
const FIVE = ['auth', 'latency_ms', 'models', 'reachable', 'tls'];

let models: MockProvider;
let tools: MockProvider;
let agents: MockProvider;
/** Loopback (v4 and v6) listed, and all of link-local: a metadata address must still be refused. */
let allowing: GatewayProcess;
/** server.admin_probe_allow left empty. */
let strict: GatewayProcess;

before(async () => {
  [models, tools, agents] = await Promise.all([
    resources.startMock({ name: 'models', apiKey: RIGHT }),
    resources.startMock({ name: 'tools', protocol: 'mcp', apiKey: RIGHT, mcpResponse: 'json' }),
    resources.startMock({ name: 'agents', protocol: 'a2a' }),
  ]);
  const server = {
    admin_token: { env: 'ADMIN_TOKEN' },
    admin_tokens: [{ id: 'reader', token: { env: 'READER_TOKEN' }, role: 'read_only' }],
  };
  const routes = { m: { candidates: [{ provider: 'east' }] } };
  [allowing, strict] = await Promise.all([
    resources.startGw(
      baseConfig({ east: models.baseUrl }, routes, { server: { ...server, admin_probe_allow: ['127.0.0.0/8', '::1', '169.254.0.0/16'] } }),
      { env: ENV },
    ),
    resources.startGw(baseConfig({ east: models.baseUrl }, routes, { server }), { env: ENV }),
  ]);
});

interface Reply {
  readonly status: number;
  readonly text: string;
  readonly body: Record<string, unknown> & {
    error?: { code: string; param: string | null; message: string; errors?: Array<{ path: string }> };
  };
}

async function probe(gw: GatewayProcess, draft: unknown, token = ADMIN, method = 'POST'): Promise<Reply> {
  const res = await fetch(`${gw.adminUrl}/admin/v1/providers/test`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(method === 'GET' ? {} : { body: JSON.stringify(draft) }),
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Reply['body'] };
}

/** The answer's five keys, always; `error` only when something failed. */
function assertShape(reply: Reply): void {
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(
    Object.keys(reply.body)
      .filter((k) => k !== 'error')
      .sort(),
    FIVE,
  );
  assert.equal(typeof reply.body.latency_ms, 'number');
  assert.ok(!reply.text.includes(RIGHT) && !reply.text.includes(WRONG), 'no secret in the answer');
}

describe('POST /admin/v1/providers/test', () => {
  it('lists an OpenAI-compatible provider’s models with the key accepted, sending its key as a bearer', async () => {
    const before = models.stats().requests['GET /v1/models'] ?? 0;
    const reply = await probe(allowing, { id: 'draft', type: 'openai', base_url: models.baseUrl, api_key: { env: 'RIGHT_KEY' } });
    assertShape(reply);
    assert.equal(reply.body.reachable, true);
    assert.equal(reply.body.tls, 'none');
    assert.equal(reply.body.auth, 'accepted');
    assert.deepEqual(reply.body.models, ['gpt-4o-mini', 'gpt-4o', 'llama-3-8b']);
    assert.equal(reply.body.error, undefined);
    assert.equal(models.stats().requests['GET /v1/models'], before + 1, 'one request, no more');
    assert.equal(models.stats().recent.at(-1)?.headers.authorization, `Bearer ${RIGHT}`);
  });

  it('lists an Anthropic provider’s models with x-api-key and anthropic-version', async () => {
    const reply = await probe(allowing, { type: 'anthropic', base_url: models.baseUrl, api_key: { env: 'RIGHT_KEY' } });
    assertShape(reply);
    assert.equal(reply.body.auth, 'accepted');
    assert.ok((reply.body.models as string[]).includes('gpt-4o'));
    const seen = models.stats().recent.at(-1);
    assert.equal(seen?.path, '/v1/models');
    assert.equal(seen?.headers['x-api-key'], RIGHT);
    assert.equal(seen?.headers['anthropic-version'], '2023-06-01');
    assert.equal(seen?.headers.authorization, undefined);
  });

  it('reports a wrong key as refused, for each protocol, and never shows it', async () => {
    for (const type of ['openai', 'anthropic'] as const) {
      const reply = await probe(allowing, { type, base_url: models.baseUrl, api_key: { env: 'WRONG_KEY' } });
      assertShape(reply);
      assert.equal(reply.body.reachable, true);
      assert.equal(reply.body.auth, 'refused', type);
      assert.deepEqual(reply.body.models, []);
    }
    const none = await probe(allowing, { type: 'openai', base_url: models.baseUrl });
    assert.equal(none.body.auth, 'refused', 'no key at all');
  });

  it('lists a Gemini provider’s models, and reads its 400 API_KEY_INVALID as a refused key', async () => {
    const right = await probe(allowing, { type: 'gemini', base_url: models.origin, api_key: { env: 'RIGHT_KEY' } });
    assertShape(right);
    assert.equal(right.body.auth, 'accepted');
    assert.deepEqual(right.body.models, ['gpt-4o-mini', 'gpt-4o', 'llama-3-8b']);
    assert.equal(models.stats().recent.at(-1)?.headers['x-goog-api-key'], RIGHT);
    const wrong = await probe(allowing, { type: 'gemini', base_url: models.origin, api_key: { env: 'WRONG_KEY' } });
    assertShape(wrong);
    assert.equal(wrong.body.auth, 'refused');
  });

  it('initializes an MCP server, its key accepted or refused', async () => {
    const url = `${tools.origin}/mcp`;
    const right = await probe(allowing, { type: 'mcp', base_url: url, api_key: { env: 'RIGHT_KEY' } });
    assertShape(right);
    assert.equal(right.body.reachable, true);
    assert.equal(right.body.auth, 'accepted');
    assert.deepEqual(right.body.models, []);
    const wrong = await probe(allowing, { type: 'mcp', base_url: url, api_key: { env: 'WRONG_KEY' } });
    assert.equal(wrong.body.auth, 'refused');
  });

  it('reads an A2A agent’s card', async () => {
    const before = agents.a2aStats();
    const reply = await probe(allowing, { type: 'a2a', base_url: `${agents.origin}/instant` });
    assertShape(reply);
    assert.equal(reply.body.auth, 'accepted');
    assert.notDeepEqual(agents.a2aStats(), before, 'the card was read');
  });

  it('reports a closed port on an allowed loopback address as unreachable, still with all five keys', async () => {
    const port = await closedPort();
    const reply = await probe(allowing, { type: 'openai', base_url: `http://127.0.0.1:${port}/v1`, api_key: { env: 'RIGHT_KEY' } });
    assertShape(reply);
    assert.equal(reply.body.reachable, false);
    assert.equal(reply.body.auth, null);
    assert.deepEqual(reply.body.models, []);
    assert.match(String(reply.body.error), /ECONNREFUSED/);
  });

  it('refuses a metadata address always, even with all of link-local listed, in every spelling', async () => {
    for (const base of [
      'http://169.254.169.254/latest',
      'http://[::ffff:169.254.169.254]/v1',
      'http://[fd00:ec2::254]/v1',
      'http://100.100.100.200/v1',
    ]) {
      const reply = await probe(allowing, { type: 'openai', base_url: base });
      assert.equal(reply.status, 400, `${base}: ${reply.text}`);
      assert.equal(reply.body.error?.code, 'probe_address_not_allowed');
      assert.equal(reply.body.error?.param, 'base_url');
      assert.match(reply.body.error?.message ?? '', /metadata address: never probed/);
    }
    const linkLocal = await probe(strict, { type: 'openai', base_url: 'http://[fe80::1]/v1' });
    assert.equal(linkLocal.body.error?.code, 'probe_address_not_allowed');
    assert.match(linkLocal.body.error?.message ?? '', /link-local/);
  });

  it('refuses loopback, by address or by a name that resolves to it, unless server.admin_probe_allow lists it; the mock receives nothing', async () => {
    const before = models.stats().total;
    const port = new URL(models.baseUrl).port;
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]']) {
      const reply = await probe(strict, { type: 'openai', base_url: `http://${host}:${port}/v1`, api_key: { env: 'RIGHT_KEY' } });
      assert.equal(reply.status, 400, `${host}: ${reply.text}`);
      assert.equal(reply.body.error?.code, 'probe_address_not_allowed');
      assert.match(reply.body.error?.message ?? '', /loopback address, which server.admin_probe_allow does not list/);
      if (host === 'localhost') assert.match(reply.body.error?.message ?? '', /the host localhost resolves to /);
    }
    const privateOne = await probe(strict, { type: 'openai', base_url: 'http://10.1.2.3/v1' });
    assert.match(privateOne.body.error?.message ?? '', /private address/);
    assert.equal(models.stats().total, before, 'nothing was sent');
  });

  it('refuses a bad body with 400 naming each field’s path, a literal secret without echoing it', async () => {
    const reply = await probe(allowing, {
      id: 'no spaces',
      type: 'openai',
      base_url: 'ftp://example.com/v1',
      api_key: 'sk-a-literal-key-in-the-body',
      timeout_ms: -1,
      aws: {},
      bogus: true,
    });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error?.code, 'invalid_request');
    const paths = (reply.body.error?.errors ?? []).map((e) => e.path).sort();
    assert.deepEqual(paths, ['api_key', 'aws', 'base_url', 'bogus', 'id', 'timeout_ms']);
    assert.match(reply.text, /a literal secret is not allowed here/);
    assert.match(reply.text, /it is a key of type bedrock/);
    assert.ok(!reply.text.includes('sk-a-literal-key-in-the-body'));

    const noType = await probe(allowing, { base_url: models.baseUrl });
    assert.equal(noType.status, 400);
    assert.deepEqual(
      noType.body.error?.errors?.map((e) => e.path),
      ['type'],
    );
    const tlsOnHttp = await probe(allowing, { type: 'openai', base_url: models.baseUrl, tls: { server_name: 'models.test' } });
    assert.deepEqual(
      tlsOnHttp.body.error?.errors?.map((e) => e.path),
      ['tls'],
    );
    const unset = await probe(allowing, { type: 'openai', base_url: models.baseUrl, api_key: { env: 'NOT_SET_ANYWHERE' } });
    assert.equal(unset.status, 400);
    assert.equal(unset.body.error?.param, 'api_key');
    assert.match(unset.body.error?.message ?? '', /NOT_SET_ANYWHERE is not set/);
  });

  it('answers a bedrock draft without a model, which its probe needs, with 400 naming models', async () => {
    const reply = await probe(allowing, {
      type: 'bedrock',
      region: 'us-east-1',
      aws: { access_key_id: { env: 'RIGHT_KEY' }, secret_access_key: { env: 'RIGHT_KEY' } },
    });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error?.code, 'invalid_request');
    assert.equal(reply.body.error?.param, 'models');
  });

  it('logs every probe with its caller, type and host, a refusal with its code, and never a key', async () => {
    const port = new URL(models.baseUrl).port;
    await probe(strict, { type: 'anthropic', base_url: `http://127.0.0.1:${port}/v1`, api_key: { env: 'RIGHT_KEY' } });
    const refused = await strict.waitForLog((l) => l.msg === 'provider probe' && l.type === 'anthropic');
    assert.equal(refused.caller, 'admin');
    assert.equal(refused.host, `127.0.0.1:${port}`);
    assert.equal(refused.refused, 'probe_address_not_allowed');
    await probe(allowing, { type: 'anthropic', base_url: models.baseUrl, api_key: { env: 'RIGHT_KEY' }, metadata: { owner: 'x' } });
    const done = await allowing.waitForLog((l) => l.msg === 'provider probe' && l.type === 'anthropic' && l.auth === 'accepted');
    assert.equal(done.reachable, true);
    for (const gw of [allowing, strict])
      assert.ok(!gw.output.some((line) => line.includes(RIGHT) || line.includes(WRONG)), 'no key in a log line');
  });

  it('is for admin tokens only: a read-only one is 403 and nothing is sent; a GET reads a provider named "test", never probes', async () => {
    const before = models.stats().total;
    const reply = await probe(allowing, { type: 'openai', base_url: models.baseUrl }, READER);
    assert.equal(reply.status, 403, reply.text);
    assert.equal(reply.body.error?.code, 'forbidden');
    assert.equal(models.stats().total, before);
    const get = await probe(allowing, null, ADMIN, 'GET');
    // No database here: no provider is written at run time, so none is named "test".
    assert.equal(get.status, 404, get.text);
    assert.equal(models.stats().total, before);
  });
});

/** A loopback port nothing listens on: one just closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
