import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { type LocalSts, startLocalSts } from '../support/local-sts.js';

// A bedrock provider through a real gateway process, with the official OpenAI and Anthropic
// SDKs as clients: every request is translated to Bedrock's Converse API and signed with
// SigV4, which the mock checks over the bytes it receives as AWS does (a wrong key or byte is
// its 403). Keys come from the config, or from a web identity exchanged at a local STS, as
// EKS IRSA does.

const AKID = 'AKIAMOCKBEDROCK00001';
const SECRET = 'mock/secret+key/0123456789abcdefghijklmn';
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const ROLE = 'arn:aws:iam::123456789012:role/switchyard-bedrock';
const PRICE = { input_usd_per_mtok: 0.8, output_usd_per_mtok: 4, cache_read_usd_per_mtok: 0.08, cache_write_usd_per_mtok: 1 };

let dir: string;
let br: MockProvider;
let irsaMock: MockProvider;
let flaky: MockProvider;
let oai: MockProvider;
let sts: LocalSts;
let gw: GatewayProcess;
let openai: OpenAI;
let anthropic: Anthropic;

const conversePath = (stream: boolean) => `/model/${encodeURIComponent(MODEL)}/${stream ? 'converse-stream' : 'converse'}`;

function lastConverse(mock: MockProvider) {
  const last = mock
    .stats()
    .recent.filter((r) => r.path.startsWith('/model/'))
    .at(-1);
  if (last === undefined) throw new Error(`${mock.name} received no Converse request`);
  return { ...last, json: JSON.parse(last.body) as Record<string, any> };
}

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  },
};

function bedrockProvider(mock: MockProvider, aws: Record<string, unknown>) {
  return { type: 'bedrock', region: 'us-east-1', base_url: mock.origin, aws, timeout_ms: 5000, expose_headers: ['x-mock-provider'] };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sy-bedrock-gw-'));
  const mockKeys = { protocol: 'bedrock' as const, awsAccessKeyId: AKID, awsSecretAccessKey: SECRET, streamChunks: 3 };
  br = await startMockProvider({ name: 'bedrock-up', ...mockKeys });
  irsaMock = await startMockProvider({ name: 'irsa-up', ...mockKeys });
  flaky = await startMockProvider({ name: 'flaky-up', ...mockKeys });
  oai = await startMockProvider({ name: 'openai-up', streamChunks: 3 });
  // STS hands out the mock's key pair (with a session token of its own), for 3 s: refreshed at 2.4 s.
  sts = await startLocalSts({
    roleArn: ROLE,
    webIdentityToken: 'projected.sa.token',
    durationS: 3,
    keys: { accessKeyId: AKID, secretAccessKey: SECRET },
  });
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 'projected.sa.token');
  const config = baseConfig(
    { oai: oai.baseUrl },
    {
      'br-route': { candidates: [{ provider: 'br', model: MODEL }] },
      'irsa-route': { candidates: [{ provider: 'irsa', model: MODEL }] },
      'rotated-route': { candidates: [{ provider: 'rotated', model: MODEL }] },
      'wrong-key-route': {
        candidates: [
          { provider: 'wrongkey', model: MODEL },
          { provider: 'oai', model: 'gpt-4o-mini' },
        ],
      },
      'flaky-route': {
        candidates: [
          { provider: 'flaky', model: MODEL },
          { provider: 'oai', model: 'gpt-4o-mini' },
        ],
        fallback_on: ['context_length'],
      },
      'back-route': {
        candidates: [
          { provider: 'oai', model: 'gpt-4o-mini' },
          { provider: 'br', model: MODEL },
        ],
      },
    },
    { pricing: { models: { [MODEL]: PRICE } } },
  );
  const providers = config.providers as Record<string, unknown>;
  const keys = { access_key_id: { env: 'BR_AKID' }, secret_access_key: { env: 'BR_SECRET' } };
  providers.br = bedrockProvider(br, keys);
  providers.flaky = bedrockProvider(flaky, keys);
  providers.wrongkey = bedrockProvider(br, { access_key_id: { env: 'BR_AKID' }, secret_access_key: { env: 'WRONG_SECRET' } });
  providers.irsa = bedrockProvider(irsaMock, { web_identity: true, sts_endpoint: sts.url });
  // Keys in files, the secret a wrong one until a test rotates it.
  writeFileSync(join(dir, 'akid'), AKID);
  writeFileSync(join(dir, 'secret'), 'a-stale-secret');
  providers.rotated = bedrockProvider(br, { access_key_id: { file: join(dir, 'akid') }, secret_access_key: { file: join(dir, 'secret') } });
  gw = await startGatewayProcess(config, {
    env: { BR_AKID: AKID, BR_SECRET: SECRET, WRONG_SECRET: 'not-the-secret', AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_ARN: ROLE },
  });
  openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0, timeout: 10_000 });
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  await gw?.stop();
  await Promise.all([br, irsaMock, flaky, oai].map((m) => m?.close()));
  await sts?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  for (const m of [br, irsaMock, flaky, oai]) m.reset();
  sts.failWith(null);
});

describe('a bedrock provider behind the gateway, with the OpenAI SDK', () => {
  it('answers a plain chat completion from /model/{id}/converse, signed (SigV4) as the mock checks', async () => {
    const { data, response } = await openai.chat.completions
      .create({
        model: 'br-route',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hi' },
        ],
        max_tokens: 50,
        temperature: 0.2,
      })
      .withResponse();
    assert.equal(data.choices[0]?.message.content, 'Hello from bedrock-up.');
    assert.equal(data.choices[0]?.finish_reason, 'stop');
    assert.equal(data.model, MODEL);
    assert.equal(response.headers.get('x-mock-provider'), 'bedrock-up');
    const sent = lastConverse(br);
    assert.equal(sent.path, conversePath(false), "the model id's ':' goes as %3A");
    assert.match(
      String(sent.headers.authorization),
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${AKID}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=`),
    );
    assert.deepEqual(sent.json.system, [{ text: 'Be brief.' }]);
    assert.deepEqual(sent.json.inferenceConfig, { maxTokens: 50, temperature: 0.2 });
    assert.equal(sent.json.modelId, undefined);
  });

  it('streams: the event-stream frames become chat completion chunks, with the usage', async () => {
    const stream = await openai.chat.completions.create({
      model: 'br-route',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    let finish: string | null | undefined = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Hello from bedrock-up.');
    assert.equal(finish, 'stop');
    assert.ok(usage !== null && usage.prompt_tokens > 0 && usage.completion_tokens > 0);
    assert.equal(lastConverse(br).path, conversePath(true));
  });

  it('makes a tool round trip: toolUse, then the toolResult in a user turn', async () => {
    const first = await openai.chat.completions.create({
      model: 'br-route',
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'use the tool for Paris' }],
    });
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(call?.type === 'function' && call.function.name === 'get_weather');
    assert.deepEqual(lastConverse(br).json.toolConfig.tools[0].toolSpec.name, 'get_weather');
    const second = await openai.chat.completions.create({
      model: 'br-route',
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'use the tool for Paris' },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
      ],
    });
    assert.equal(second.choices[0]?.finish_reason, 'stop');
    const turns = lastConverse(br).json.messages;
    assert.equal(turns[1].content[0].toolUse.toolUseId, call.id);
    assert.deepEqual(turns[2].content[0].toolResult.toolUseId, call.id);
  });

  it('structured output and an image', async () => {
    const structured = await openai.chat.completions.create({
      model: 'br-route',
      messages: [{ role: 'user', content: 'the weather' }],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'w', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      },
    });
    assert.equal(typeof JSON.parse(structured.choices[0]?.message.content ?? '').city, 'string');
    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
    const seen = await openai.chat.completions.create({
      model: 'br-route',
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
    assert.deepEqual(lastConverse(br).json.messages[0].content[1], { image: { format: 'png', source: { bytes: pixel } } });
  });
});

describe('a bedrock provider behind the gateway, with the Anthropic SDK', () => {
  it('answers and streams messages; cache_control becomes a cachePoint, and cache tokens are billed at their prices, exactly', async () => {
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'A long, cached system prompt. '.repeat(40), cache_control: { type: 'ephemeral' } },
    ];
    const ask = () =>
      anthropic.messages.create({ model: 'br-route', max_tokens: 50, system, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    const write = await ask();
    const read = await ask();
    assert.ok(lastConverse(br).json.system.some((b: Record<string, unknown>) => b.cachePoint !== undefined));
    for (const { data, response } of [write, read]) {
      const u = data.usage;
      const cost =
        (u.input_tokens * 0.8 + u.output_tokens * 4 + (u.cache_read_input_tokens ?? 0) * 0.08 + (u.cache_creation_input_tokens ?? 0) * 1) /
        1e6;
      assert.equal(response.headers.get('x-switchyard-cost-usd'), cost.toFixed(6));
    }
    assert.ok((write.data.usage.cache_creation_input_tokens ?? 0) > 0, 'the first writes the cache');
    assert.ok((read.data.usage.cache_read_input_tokens ?? 0) > 0, 'the second reads it');

    const stream = anthropic.messages.stream({ model: 'br-route', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    assert.equal(text, 'Hello from bedrock-up.');
    assert.equal((await stream.finalMessage()).stop_reason, 'end_turn');
  });

  it('structured output (output_config.format) and an image, from an Anthropic client', async () => {
    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
    const msg = await anthropic.messages.create({
      model: 'br-route',
      max_tokens: 100,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } },
            { type: 'text', text: 'where is this?' },
          ],
        },
      ],
      output_config: {
        format: { type: 'json_schema', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      },
    } as Anthropic.MessageCreateParamsNonStreaming);
    const text = msg.content[0]?.type === 'text' ? msg.content[0].text : '';
    assert.equal(typeof JSON.parse(text).city, 'string');
    const sent = lastConverse(br).json;
    assert.deepEqual(sent.messages[0].content[0], { image: { format: 'png', source: { bytes: pixel } } });
    assert.ok(sent.outputConfig?.textFormat !== undefined, JSON.stringify(sent));
  });

  it('a streamed tool use comes back as tool_use blocks with their input', async () => {
    const stream = anthropic.messages.stream({
      model: 'br-route',
      max_tokens: 200,
      tools: [
        { name: 'get_weather', description: 'Current weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      ],
      messages: [{ role: 'user', content: 'use the tool for Paris' }],
    });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    const use = final.content.find((b) => b.type === 'tool_use');
    assert.ok(use?.type === 'tool_use' && use.name === 'get_weather' && typeof use.input === 'object');
  });

  it('an exception event inside a 200 stream ends the client stream with its error event', async () => {
    br.addFault({ mode: 'stream_exception', exception: 'throttlingException', after_chunks: 1, count: 1 } as never);
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'br-route', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /event: content_block_delta/);
    assert.match(text, /event: error/);
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === res.headers.get('x-switchyard-request-id'));
    assert.equal(line.status, 'partial');
  });
});

describe('bedrock errors and failover', () => {
  it('a 503 and a ThrottlingException fail over to an openai candidate; an openai 503 fails over to Bedrock', async () => {
    flaky.addFault({ mode: 'status', status: 503, count: 1 });
    const { response } = await openai.chat.completions
      .create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(response.headers.get('x-mock-provider'), 'openai-up');
    assert.equal(response.headers.get('x-switchyard-fallback'), 'flaky');
    flaky.addFault({ mode: 'status', status: 429, count: 1 });
    const throttled = await anthropic.messages
      .create({ model: 'flaky-route', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(throttled.response.headers.get('x-mock-provider'), 'openai-up');
    const line = await gw.waitForLog(
      (l) => l.msg === 'request' && l.request_id === throttled.response.headers.get('x-switchyard-request-id'),
    );
    assert.match(JSON.stringify(line.fallback), /status_429/);

    oai.addFault({ mode: 'status', status: 503, count: 1 });
    const back = await openai.chat.completions.create({ model: 'back-route', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(back.response.headers.get('x-mock-provider'), 'bedrock-up');
  });

  it("a ValidationException reaches the client as a 400 with Bedrock's message; one about the context fails over (fallback_on)", async () => {
    flaky.addFault({
      mode: 'status',
      status: 400,
      count: 1,
      body: { message: 'The provided request is not valid: messages: Input is too long for requested model.' },
      headers: { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
    });
    const moved = await openai.chat.completions
      .create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(moved.response.headers.get('x-mock-provider'), 'openai-up');
    flaky.addFault({ mode: 'status', status: 400, count: 1, body: { message: 'Malformed input request: temperature must be at most 1.' } });
    const refused = await openai.chat.completions
      .create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
    assert.match(refused.message, /temperature must be at most 1/);
  });

  it('a wrong secret is the gateway’s credential refused (403 InvalidSignatureException): 502 upstream_auth_failed, and no key is logged', async () => {
    const err = await openai.chat.completions
      .create({ model: 'wrong-key-route', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError && err.status === 502, String(err));
    assert.equal((err.error as { code?: string } | undefined)?.code, 'upstream_auth_failed');
    assert.equal(oai.stats().total, 0, 'a refused credential is not a reason to try the next candidate');
    const logs = JSON.stringify(gw.logs());
    assert.ok(!logs.includes(SECRET) && !logs.includes('not-the-secret'));
  });
});

describe('bedrock keys on reload', () => {
  it('a reload re-reads the key files: a rotated secret signs from the next request on', async () => {
    const stale = await openai.chat.completions
      .create({ model: 'rotated-route', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(stale instanceof OpenAI.APIError && stale.status === 502, String(stale));
    writeFileSync(join(dir, 'secret'), SECRET);
    const reload = await adminReload(gw.adminUrl as string);
    assert.equal(reload.body.result, 'applied', reload.text);
    const data = await openai.chat.completions.create({ model: 'rotated-route', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(data.choices[0]?.message.content, 'Hello from bedrock-up.');
    assert.ok(!JSON.stringify(gw.logs()).includes(SECRET));
  });
});

describe('bedrock on a web identity (EKS IRSA)', () => {
  it('the token file is exchanged at STS; requests carry the temporary keys and their session token, refreshed ahead of expiry', async () => {
    const before = sts.issued.length;
    const tokens = new Set<string>();
    // 3 s keys, refreshed at 2.4 s: about 5 s of requests see at least one new set.
    const until = Date.now() + 5_000;
    while (Date.now() < until) {
      const data = await openai.chat.completions.create({ model: 'irsa-route', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(data.choices[0]?.message.content, 'Hello from irsa-up.');
      tokens.add(String(lastConverse(irsaMock).headers['x-amz-security-token']));
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(sts.issued.length > before, 'STS was asked again');
    assert.ok(tokens.size >= 2, `requests were signed with ${tokens.size} session token(s)`);
    assert.ok(sts.issued.some((k) => tokens.has(k.sessionToken)));
    assert.equal(sts.requests.at(-1)?.RoleSessionName, 'switchyard-irsa');
    const logs = JSON.stringify(gw.logs());
    for (const t of tokens) assert.ok(!logs.includes(t), 'a session token reached the log');
    assert.ok(!logs.includes('projected.sa.token'));
  });

  it('STS down: once the keys in hand expire the provider fails as credential_unavailable, and the log says why', async () => {
    sts.failWith(503);
    const warned = await gw.waitForLog(
      (l) => l.provider === 'irsa' && typeof l.msg === 'string' && l.msg.startsWith('AWS credentials unavailable'),
    );
    assert.match(String(warned.msg), /STS AssumeRoleWithWebIdentity answered 503/);
    // The keys in hand (3 s) serve until they expire; then no call is made without keys.
    let status = 200;
    const until = Date.now() + 8_000;
    while (status === 200 && Date.now() < until) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'irsa-route', messages: [{ role: 'user', content: 'hi' }] }),
      });
      status = res.status;
      const text = await res.text();
      if (status !== 200) assert.match(text, /credential_unavailable|AWS credentials/);
      else await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(status, 503);
    sts.failWith(null);
  });
});
