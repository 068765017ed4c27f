import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { sqliteDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody } from '../support/http.js';
import { v1 } from '../support/managed.js';
import { catalogsListed, mcpProvider } from '../support/mcp.js';
import { waitUntil } from '../support/observe.js';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';
import { fileResources } from '../support/resources.js';

// Callers who sign in with a token from a real OpenID provider (oidc-provider, client-credentials
// grant, JWT access tokens), through a real gateway process: the official openai, Anthropic and
// MCP clients are served with a token where they would send a key; the token's groups pick the
// team, its scopes narrow the models, its subject is billed in the ledger; every forged or
// misdirected token is a 401 that says why without repeating the token.

const resources = fileResources('switchyard-jwt-');
const ADMIN = 'admin-token-for-the-jwt-tests';
const PLATFORM_KEY = 'sy-jwt-test-platform-key-00000000';
const ENV = { ADMIN_TOKEN: ADMIN, PLATFORM_KEY };
const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello from a signed-in caller' }];

let op: LocalOidcProvider;
let east: MockProvider;
let tools: MockProvider;
let gw: GatewayProcess;

function gatewayConfig(databaseUrl: string, dir: string): Record<string, unknown> {
  const config = baseConfig(
    { east: east.baseUrl },
    { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] }, 'gpt-4o': { candidates: [{ provider: 'east' }] } },
    {
      server: { admin_token: { env: 'ADMIN_TOKEN' } },
      teams: { platform: {}, acme: {} },
      keys: [{ id: 'platform-key', team: 'platform', key: { env: 'PLATFORM_KEY' } }],
      database: { url: databaseUrl },
      audit: { file: join(dir, 'audit.jsonl') },
      auth: {
        jwt: {
          mode: 'strict',
          issuers: [
            {
              id: 'corp',
              issuer: op.issuer,
              audiences: ['switchyard'],
              jwks: { discovery: true },
              jwks_refetch_cooldown_s: 1,
              algorithms: ['RS256'],
              team: { claim: 'groups', map: { 'ai-platform': 'platform', 'acme-eng': 'acme', 'ghost-group': 'ghost' } },
              principal: { claim: 'sub' },
              scopes: {
                claim: 'scope',
                models: { 'llm:cheap': ['gpt-4o-mini'], 'llm:all': ['*'] },
                tools: { 'tools:all': ['*'], 'tools:weather': ['weather'] },
              },
            },
          ],
        },
      },
    },
  );
  (config.providers as Record<string, unknown>).tools = mcpProvider(tools);
  (config.routing as Record<string, unknown>).tools = {
    echo: { candidates: [{ provider: 'tools' }] },
    weather: { candidates: [{ provider: 'tools' }] },
  };
  return config;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A token with the scope that allows every model: with `scopes.models` set, a token naming none of its scopes may use no model. */
const tokenOf = (clientId: string): Promise<string> => op.token(clientId, { scope: 'llm:all' });

async function post(
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function ledgerRowsOf(key: string): Promise<Array<Record<string, any>>> {
  const page = await v1(gw.adminUrl as string, 'GET', `usage/requests?limit=1000&key=${encodeURIComponent(key)}`, { token: ADMIN });
  assert.equal(page.status, 200, page.text);
  return page.body.rows;
}

/**
 * A 401 for a bad token: the OpenAI error shape with code `unauthorized`, a `www-authenticate`
 * naming invalid_token, a message matching `reason`, and no part of the token in the answer.
 */
async function refusedAsInvalidToken(token: string, reason: RegExp): Promise<void> {
  const r = await post('/v1/chat/completions', bearer(token), chatBody('gpt-4o-mini'));
  assert.equal(r.status, 401, r.text);
  const www = r.headers.get('www-authenticate') ?? '';
  assert.match(www, /^Bearer\b/, www);
  assert.match(www, /error="invalid_token"/, www);
  const body = JSON.parse(r.text) as { error: { type: string; code: string; message: string } };
  assert.equal(body.error.type, 'authentication_error');
  assert.equal(body.error.code, 'unauthorized');
  assert.match(body.error.message, reason);
  assert.match(www, reason, 'the header describes the failure too');
  for (const part of token.split('.').filter((p) => p.length >= 16)) {
    assert.ok(!r.text.includes(part) && !www.includes(part), 'the answer repeats no part of the token');
  }
}

describe('callers signed in with an OpenID provider token', () => {
  before(async () => {
    op = await startOidcProvider({
      scopes: ['llm:cheap', 'llm:all', 'tools:all', 'tools:weather'],
      clients: [
        { id: 'alice', claims: { groups: ['ai-platform'] } },
        { id: 'carol', claims: { groups: ['acme-eng'] } },
        { id: 'mallory', claims: { groups: ['marketing'] } },
        { id: 'ghost', claims: { groups: ['ghost-group'] } },
        { id: 'split', claims: { groups: ['ai-platform', 'acme-eng'] } },
        { id: 'frugal', claims: { groups: ['ai-platform'] }, scope: 'llm:cheap' },
        { id: 'mcp-bot', claims: { groups: ['ai-platform'] } },
      ],
    });
    resources.addUpstream(() => op.stop());
    [east, tools] = await Promise.all([
      resources.startMock({ name: 'east' }),
      resources.startMock({ name: 'tools', protocol: 'mcp', mcpResponse: 'json' }),
    ]);
    const db = sqliteDatabase();
    resources.addGateway(() => db.drop());
    const dir = resources.tempDir();
    gw = await resources.startGw(gatewayConfig(db.url, dir), { dir, env: ENV });
    await catalogsListed(gw, 1);
  });

  it('the official openai client with a token as its API key is served, and the call is billed to its principal', async () => {
    const token = await tokenOf('alice');
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: token, maxRetries: 0, timeout: 10_000 });
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    assert.equal(data.choices[0]!.message.content, 'Hello from east.');
    const requestId = response.headers.get('x-request-id');

    let rows: Array<Record<string, any>> = [];
    await waitUntil(async () => {
      rows = await ledgerRowsOf('jwt:corp:alice');
      return rows.length >= 1;
    }, 'the call is in the ledger');
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(rows[0]!.key, 'jwt:corp:alice');
    assert.equal(rows[0]!.team, 'platform');
    assert.equal(rows[0]!.status, 200);
    if (requestId !== null) assert.equal(rows[0]!.request_id, requestId);

    const line = await gw.waitForLog((l) => l.principal === 'jwt:corp:alice' && l.status === 200);
    assert.equal(line.team, 'platform');

    // The token stays at the gateway: the provider saw the gateway's own credential, and no claim.
    const seen = east.stats().recent.at(-1)!;
    const forwarded = JSON.stringify(seen.headers) + seen.body;
    assert.ok(!forwarded.includes(token.split('.')[2]!), 'the token never goes upstream');
    assert.ok(!forwarded.includes('ai-platform'), 'no claim goes upstream');
  });

  it('the official Anthropic client is served with a token as authToken (Bearer) and as apiKey (x-api-key)', async () => {
    const token = await tokenOf('alice');
    for (const client of [
      new Anthropic({ baseURL: gw.url, authToken: token, apiKey: null, maxRetries: 0, timeout: 10_000 }),
      new Anthropic({ baseURL: gw.url, apiKey: token, maxRetries: 0, timeout: 10_000 }),
    ]) {
      const msg = await client.messages.create({ model: 'gpt-4o-mini', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(msg.type, 'message');
      assert.equal(msg.role, 'assistant');
      assert.ok(msg.content.length > 0);
    }
  });

  it('API keys keep working beside tokens, and in strict mode a call with neither is a 401', async () => {
    assert.equal((await post('/v1/chat/completions', bearer(PLATFORM_KEY), chatBody('gpt-4o-mini'))).status, 200);
    const bare = await post('/v1/chat/completions', {}, chatBody('gpt-4o-mini'));
    assert.equal(bare.status, 401, bare.text);
  });

  it("the token's group picks its team; a group that maps to no team, to a team that does not exist, or to two teams is refused with 403 forbidden", async () => {
    const carol = await tokenOf('carol');
    const served = await post('/v1/chat/completions', bearer(carol), chatBody('gpt-4o-mini'));
    assert.equal(served.status, 200, served.text);
    await waitUntil(async () => (await ledgerRowsOf('jwt:corp:carol')).length >= 1, "carol's call is in the ledger");
    assert.deepEqual(
      (await ledgerRowsOf('jwt:corp:carol')).map((r) => r.team),
      ['acme'],
    );

    for (const [client, why] of [
      ['mallory', 'a group the map does not name'],
      ['ghost', 'a group mapped to a team the config lacks'],
      ['split', 'groups that map to two teams: no one owner'],
    ] as const) {
      const refused = await post('/v1/chat/completions', bearer(await tokenOf(client)), chatBody('gpt-4o-mini'));
      assert.equal(refused.status, 403, `${why}: ${refused.text}`);
      assert.equal(JSON.parse(refused.text).error.code, 'forbidden', why);
    }
  });

  it("the token's scopes narrow the team's models: a model outside them is 403 model_not_allowed", async () => {
    const cheap = await op.token('frugal', { scope: 'llm:cheap' });
    assert.equal((await post('/v1/chat/completions', bearer(cheap), chatBody('gpt-4o-mini'))).status, 200);
    const refused = await post('/v1/chat/completions', bearer(cheap), chatBody('gpt-4o'));
    assert.equal(refused.status, 403, refused.text);
    assert.equal(JSON.parse(refused.text).error.code, 'model_not_allowed');
    const unscoped = await post('/v1/chat/completions', bearer(await op.token('alice')), chatBody('gpt-4o-mini'));
    assert.equal(unscoped.status, 403, `a token naming none of the configured scopes may use no model: ${unscoped.text}`);
    assert.equal(JSON.parse(unscoped.text).error.code, 'model_not_allowed');
  });

  it('refuses a token that is expired, not yet valid, for another audience or from an unknown issuer, each naming why', async () => {
    await refusedAsInvalidToken(await op.hostile.expired('alice'), /expired/i);
    await refusedAsInvalidToken(await op.hostile.notYetValid('alice'), /not (yet )?valid|nbf/i);
    await refusedAsInvalidToken(await op.hostile.wrongAudience('alice'), /audience|aud/i);
    await refusedAsInvalidToken(await op.hostile.wrongIssuer('alice'), /issuer|iss/i);
  });

  it('refuses alg none, HS256 keyed with the public key, an unknown kid and a jku header, each naming why', async () => {
    await refusedAsInvalidToken(await op.hostile.algNone('alice'), /alg|algorithm/i);
    await refusedAsInvalidToken(await op.hostile.hs256WithPublicKey('alice', 'pem'), /alg|algorithm/i);
    await refusedAsInvalidToken(await op.hostile.hs256WithPublicKey('alice', 'jwk'), /alg|algorithm/i);
    await refusedAsInvalidToken(await op.hostile.unknownKid('alice'), /unknown key|kid|signing key/i);
    await refusedAsInvalidToken(await op.hostile.jkuElsewhere('alice'), /jku/i);
    // The other two header members that would hand the verifier a key of the token's choosing.
    await refusedAsInvalidToken(await op.hostile.sign(op.hostile.claimsFor('alice'), { x5u: 'http://127.0.0.1:9/cert.pem' }), /x5u/i);
    await refusedAsInvalidToken(await op.hostile.sign(op.hostile.claimsFor('alice'), { jwk: op.signingKey.publicJwk }), /jwk/i);
  });

  it('a kid or alg chosen to break the challenge header cannot add a parameter to it, nor a header line', async () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const forged = 'x", error="insufficient_scope", scope="admin';
    const tokens = [
      await op.hostile.sign(op.hostile.claimsFor('alice'), { kid: forged }),
      await op.hostile.sign(op.hostile.claimsFor('alice'), { kid: 'x\r\nset-cookie: session=stolen' }),
      `${b64({ alg: forged, kid: op.signingKey.kid })}.${b64(op.hostile.claimsFor('alice'))}.AAAA`,
      `${b64({ alg: 'x\r\nset-cookie: session=stolen', kid: op.signingKey.kid })}.${b64(op.hostile.claimsFor('alice'))}.AAAA`,
    ];
    for (const token of tokens) {
      const r = await post('/v1/chat/completions', bearer(token), chatBody('gpt-4o-mini'));
      assert.equal(r.status, 401, r.text);
      const www = r.headers.get('www-authenticate') ?? '';
      // Two parameters, the description one quoted string with no quote of its own inside.
      assert.match(www, /^Bearer error="invalid_token", error_description="[^"\\\r\n]*"$/, www);
      assert.equal(r.headers.get('set-cookie'), null);
    }
    assert.equal(
      (await post('/v1/chat/completions', bearer(await tokenOf('alice')), chatBody('gpt-4o-mini'))).status,
      200,
      'still serving',
    );
  });

  it('a token past 8 KiB is a 401 naming its size; one past the header limit is a 431 (or 401), never served', async () => {
    await refusedAsInvalidToken(await op.hostile.oversized('alice', 10 * 1024), /KiB|large|size|long/i);
    const huge = await op.hostile.oversized('alice', 20 * 1024);
    const r = await post('/v1/chat/completions', bearer(huge), chatBody('gpt-4o-mini')).catch((err: unknown) => ({
      status: -1,
      headers: new Headers(),
      text: String(err),
    }));
    assert.ok(r.status === 431 || r.status === 401, `${r.status} ${r.text.slice(0, 200)}`);
    if (r.status === 401) assert.match(r.headers.get('www-authenticate') ?? '', /invalid_token/);
  });

  it('a refused token on /v1/messages gets the Anthropic error shape', async () => {
    const r = await post(
      '/v1/messages',
      { 'x-api-key': await op.hostile.expired('alice'), 'anthropic-version': '2023-06-01' },
      JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    );
    assert.equal(r.status, 401, r.text);
    const body = JSON.parse(r.text);
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'authentication_error');
    assert.match(body.error.message, /expired/i);
    assert.match(r.headers.get('www-authenticate') ?? '', /invalid_token/);
  });

  it('serves the protected resource metadata, and a 401 from /mcp points to it', async () => {
    const resource = `${gw.url}/mcp`;
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await fetch(`${gw.url}${path}`);
      assert.equal(res.status, 200, path);
      const doc = (await res.json()) as Record<string, unknown>;
      assert.equal(doc.resource, resource, path);
      assert.deepEqual(doc.authorization_servers, [op.issuer]);
      assert.deepEqual(doc.bearer_methods_supported, ['header']);
    }
    const res = await fetch(resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 401);
    const metadataAt = `resource_metadata="${gw.url}/.well-known/oauth-protected-resource/mcp"`;
    assert.ok(res.headers.get('www-authenticate')?.includes(metadataAt), res.headers.get('www-authenticate') ?? '');

    // A token the provider issued for another resource is not for this one.
    const elsewhere = await op.token('mcp-bot', { resource: 'http://127.0.0.1:9/mcp' });
    const refused = await fetch(resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...bearer(elsewhere) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(refused.status, 401);
    const www = refused.headers.get('www-authenticate') ?? '';
    assert.ok(www.includes(metadataAt), www);
    assert.match(www, /error="invalid_token"/);
    assert.match(www, /audience/);
  });

  it('the official MCP client discovers the provider from the 401, gets a token by client credentials and calls a tool', async () => {
    const authProvider = new ClientCredentialsProvider({
      clientId: 'mcp-bot',
      clientSecret: op.secretOf('mcp-bot'),
      expectedIssuer: op.issuer,
      // The SDK's client-credentials request asks for this scope (not the metadata's scopes_supported).
      scope: 'llm:all tools:all',
    });
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url), { authProvider });
    const client = new Client({ name: 'jwt-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'signed in' } });
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.match(JSON.stringify(result.content), /signed in/);
    } finally {
      await client.close();
    }
    const token = authProvider.tokens()?.access_token;
    assert.ok(token !== undefined, 'the client holds the token it was issued');
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { aud: string; sub: string };
    assert.equal(claims.aud, `${gw.url}/mcp`, 'issued for the resource the gateway named');
    assert.equal(claims.sub, 'mcp-bot');
    const upstream = tools.mcpStats();
    assert.ok(
      upstream.authorization_seen.every((v) => !v.includes(token.split('.')[2]!)),
      'the MCP server never saw the token',
    );
    await waitUntil(
      async () => (await ledgerRowsOf('jwt:corp:mcp-bot')).some((r) => r.endpoint === '/mcp'),
      'the tool call is billed to its principal',
    );
  });

  it('after all the calls above, served and refused, no log line of the gateway holds a token', () => {
    const text = gw.output.join('\n');
    assert.ok(!/eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\./.test(text), 'no JWT in the logs');
  });

  it("the token's scopes narrow the tools: a tool outside them is not listed and its call is refused", async () => {
    const listWith = async (token: string): Promise<{ client: Client; names: string[] }> => {
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url), { requestInit: { headers: bearer(token) } });
      const client = new Client({ name: 'jwt-scope-test', version: '1.0.0' });
      await client.connect(transport);
      return { client, names: (await client.listTools()).tools.map((t) => t.name) };
    };
    // The same principal with every tool first: what it is shown must not carry over to a narrower token.
    const wide = await listWith(await op.token('mcp-bot', { scope: 'llm:all tools:all' }));
    await wide.client.close();
    assert.ok(wide.names.includes('echo') && wide.names.includes('weather'), JSON.stringify(wide.names));
    const { client, names: listed } = await listWith(await op.token('mcp-bot', { scope: 'llm:all tools:weather' }));
    try {
      assert.ok(listed.includes('weather'), JSON.stringify(listed));
      assert.ok(!listed.includes('echo'), JSON.stringify(listed));
      assert.notEqual((await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } })).isError, true);
      const refused = await client.callTool({ name: 'echo', arguments: { text: 'not for you' } }).then(
        (r) => JSON.stringify(r),
        (err: unknown) => String(err),
      );
      assert.doesNotMatch(refused, /not for you/, 'the tool did not run');
      assert.match(refused, /may not use tool "echo"/, refused);
    } finally {
      await client.close();
    }
  });

  it('an MCP session belongs to its principal: another principal of the team, or an API key, does not find it', async () => {
    const headers = (token: string, session?: string) => ({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...bearer(token),
      ...(session === undefined ? {} : { 'mcp-session-id': session }),
    });
    const init = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: headers(await tokenOf('mcp-bot')),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'jwt-session-test', version: '1.0.0' } },
      }),
    });
    assert.equal(init.status, 200, await init.text());
    const session = init.headers.get('mcp-session-id');
    assert.ok(session !== null);
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const statusWith = async (token: string): Promise<number> => {
      const res = await fetch(`${gw.url}/mcp`, { method: 'POST', headers: headers(token, session), body: list });
      await res.arrayBuffer();
      return res.status;
    };
    assert.equal(await statusWith(await tokenOf('mcp-bot')), 200, 'another token of the same principal');
    assert.equal(await statusWith(await tokenOf('alice')), 404, 'another principal of the same team');
    assert.equal(await statusWith(PLATFORM_KEY), 404, 'an API key of the same team');
  });

  it("GET /v1/models lists only the models the token's scopes allow, whichever token of the team asked first", async () => {
    const wide = await fetch(`${gw.url}/v1/models`, { headers: bearer(await tokenOf('alice')) });
    await wide.arrayBuffer();
    const narrow = await fetch(`${gw.url}/v1/models`, { headers: bearer(await op.token('frugal', { scope: 'llm:cheap' })) });
    assert.equal(narrow.status, 200);
    const ids = ((await narrow.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
    assert.deepEqual(ids, ['gpt-4o-mini']);
  });
});
