import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';

// A gemini provider through a real gateway process, with the official OpenAI and Anthropic
// SDKs as clients: every request is translated to the Gemini API and its answer back. The
// mock checks the key as Google does, so a wrong one fails as Google's would.

const GEM_KEY = 'AIzaSyMockGeminiKey0123456789abcdef';
const MODEL = 'gemini-2.5-flash';
const PRICE = { input_usd_per_mtok: 0.3, output_usd_per_mtok: 2.5 };

let gem: MockProvider;
let flaky: MockProvider;
let badKey: MockProvider;
let oai: MockProvider;
let gw: GatewayProcess;
let openai: OpenAI;
let anthropic: Anthropic;

const geminiPath = (stream: boolean) => `/v1beta/models/${MODEL}:${stream ? 'streamGenerateContent' : 'generateContent'}`;

function lastGeminiBody(mock: MockProvider): Record<string, any> {
  const last = mock
    .stats()
    .recent.filter((r) => r.path.startsWith('/v1beta/'))
    .at(-1);
  if (last === undefined) throw new Error(`${mock.name} received no Gemini request`);
  return JSON.parse(last.body) as Record<string, any>;
}

/** What the mock reports for the body the gateway sent it: the mock is deterministic, so asking again gives the same usage. */
async function usageTheMockReported(mock: MockProvider): Promise<Record<string, number>> {
  const sent = mock
    .stats()
    .recent.filter((r) => r.path === geminiPath(false))
    .at(-1);
  assert.ok(sent !== undefined);
  const res = await fetch(`${mock.origin}${sent.path}`, { method: 'POST', headers: { 'x-goog-api-key': GEM_KEY }, body: sent.body });
  return ((await res.json()) as { usageMetadata: Record<string, number> }).usageMetadata;
}

function accessLine(requestId: string): Promise<Record<string, unknown>> {
  return gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
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
  gem = await startMockProvider({ name: 'gem-up', apiKey: GEM_KEY, streamChunks: 3 });
  flaky = await startMockProvider({ name: 'flaky-up', apiKey: GEM_KEY, streamChunks: 3 });
  badKey = await startMockProvider({ name: 'badkey-up', apiKey: 'AIzaSyTheRightKeyIsAnotherOne00000' });
  oai = await startMockProvider({ name: 'openai-up', streamChunks: 3 });
  const geminiProvider = (mock: MockProvider) => ({
    type: 'gemini',
    base_url: mock.origin,
    api_key: { env: 'GEM_KEY' },
    timeout_ms: 5000,
    expose_headers: ['x-mock-provider'],
  });
  const config = baseConfig(
    { oai: oai.baseUrl },
    {
      'gem-route': { candidates: [{ provider: 'gem', model: MODEL }] },
      'flaky-route': {
        candidates: [
          { provider: 'flaky', model: MODEL },
          { provider: 'oai', model: 'gpt-4o-mini' },
        ],
      },
      'bad-key-route': {
        candidates: [
          { provider: 'badkey', model: MODEL },
          { provider: 'oai', model: 'gpt-4o-mini' },
        ],
      },
    },
    { pricing: { models: { [MODEL]: PRICE } } },
  );
  const providers = config.providers as Record<string, unknown>;
  providers.gem = geminiProvider(gem);
  providers.flaky = geminiProvider(flaky);
  providers.badkey = geminiProvider(badKey);
  gw = await startGatewayProcess(config, { env: { GEM_KEY } });
  openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0, timeout: 10_000 });
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  await gw?.stop();
  await Promise.all([gem, flaky, badKey, oai].map((m) => m?.close()));
});

beforeEach(() => {
  for (const m of [gem, flaky, badKey, oai]) m.reset();
});

describe('a gemini provider behind the gateway, with the OpenAI SDK', () => {
  it('answers a plain chat completion, sent to generateContent with the key in x-goog-api-key', async () => {
    const { data, response } = await openai.chat.completions
      .create({
        model: 'gem-route',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hi' },
        ],
        max_tokens: 50,
      })
      .withResponse();
    assert.equal(data.choices[0]?.message.content, 'Hello from gem-up.');
    assert.equal(data.choices[0]?.finish_reason, 'stop');
    assert.equal(response.headers.get('x-mock-provider'), 'gem-up');
    const sent = gem.stats().recent.at(-1);
    assert.equal(sent?.path, geminiPath(false));
    assert.equal(sent?.headers['x-goog-api-key'], GEM_KEY);
    assert.equal(sent?.headers.authorization, undefined);
    const body = lastGeminiBody(gem);
    assert.deepEqual(body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
    assert.deepEqual(body.generationConfig, { maxOutputTokens: 50 });
  });

  it('sends the seed and penalties Gemini has, listing only what it has not (logit_bias) as dropped', async () => {
    const { response } = await openai.chat.completions
      .create({
        model: 'gem-route',
        messages: [{ role: 'user', content: 'hi' }],
        seed: 7,
        frequency_penalty: 0.5,
        presence_penalty: 0.25,
        logit_bias: { '50256': -100 },
      })
      .withResponse();
    assert.equal(response.headers.get('x-switchyard-dropped'), 'logit_bias');
    const config = lastGeminiBody(gem).generationConfig;
    assert.deepEqual([config.seed, config.frequencyPenalty, config.presencePenalty], [7, 0.5, 0.25]);
  });

  it('bills the usage Gemini reported, exactly, and says its cost', async () => {
    const { data, response } = await openai.chat.completions
      .create({ model: 'gem-route', messages: [{ role: 'user', content: 'hello there' }] })
      .withResponse();
    const reported = await usageTheMockReported(gem);
    assert.equal(data.usage?.prompt_tokens, reported.promptTokenCount);
    assert.equal(data.usage?.completion_tokens, reported.candidatesTokenCount);
    const line = await accessLine(response.headers.get('x-switchyard-request-id') ?? '');
    assert.equal(line.input_tokens, reported.promptTokenCount);
    assert.equal(line.output_tokens, reported.candidatesTokenCount);
    const micro = Math.round(
      (reported.promptTokenCount as number) * PRICE.input_usd_per_mtok +
        (reported.candidatesTokenCount as number) * PRICE.output_usd_per_mtok,
    );
    assert.equal(line.cost_micro_usd, micro);
    assert.equal(Number(response.headers.get('x-switchyard-cost-usd')), micro / 1e6);
  });

  it('streams, from streamGenerateContent?alt=sse, with the usage chunk asked for', async () => {
    const stream = await openai.chat.completions.create({
      model: 'gem-route',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    assert.equal(text, 'Hello from gem-up.');
    assert.equal(finish, 'stop');
    assert.ok((usage?.prompt_tokens ?? 0) > 0 && (usage?.completion_tokens ?? 0) > 0);
    const sent = gem.stats().recent.at(-1);
    assert.equal(sent?.path, geminiPath(true));
    assert.equal(sent?.headers['x-goog-api-key'], GEM_KEY);
  });

  it('runs a tool round trip: a functionCall out, a functionResponse by name back in', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Use the tool for Oslo' }];
    const first = await openai.chat.completions.create({ model: 'gem-route', messages, tools: [weatherTool] });
    const choice = first.choices[0];
    assert.equal(choice?.finish_reason, 'tool_calls');
    const call = choice?.message.tool_calls?.[0];
    assert.ok(call !== undefined && call.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
    const sentTools = lastGeminiBody(gem).tools;
    assert.deepEqual(sentTools[0].functionDeclarations[0].name, 'get_weather');
    messages.push(choice!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny' });
    const second = await openai.chat.completions.create({ model: 'gem-route', messages, tools: [weatherTool] });
    assert.equal(second.choices[0]?.message.content, 'Hello from gem-up. The tool said: sunny');
    const contents = lastGeminiBody(gem).contents;
    assert.deepEqual(contents[1].parts[0].functionCall.name, 'get_weather');
    assert.deepEqual(contents[2].parts[0], { functionResponse: { name: 'get_weather', response: { result: 'sunny' } } });
  });

  it('streams a tool call', async () => {
    const stream = await openai.chat.completions.create({
      model: 'gem-route',
      messages: [{ role: 'user', content: 'Use the tool for Oslo' }],
      tools: [weatherTool],
      stream: true,
    });
    let name = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const call = chunk.choices[0]?.delta.tool_calls?.[0];
      name += call?.function?.name ?? '';
      args += call?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(name, 'get_weather');
    assert.equal(typeof JSON.parse(args).city, 'string');
    assert.equal(finish, 'tool_calls');
  });

  it('asks for JSON matching the schema (structured output)', async () => {
    const res = await openai.chat.completions.create({
      model: 'gem-route',
      messages: [{ role: 'user', content: 'a forecast' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'forecast',
          strict: true,
          schema: {
            type: 'object',
            properties: { city: { type: 'string' }, rain: { type: 'boolean' } },
            required: ['city', 'rain'],
            additionalProperties: false,
          },
        },
      },
    });
    const value = JSON.parse(res.choices[0]?.message.content ?? '') as { city: unknown; rain: unknown };
    assert.equal(typeof value.city, 'string');
    assert.equal(typeof value.rain, 'boolean');
    const config = lastGeminiBody(gem).generationConfig;
    assert.equal(config.responseMimeType, 'application/json');
    assert.deepEqual(config.responseJsonSchema.required, ['city', 'rain']);
  });

  it('sends a base64 image inline, and bills its tokens', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const res = await openai.chat.completions.create({
      model: 'gem-route',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is it?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
          ],
        },
      ],
    });
    assert.equal(res.choices[0]?.message.content, 'Hello from gem-up.');
    assert.deepEqual(lastGeminiBody(gem).contents[0].parts[1], { inlineData: { mimeType: 'image/png', data: png } });
    assert.ok((res.usage?.prompt_tokens ?? 0) >= 258);
  });

  it('refuses an image by URL: the gemini candidate is unable, and no candidate is left', async () => {
    await assert.rejects(
      openai.chat.completions.create({
        model: 'gem-route',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }],
      }),
      (err: unknown) => err instanceof OpenAI.APIError && err.status === 400 && /inline/.test(err.message),
    );
    assert.equal(gem.stats().total, 0);
  });
});

describe('a gemini provider and the endpoints it does not serve', () => {
  it('is skipped for embeddings: a route with another candidate uses it, a route with none is a 400', async () => {
    const served = await openai.embeddings.create({ model: 'flaky-route', input: 'hi' });
    assert.equal(served.data.length, 1);
    assert.equal(flaky.stats().total, 0);
    await assert.rejects(
      openai.embeddings.create({ model: 'gem-route', input: 'hi' }),
      (err: unknown) => err instanceof OpenAI.APIError && err.status === 400 && /gemini providers/.test(err.message),
    );
    assert.equal(gem.stats().total, 0);
  });
});

describe('a gemini provider behind the gateway, with the Anthropic SDK', () => {
  it('answers a message, plain and streamed', async () => {
    const msg = await anthropic.messages.create({ model: 'gem-route', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello from gem-up.' }]);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0);
    assert.equal(lastGeminiBody(gem).generationConfig.maxOutputTokens, 64);
    const final = await anthropic.messages
      .stream({ model: 'gem-route', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    assert.equal(final.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), 'Hello from gem-up.');
    assert.ok(final.usage.output_tokens > 0);
  });

  it("runs a tool round trip, the thinking model's thoughtSignature carried in the tool_use id", async () => {
    const tools: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Use the tool please' }];
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const first = await anthropic.messages.create({ model: 'gem-route', max_tokens: 2048, messages, tools, thinking });
    assert.equal(first.stop_reason, 'tool_use');
    assert.deepEqual(
      first.content.map((b) => b.type),
      ['thinking', 'tool_use'],
    );
    assert.deepEqual(lastGeminiBody(gem).generationConfig.thinkingConfig, { thinkingBudget: 1024, includeThoughts: true });
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use !== undefined && use.type === 'tool_use');
    messages.push(
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'rainy' }] },
    );
    const second = await anthropic.messages.create({ model: 'gem-route', max_tokens: 2048, messages, tools });
    assert.equal(second.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), 'Hello from gem-up. The tool said: rainy');
    const call = lastGeminiBody(gem).contents[1].parts[0];
    assert.equal(call.functionCall.name, 'get_weather');
    assert.ok(typeof call.thoughtSignature === 'string' && call.thoughtSignature.length > 0, 'the signature went back with the call');
  });
});

describe('a gemini provider behind the gateway, with the Anthropic SDK: top_k', () => {
  it('is sent as generationConfig.topK and not listed as dropped', async () => {
    // This SDK's types have no top_k; the API has.
    const params = { model: 'gem-route', max_tokens: 20, top_k: 3, messages: [{ role: 'user' as const, content: 'hi' }] };
    const { response } = await anthropic.messages.create(params).withResponse();
    assert.equal(response.headers.get('x-switchyard-dropped'), null);
    assert.equal(lastGeminiBody(gem).generationConfig.topK, 3);
  });
});

describe('a gemini provider failing', () => {
  it("a 400 INVALID_ARGUMENT is the client's error, in its shape, with no failover", async () => {
    flaky.addFault({
      mode: 'status',
      status: 400,
      count: 1,
      body: { error: { code: 400, message: 'Invalid value at generation_config.top_p', status: 'INVALID_ARGUMENT' } },
    });
    await assert.rejects(
      openai.chat.completions.create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof OpenAI.APIError && err.status === 400 && /generation_config\.top_p/.test(err.message),
    );
    assert.equal(oai.stats().total, 0);
  });

  it('fails over to the openai candidate on a 503 UNAVAILABLE', async () => {
    flaky.addFault({ mode: 'status', status: 503, count: 1 });
    const { data, response } = await openai.chat.completions
      .create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(data.choices[0]?.message.content, 'Hello from openai-up.');
    assert.equal(response.headers.get('x-switchyard-fallback'), 'flaky');
  });

  it('fails over on a 429 RESOURCE_EXHAUSTED, and the delay in its RetryInfo holds the provider off', async () => {
    flaky.addFault({
      mode: 'status',
      status: 429,
      count: 1,
      body: {
        error: {
          code: 429,
          message: 'Resource has been exhausted (e.g. check quota).',
          status: 'RESOURCE_EXHAUSTED',
          details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '30s' }],
        },
      },
    });
    const first = await openai.chat.completions
      .create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(first.data.choices[0]?.message.content, 'Hello from openai-up.');
    const line = await accessLine(first.response.headers.get('x-switchyard-request-id') ?? '');
    assert.match(String(line.fallback), /flaky/);
    // The breaker holds the provider for its retry delay: the next request goes straight to openai.
    await openai.chat.completions.create({ model: 'flaky-route', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(flaky.stats().total, 1);
    assert.equal(oai.stats().total, 2);
  });

  it("a key Gemini refuses (400 API_KEY_INVALID) is the gateway's credential failure: 502 upstream_auth_failed", async () => {
    await assert.rejects(
      openai.chat.completions.create({ model: 'bad-key-route', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 502);
        assert.equal(err.code, 'upstream_auth_failed');
        assert.ok(!JSON.stringify(err.error).includes(GEM_KEY));
        return true;
      },
    );
    assert.equal(badKey.stats().total, 1);
    // As after a 401: the chain stops at a refused credential, and the client hears of it at once.
    assert.equal(oai.stats().total, 0);
  });

  it("a 429 from the last candidate reaches the client in its own shape, with RetryInfo's delay as retry-after", async () => {
    gem.addFault({ mode: 'status', status: 429, count: 1 });
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'gem-route', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '1');
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.error.type, 'rate_limit_error');
    assert.match(body.error.message, /Mock fault: HTTP 429/);
  });

  it('never writes the key to its logs', () => {
    assert.ok(gw.output.length > 0);
    for (const line of gw.output) assert.ok(!line.includes(GEM_KEY), `a log line holds the key: ${line.slice(0, 200)}`);
  });
});
