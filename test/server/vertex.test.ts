import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';

// A vertex provider through a real gateway process, with the official OpenAI and Anthropic
// SDKs as clients: Google's Gemini models called in Gemini's protocol, Claude in Anthropic's
// (rawPredict), under one project and location. The mock is Vertex as the gateway meets it:
// it issues tokens at its own token endpoint (checking the service account's signature) and
// metadata server, and takes no other bearer.

const PROJECT = 'switchyard-test';
const LOCATION = 'us-east5';
const GEMINI = 'gemini-2.5-flash';
const CLAUDE = 'claude-sonnet-4-5@20250929';
const PRICE = { input_usd_per_mtok: 3, output_usd_per_mtok: 15, cache_read_usd_per_mtok: 0.3, cache_write_usd_per_mtok: 3.75 };

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const gcpPublicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();

let dir: string;
let vx: MockProvider;
let flaky: MockProvider;
let down: MockProvider;
let oai: MockProvider;
let gw: GatewayProcess;
let openai: OpenAI;
let anthropic: Anthropic;

const base = `/v1/projects/${PROJECT}/locations/${LOCATION}/publishers`;

function lastTo(mock: MockProvider, pathStart: string) {
  const last = mock
    .stats()
    .recent.filter((r) => r.path.startsWith(pathStart))
    .at(-1);
  if (last === undefined) throw new Error(`${mock.name} received nothing under ${pathStart}`);
  return { ...last, json: JSON.parse(last.body) as Record<string, any> };
}

function keyFile(name: string): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      type: 'service_account',
      project_id: PROJECT,
      client_email: `switchyard@${PROJECT}.iam.gserviceaccount.com`,
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    }),
  );
  return path;
}

function vertexProvider(mock: MockProvider, gcp: Record<string, unknown>) {
  return {
    type: 'vertex',
    project: PROJECT,
    location: LOCATION,
    base_url: mock.origin,
    gcp,
    timeout_ms: 5000,
    expose_headers: ['x-mock-provider'],
  };
}

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  },
};

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sy-vertex-gw-'));
  // Tokens live 3 s here, so the gateway's refresh (at 80% of that) happens during the tests.
  vx = await startMockProvider({ name: 'vertex-up', protocol: 'vertex', gcpPublicKeyPem, tokenTtlS: 3, streamChunks: 3 });
  flaky = await startMockProvider({ name: 'flaky-up', protocol: 'vertex', gcpPublicKeyPem, streamChunks: 3 });
  down = await startMockProvider({ name: 'down-up', protocol: 'vertex', gcpPublicKeyPem });
  // The token endpoint of `down` refuses every grant from the start: its provider never has a token.
  const refused = await fetch(`${down.origin}/__mock/token-faults`, {
    method: 'POST',
    body: JSON.stringify({ mode: 'status', status: 503 }),
  });
  assert.equal(refused.ok, true, await refused.text());
  oai = await startMockProvider({ name: 'openai-up', streamChunks: 3 });
  const sa = keyFile('sa');
  const config = baseConfig(
    { oai: oai.baseUrl },
    {
      'gemini-route': { candidates: [{ provider: 'vx', model: GEMINI }] },
      'claude-route': { candidates: [{ provider: 'vx', model: CLAUDE }] },
      'meta-route': { candidates: [{ provider: 'meta', model: GEMINI }] },
      'flaky-route': {
        candidates: [
          { provider: 'flaky', model: CLAUDE },
          { provider: 'oai', model: 'gpt-4o-mini' },
        ],
      },
      'back-route': {
        candidates: [
          { provider: 'oai', model: 'gpt-4o-mini' },
          { provider: 'vx', model: GEMINI },
        ],
      },
      'down-route': {
        candidates: [
          { provider: 'down', model: GEMINI },
          { provider: 'oai', model: 'gpt-4o-mini' },
        ],
      },
    },
    { pricing: { models: { [CLAUDE]: PRICE, [GEMINI]: PRICE } } },
  );
  const providers = config.providers as Record<string, unknown>;
  providers.vx = vertexProvider(vx, { service_account: { file: sa }, token_url: `${vx.origin}/token` });
  providers.flaky = vertexProvider(flaky, { service_account: { file: sa }, token_url: `${flaky.origin}/token` });
  providers.down = vertexProvider(down, { service_account: { file: sa }, token_url: `${down.origin}/token` });
  // GKE workload identity: the node's metadata server, here the mock's own (GCE_METADATA_HOST).
  providers.meta = vertexProvider(vx, { metadata_server: true });
  gw = await startGatewayProcess(config, { env: { GCE_METADATA_HOST: vx.origin.slice('http://'.length) } });
  openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0, timeout: 10_000 });
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  await gw?.stop();
  await Promise.all([vx, flaky, down, oai].map((m) => m?.close()));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  // Issued tokens stay valid across a reset: the gateway keeps its own.
  for (const m of [vx, flaky, oai]) m.reset();
});

describe('Gemini on Vertex AI behind the gateway', () => {
  it('an OpenAI client is answered from publishers/google/...:generateContent with a token the service account earned', async () => {
    const { data, response } = await openai.chat.completions
      .create({ model: 'gemini-route', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 })
      .withResponse();
    assert.equal(data.choices[0]?.message.content, 'Hello from vertex-up.');
    assert.equal(response.headers.get('x-mock-provider'), 'vertex-up');
    const sent = lastTo(vx, `${base}/google/`);
    assert.equal(sent.path, `${base}/google/models/${GEMINI}:generateContent`);
    assert.match(String(sent.headers.authorization), /^Bearer \S+$/);
    assert.deepEqual(sent.json.generationConfig, { maxOutputTokens: 50 });
    // The mock answers only a bearer it issued and that is still valid: the 200 is the proof.
  });

  it('streams to an OpenAI client from :streamGenerateContent?alt=sse', async () => {
    const stream = await openai.chat.completions.create({
      model: 'gemini-route',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Hello from vertex-up.');
    assert.ok(usage !== null && usage.completion_tokens > 0);
    assert.equal(lastTo(vx, `${base}/google/`).path, `${base}/google/models/${GEMINI}:streamGenerateContent`);
  });

  it('an Anthropic client makes a tool round trip: the call, then its result matched to it by name', async () => {
    const tools: Anthropic.Tool[] = [
      { name: 'get_weather', description: 'Current weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    ];
    const first = await anthropic.messages.create({
      model: 'gemini-route',
      max_tokens: 200,
      tools,
      messages: [{ role: 'user', content: 'use the tool for Paris' }],
    });
    assert.equal(first.stop_reason, 'tool_use');
    const call = first.content.find((b) => b.type === 'tool_use');
    assert.ok(call?.type === 'tool_use' && call.name === 'get_weather');
    const second = await anthropic.messages.create({
      model: 'gemini-route',
      max_tokens: 200,
      tools,
      messages: [
        { role: 'user', content: 'use the tool for Paris' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny, 21C' }] },
      ],
    });
    assert.equal(second.stop_reason, 'end_turn');
    const parts = lastTo(vx, `${base}/google/`).json.contents.at(-1).parts;
    assert.equal(parts[0].functionResponse.name, 'get_weather');
  });

  it('structured output and an image, from an OpenAI client', async () => {
    const structured = await openai.chat.completions.create({
      model: 'gemini-route',
      messages: [{ role: 'user', content: 'the weather' }],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'w', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      },
    });
    assert.equal(typeof JSON.parse(structured.choices[0]?.message.content ?? '').city, 'string');
    assert.equal(lastTo(vx, `${base}/google/`).json.generationConfig.responseMimeType, 'application/json');
    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
    await openai.chat.completions.create({
      model: 'gemini-route',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
          ],
        },
      ],
    });
    assert.deepEqual(lastTo(vx, `${base}/google/`).json.contents[0].parts[1], { inlineData: { mimeType: 'image/png', data: pixel } });
  });

  it('the metadata server (GKE workload identity) gives a provider its token, found through GCE_METADATA_HOST', async () => {
    const data = await openai.chat.completions.create({ model: 'meta-route', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(data.choices[0]?.message.content, 'Hello from vertex-up.');
    const viaMetadata = String(lastTo(vx, `${base}/google/`).headers.authorization);
    assert.match(viaMetadata, /^Bearer ya29\.mock-/);
    const status = (await (await fetch(`${gw.adminUrl}/admin/status`)).json()) as {
      providers: Array<{ name: string; credential: string | null }>;
    };
    assert.equal(status.providers.find((p) => p.name === 'meta')?.credential, 'gcp:metadata_server');
  });
});

describe('Claude on Vertex AI behind the gateway', () => {
  it('an Anthropic client goes to :rawPredict as it came, without model and with the anthropic_version Anthropic’s Vertex SDK sends', async () => {
    // What the official Vertex SDK sends, asked of the same mock with a token of its own.
    const sdk = new AnthropicVertex({
      projectId: PROJECT,
      region: LOCATION,
      baseURL: `${vx.origin}/v1`,
      maxRetries: 0,
      authClient: {
        getRequestHeaders: async () => {
          const res = await fetch(`${vx.origin}/computeMetadata/v1/instance/service-accounts/default/token`, {
            headers: { 'metadata-flavor': 'Google' },
          });
          return new Headers({ authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` });
        },
      } as never,
    });
    await sdk.messages.create({ model: CLAUDE, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
    const theSdks = lastTo(vx, `${base}/anthropic/`).json.anthropic_version;

    const msg = await anthropic.messages.create({
      model: 'claude-route',
      max_tokens: 50,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Hello from vertex-up.');
    const sent = lastTo(vx, `${base}/anthropic/`);
    assert.equal(sent.path, `${base}/anthropic/models/${encodeURIComponent(CLAUDE)}:rawPredict`);
    assert.equal(sent.json.model, undefined);
    assert.equal(sent.json.anthropic_version, theSdks);
    assert.equal(sent.json.system, 'Be brief.');
    assert.equal(sent.headers['anthropic-version'], undefined, 'the version goes in the body on Vertex');
    assert.match(String(sent.headers.authorization), /^Bearer /);
  });

  it('streams to an Anthropic client from :streamRawPredict, and bills cache tokens at their prices, exactly', async () => {
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'A long, cached system prompt. '.repeat(40), cache_control: { type: 'ephemeral' } },
    ];
    const ask = () =>
      anthropic.messages
        .create({ model: 'claude-route', max_tokens: 50, system, messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
    const write = await ask();
    const read = await ask();
    for (const { data, response } of [write, read]) {
      const u = data.usage;
      const cost =
        (u.input_tokens * 3 + u.output_tokens * 15 + (u.cache_read_input_tokens ?? 0) * 0.3 + (u.cache_creation_input_tokens ?? 0) * 3.75) /
        1e6;
      assert.equal(response.headers.get('x-switchyard-cost-usd'), cost.toFixed(6));
    }
    assert.ok((write.data.usage.cache_creation_input_tokens ?? 0) > 0, 'the first writes the cache');
    assert.ok((read.data.usage.cache_read_input_tokens ?? 0) > 0, 'the second reads it');

    const stream = anthropic.messages.stream({ model: 'claude-route', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    assert.equal(text, 'Hello from vertex-up.');
    assert.equal(lastTo(vx, `${base}/anthropic/`).path, `${base}/anthropic/models/${encodeURIComponent(CLAUDE)}:streamRawPredict`);
  });

  it('an OpenAI client is translated: a tool round trip, structured output and an image', async () => {
    const first = await openai.chat.completions.create({
      model: 'claude-route',
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'use the tool for Paris' }],
    });
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(call?.type === 'function' && call.function.name === 'get_weather');
    const second = await openai.chat.completions.create({
      model: 'claude-route',
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'use the tool for Paris' },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
    });
    assert.equal(second.choices[0]?.finish_reason, 'stop');
    const sent = lastTo(vx, `${base}/anthropic/`).json;
    assert.equal(sent.model, undefined);
    assert.equal(sent.messages.at(-1).content[0].type, 'tool_result');

    const structured = await openai.chat.completions.create({
      model: 'claude-route',
      messages: [{ role: 'user', content: 'the weather' }],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'w', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      },
    });
    assert.equal(typeof JSON.parse(structured.choices[0]?.message.content ?? '').city, 'string');

    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
    const seen = await openai.chat.completions.create({
      model: 'claude-route',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
          ],
        },
      ],
    });
    assert.ok((seen.choices[0]?.message.content ?? '').length > 0);
    const image = lastTo(vx, `${base}/anthropic/`).json.messages[0].content[1];
    assert.deepEqual(image, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } });
  });
});

describe('vertex failover and tokens', () => {
  it('a 503 and a 429 from Vertex fail over to an openai candidate; an openai 503 fails over to Vertex', async () => {
    flaky.addFault({ mode: 'status', status: 503, count: 1 });
    const { response } = await anthropic.messages
      .create({ model: 'flaky-route', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(response.headers.get('x-mock-provider'), 'openai-up');
    assert.equal(response.headers.get('x-switchyard-fallback'), 'flaky');
    flaky.addFault({ mode: 'status', status: 429, count: 1, headers: { 'retry-after': '0' } });
    const throttled = await openai.chat.completions
      .create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(throttled.response.headers.get('x-mock-provider'), 'openai-up');

    oai.addFault({ mode: 'status', status: 503, count: 1 });
    const back = await openai.chat.completions.create({ model: 'back-route', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(back.response.headers.get('x-mock-provider'), 'vertex-up');
    assert.equal(back.data.choices[0]?.message.content, 'Hello from vertex-up.');
  });

  it('a token endpoint that refuses: the provider fails as credential_unavailable and the next candidate serves; the log says why', async () => {
    const { response } = await openai.chat.completions
      .create({ model: 'down-route', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(response.headers.get('x-mock-provider'), 'openai-up');
    assert.equal(response.headers.get('x-switchyard-fallback'), 'down');
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === response.headers.get('x-switchyard-request-id'));
    assert.match(JSON.stringify(line.fallback), /credential_unavailable/);
    const warned = await gw.waitForLog(
      (l) => l.provider === 'down' && typeof l.msg === 'string' && l.msg.startsWith('Google Cloud token unavailable'),
    );
    assert.match(String(warned.msg), /the token endpoint answered 503/);
    assert.equal(down.stats().recent.filter((r) => r.path.startsWith('/v1/')).length, 0, 'no call without a token');
  });

  it('a short-lived token is refreshed ahead of expiry by the timer, while requests keep being answered, and no token is logged', async () => {
    const issued = vx.tokenStats().issuedForJwt;
    const tokens = new Set<string>();
    // 3 s tokens, refreshed at 2.4 s: about 5 s of requests see at least one refresh.
    const until = Date.now() + 5_000;
    while (Date.now() < until) {
      const data = await openai.chat.completions.create({ model: 'gemini-route', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(data.choices[0]?.message.content, 'Hello from vertex-up.');
      tokens.add(String(lastTo(vx, `${base}/google/`).headers.authorization));
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(vx.tokenStats().issuedForJwt > issued, 'a new token was fetched');
    assert.ok(tokens.size >= 2, `requests were sent with ${tokens.size} token(s)`);
    const logs = JSON.stringify(gw.logs());
    for (const t of tokens) assert.ok(!logs.includes(t.slice('Bearer '.length)), 'a token reached the log');
    assert.ok(!logs.includes('PRIVATE KEY'));
  });
});
