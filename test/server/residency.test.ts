import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminStatusBody } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { catalogsListed, mcpProvider } from '../support/mcp.js';
import { chatCount } from '../support/observe.js';

// Data residency through a real gateway process and real mock providers (ADR 0043, invariant
// 12): a team limited to `eu` is never served by a candidate outside it, whether first in
// its route, next after a failure, behind a translation (either client protocol, official
// SDKs), a tool on /mcp, or a provider with no zones at all. The mocks' own request counters
// are the witness that nothing reached the outside provider.

const KEY_EU = 'sk-residency-eu-0123456789abcdef';
const KEY_OPEN = 'sk-residency-open-0123456789abcdef';
const KEY_LAX = 'sk-residency-lax-0123456789abcdef';
const KEY_NARROW = 'sk-residency-narrow-0123456789abcdef';

let frankfurt: MockProvider;
let virginia: MockProvider;
let unlabelled: MockProvider;
let mcpEu: MockProvider;
let mcpUs: MockProvider;
let gw: GatewayProcess;

function messagesCount(mock: MockProvider): number {
  return mock.stats().requests['POST /v1/messages'] ?? 0;
}

function totalModelCalls(mock: MockProvider): number {
  const r = mock.stats().requests;
  return (r['POST /v1/chat/completions'] ?? 0) + (r['POST /v1/messages'] ?? 0) + (r['POST /v1/embeddings'] ?? 0);
}

async function accessLine(requestId: string): Promise<Record<string, unknown>> {
  return gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
}

async function mcpClient(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: 'residency-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

function text(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as Array<{ type: string; text: string }>)[0]?.text ?? '';
}

describe('data residency', () => {
  before(async () => {
    [frankfurt, virginia, unlabelled, mcpEu, mcpUs] = await Promise.all([
      startMockProvider({ name: 'frankfurt' }),
      startMockProvider({ name: 'virginia' }),
      startMockProvider({ name: 'unlabelled' }),
      startMockProvider({ name: 'mcp-eu', protocol: 'mcp' }),
      startMockProvider({ name: 'mcp-us', protocol: 'mcp' }),
    ]);
    const openai = (mock: MockProvider, place: Record<string, unknown>) => ({
      type: 'openai',
      base_url: mock.baseUrl,
      timeout_ms: 5000,
      ...place,
    });
    const anthropic = (mock: MockProvider, place: Record<string, unknown>) => ({
      type: 'anthropic',
      base_url: mock.baseUrl,
      timeout_ms: 5000,
      ...place,
    });
    gw = await startGatewayProcess({
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
      log: { level: 'info' },
      providers: {
        fra: openai(frankfurt, { zones: ['eu', 'gdpr'], region: 'eu-central-1' }),
        iad: openai(virginia, { zones: ['us'], region: 'us-east-1' }),
        // Anthropic's Messages API on the same mocks: a client of the other protocol is translated.
        'fra-claude': anthropic(frankfurt, { zones: ['eu'] }),
        'iad-claude': anthropic(virginia, { zones: ['us'] }),
        nowhere: openai(unlabelled, {}),
        'tools-eu': mcpProvider(mcpEu, { zones: ['eu'] }),
        'tools-us': mcpProvider(mcpUs, { zones: ['us'] }),
      },
      routing: {
        routes: {
          'eu-first': { policy: 'ordered', candidates: [{ provider: 'fra' }, { provider: 'iad' }] },
          'us-first': { policy: 'ordered', candidates: [{ provider: 'iad' }, { provider: 'fra' }] },
          'us-only': { candidates: [{ provider: 'iad' }] },
          claude: { policy: 'ordered', candidates: [{ provider: 'iad-claude' }, { provider: 'fra-claude' }] },
          'unlabelled-first': { policy: 'ordered', candidates: [{ provider: 'nowhere' }, { provider: 'fra' }] },
          embed: { policy: 'ordered', candidates: [{ provider: 'iad' }, { provider: 'fra' }] },
          // A judge's question and a semantic lookup's embedding go to routes whose us candidate is first.
          judged: { guardrails: { input: ['judge'] }, candidates: [{ provider: 'fra' }] },
          cached: { cache: { mode: 'semantic', semantic: { embedding_route: 'embed' } }, candidates: [{ provider: 'fra' }] },
        },
        tools: {
          echo: { policy: 'ordered', candidates: [{ provider: 'tools-us' }, { provider: 'tools-eu' }] },
          'us-echo': { candidates: [{ provider: 'tools-us', tool: 'echo' }] },
        },
      },
      guardrails: { judge: { type: 'judge', route: 'us-first', prompt: { text: 'Safe? {{texts}}' }, timeout_ms: 5000 } },
      mcp: { catalog_recheck_ms: 0, list_changed_debounce_ms: 20 },
      // Breakers are not under test: every request must reach every candidate it may.
      resilience: { breaker: { failure_threshold: 1000 } },
      teams: {
        eu: { residency: { allow: ['eu'] } },
        open: {},
        lax: { residency: { allow: ['eu'], fail_closed: false } },
      },
      keys: [
        { id: 'k-eu', team: 'eu', sha256: hashKey(KEY_EU) },
        { id: 'k-open', team: 'open', sha256: hashKey(KEY_OPEN) },
        { id: 'k-lax', team: 'lax', sha256: hashKey(KEY_LAX) },
        // A key's own rule where its team has none.
        { id: 'k-narrow', team: 'open', sha256: hashKey(KEY_NARROW), residency: { allow: ['gdpr'] } },
      ],
    });
    await catalogsListed(gw, 2);
  });

  after(async () => {
    await gw?.stop();
    await Promise.all([frankfurt, virginia, unlabelled, mcpEu, mcpUs].map((m) => m?.close()));
  });

  beforeEach(() => {
    for (const m of [frankfurt, virginia, unlabelled, mcpEu, mcpUs]) m.reset();
  });

  it('a us candidate first in the route is passed over: eu serves, the access line lists it as provider:residency, the header does not', async () => {
    const requestId = randomUUID();
    const r = await postChat(gw.url, chatBody('us-first'), { authorization: `Bearer ${KEY_EU}`, 'x-request-id': requestId });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'fra');
    assert.equal(r.headers.get('x-switchyard-fallback'), null, 'the client is not told of a provider outside its zones');
    assert.equal(chatCount(virginia), 0, 'the us provider received nothing');
    assert.equal(chatCount(frankfurt), 1);
    const line = await accessLine(requestId);
    assert.deepEqual(line.fallback, ['iad:residency']);
    assert.equal(line.provider, 'fra');
  });

  it('a caller without a rule is served by the route as it is (the us candidate first)', async () => {
    const r = await postChat(gw.url, chatBody('us-first'), { authorization: `Bearer ${KEY_OPEN}` });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'iad');
    assert.equal(chatCount(virginia), 1);
  });

  it('failover: when the eu candidate fails, the us one is not tried and the client gets the eu failure', async () => {
    frankfurt.addFault({ mode: 'status', status: 500, count: 1 });
    const r = await postChat(gw.url, chatBody('eu-first'), { authorization: `Bearer ${KEY_EU}` });
    assert.equal(r.status, 502, r.text);
    const message = r.json<{ error: { message: string } }>().error.message;
    assert.match(message, /provider "fra" answered 500/);
    assert.doesNotMatch(message, /iad/, 'the outside provider is never named');
    assert.equal(chatCount(frankfurt), 1);
    assert.equal(chatCount(virginia), 0, 'the us provider received nothing');
    // The same failure, for a caller without a rule, fails over to the us candidate: the test can tell.
    frankfurt.addFault({ mode: 'status', status: 500, count: 1 });
    const open = await postChat(gw.url, chatBody('eu-first'), { authorization: `Bearer ${KEY_OPEN}` });
    assert.equal(open.status, 200, open.text);
    assert.equal(open.headers.get('x-switchyard-fallback'), 'fra');
    assert.equal(chatCount(virginia), 1);
  });

  it('a route with no candidate in the zones is 403 residency_not_allowed naming the zones, not the providers; nothing is sent', async () => {
    const requestId = randomUUID();
    const r = await postChat(gw.url, chatBody('us-only'), { authorization: `Bearer ${KEY_EU}`, 'x-request-id': requestId });
    assert.equal(r.status, 403, r.text);
    const error = r.json<{ error: { code: string; type: string; message: string } }>().error;
    assert.equal(error.code, 'residency_not_allowed');
    assert.equal(error.type, 'permission_error');
    assert.match(error.message, /\beu\b/);
    assert.doesNotMatch(error.message, /iad|virginia|us-east/);
    assert.equal(r.headers.get('x-switchyard-fallback'), null);
    assert.equal(totalModelCalls(virginia), 0);
    const line = await accessLine(requestId);
    assert.equal(line.status, 403);
    assert.deepEqual(line.fallback, ['iad:residency']);
  });

  it('translation, an Anthropic client: the us provider is passed over and the eu one answers in Messages shape', async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: KEY_EU, maxRetries: 0, timeout: 10_000 });
    const answer = await client.messages.create({ model: 'us-first', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(answer.type, 'message');
    assert.equal(chatCount(frankfurt), 1, 'served by the eu provider, translated to chat completions');
    assert.equal(totalModelCalls(virginia), 0, 'the us provider received nothing');
  });

  it('translation, an OpenAI client to Anthropic providers: the us one is passed over, streamed or not', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY_EU, maxRetries: 0, timeout: 10_000 });
    const answer = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(answer.object, 'chat.completion');
    const stream = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let chunks = 0;
    for await (const _ of stream) chunks += 1;
    assert.ok(chunks > 0);
    assert.equal(messagesCount(frankfurt), 2);
    assert.equal(totalModelCalls(virginia), 0, 'the us provider received nothing');
  });

  it('embeddings are held to the zones too', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY_EU, maxRetries: 0, timeout: 10_000 });
    const answer = await client.embeddings.create({ model: 'embed', input: 'where is my data' });
    assert.ok(answer.data.length > 0);
    assert.equal(totalModelCalls(virginia), 0, 'the us provider received nothing');
  });

  it("what the gateway asks for a request is held to the caller's zones: a judge's question and a semantic lookup's embedding", async () => {
    const judged = await postChat(gw.url, chatBody('judged'), { authorization: `Bearer ${KEY_EU}` });
    assert.equal(judged.status, 200, judged.text);
    assert.equal(chatCount(frankfurt), 2, "the judge's question and the request itself, both in the eu");
    const cached = await postChat(gw.url, chatBody('cached'), { authorization: `Bearer ${KEY_EU}` });
    assert.equal(cached.status, 200, cached.text);
    assert.equal(frankfurt.stats().requests['POST /v1/embeddings'], 1, 'the embedding was asked of the eu provider');
    assert.equal(totalModelCalls(virginia), 0, 'the us provider received nothing');
    // Without a rule the same questions go to the us candidate, first in their route: the test can tell.
    await postChat(gw.url, chatBody('judged'), { authorization: `Bearer ${KEY_OPEN}` });
    await postChat(gw.url, chatBody('cached', { messages: [{ role: 'user', content: 'another question' }] }), {
      authorization: `Bearer ${KEY_OPEN}`,
    });
    assert.equal(chatCount(virginia), 1);
    assert.equal(virginia.stats().requests['POST /v1/embeddings'], 1);
  });

  it('a provider without zones is outside under fail_closed (the default), inside with fail_closed: false', async () => {
    const closed = await postChat(gw.url, chatBody('unlabelled-first'), { authorization: `Bearer ${KEY_EU}` });
    assert.equal(closed.status, 200, closed.text);
    assert.equal(closed.headers.get('x-switchyard-provider'), 'fra');
    assert.equal(chatCount(unlabelled), 0, 'the unlabelled provider received nothing');
    const open = await postChat(gw.url, chatBody('unlabelled-first'), { authorization: `Bearer ${KEY_LAX}` });
    assert.equal(open.status, 200, open.text);
    assert.equal(open.headers.get('x-switchyard-provider'), 'nowhere');
    assert.equal(chatCount(unlabelled), 1);
  });

  it("a key's own rule applies where its team has none: gdpr reaches only the provider labelled gdpr", async () => {
    const r = await postChat(gw.url, chatBody('us-first'), { authorization: `Bearer ${KEY_NARROW}` });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'fra');
    assert.equal(chatCount(virginia), 0);
    const refused = await postChat(gw.url, chatBody('claude'), { authorization: `Bearer ${KEY_NARROW}` });
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.json<{ error: { message: string } }>().error.message, /\bgdpr\b/);
    assert.equal(totalModelCalls(virginia) + messagesCount(frankfurt), 0);
  });

  it('tools on /mcp (official SDK): the us server is passed over, and a tool only it serves is refused; it runs no call', async () => {
    const eu = await mcpClient(KEY_EU);
    try {
      assert.equal(text(await eu.callTool({ name: 'echo', arguments: { text: 'hi' } })), '[mcp-eu] hi');
      const refused = await eu.callTool({ name: 'us-echo', arguments: { text: 'hi' } }).then(
        (r) => ({ ok: true as const, r }),
        (err: unknown) => ({ ok: false as const, err: err as Error }),
      );
      assert.equal(refused.ok, false, 'the call is refused');
      const message = refused.ok ? '' : refused.err.message;
      assert.match(message, /residency|zones/);
      assert.match(message, /\beu\b/);
      assert.doesNotMatch(message, /tools-us|mcp-us/);
    } finally {
      await eu.close();
    }
    assert.deepEqual(mcpUs.mcpStats().calls, {}, 'the us server ran no call');
    assert.equal(mcpEu.mcpStats().calls.echo, 1);
    // A caller without a rule is served by the us server, first in the route: the test can tell.
    const open = await mcpClient(KEY_OPEN);
    try {
      assert.equal(text(await open.callTool({ name: 'echo', arguments: { text: 'hi' } })), '[mcp-us] hi');
    } finally {
      await open.close();
    }
  });

  it('the status view shows each candidate with its region and zones', async () => {
    const status = (await adminStatusBody(gw)) as unknown as {
      routes: Array<{ model: string; candidates: Array<Record<string, unknown>> }>;
    };
    const route = status.routes.find((r) => r.model === 'eu-first');
    assert.deepEqual(
      route?.candidates.map((c) => [c.provider, c.region, c.zones]),
      [
        ['fra', 'eu-central-1', ['eu', 'gdpr']],
        ['iad', 'us-east-1', ['us']],
      ],
    );
  });
});
