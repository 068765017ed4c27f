import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';

// Protocol translation, the server side (ADR 0011): both official SDKs, unmodified, against a real gateway process
// whose providers are real mock upstreams of each type (anthropic, openai, azure_openai).
// Retries are off so every error reaches the test as the gateway sent it.

let good: MockProvider;
let bad: MockProvider;
let gw: GatewayProcess;
let anthropic: Anthropic;
let openai: OpenAI;

/** micro-USD per token (USD per Mtok), integers so the expected cost is exact. */
const PRICE = { input_usd_per_mtok: 10, output_usd_per_mtok: 20, cache_read_usd_per_mtok: 2 };

const weather = {
  name: 'weather',
  description: 'Current weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};
const openaiWeather = {
  type: 'function' as const,
  function: { name: 'weather', description: 'Current weather', parameters: weather.input_schema },
};

function logLine(requestId: string): Promise<Record<string, unknown>> {
  return gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
}

function expectedCost(u: { inputTokens: number; outputTokens: number; cacheReadTokens?: number }): number {
  const read = u.cacheReadTokens ?? 0;
  return (
    (u.inputTokens - read) * PRICE.input_usd_per_mtok + read * PRICE.cache_read_usd_per_mtok + u.outputTokens * PRICE.output_usd_per_mtok
  );
}

describe('Anthropic Messages and provider types through the gateway', () => {
  before(async () => {
    good = await startMockProvider({ name: 'good', streamChunks: 4 });
    bad = await startMockProvider({ name: 'bad' });
    gw = await startGatewayProcess(
      {
        server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
        providers: {
          anth: { type: 'anthropic', base_url: good.baseUrl, api_key: { env: 'ANTH_KEY' }, timeout_ms: 5000 },
          oai: { type: 'openai', base_url: good.baseUrl, timeout_ms: 5000 },
          azure: {
            type: 'azure_openai',
            base_url: good.origin,
            api_version: '2024-10-21',
            api_key: { env: 'AZURE_KEY' },
            timeout_ms: 5000,
          },
          bad_anth: { type: 'anthropic', base_url: bad.baseUrl, timeout_ms: 5000 },
          bad_oai: { type: 'openai', base_url: bad.baseUrl, timeout_ms: 5000 },
        },
        routing: {
          routes: {
            claude: { candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
            gpt: { candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
            'azure-gpt': { candidates: [{ provider: 'azure', deployment: 'gpt4o-deploy' }] },
            failover: {
              candidates: [
                { provider: 'bad_anth', model: 'claude-sonnet-4-5' },
                { provider: 'oai', model: 'gpt-4o-mini' },
              ],
            },
            limited: {
              candidates: [
                { provider: 'bad_anth', model: 'claude-sonnet-4-5' },
                { provider: 'bad_oai', model: 'gpt-4o-mini' },
              ],
            },
          },
        },
        pricing: { models: { 'claude-sonnet-4-5': PRICE, 'gpt-4o-mini': PRICE, 'gpt4o-deploy': PRICE } },
      },
      { env: { ANTH_KEY: 'sk-ant-test-key', AZURE_KEY: 'azure-test-key' } },
    );
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
  });

  after(async () => {
    await gw?.stop();
    await good?.close();
    await bad?.close();
  });

  beforeEach(() => {
    good.reset();
    bad.reset();
  });

  describe('Anthropic client -> anthropic provider (pass-through)', () => {
    it('a plain message arrives as the provider wrote it, sent with x-api-key and anthropic-version, never authorization', async () => {
      const message = await anthropic.messages.create({
        model: 'claude',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello there' }],
      });
      assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from good.' }]);
      assert.equal(message.model, 'claude-sonnet-4-5');
      assert.equal(message.stop_reason, 'end_turn');
      const seen = good.stats().recent.at(-1);
      assert.equal(seen?.path, '/v1/messages');
      assert.equal(seen?.headers['x-api-key'], 'sk-ant-test-key');
      assert.equal(seen?.headers.authorization, undefined);
      assert.equal(typeof seen?.headers['anthropic-version'], 'string');
    });

    it('a streamed message yields the text and its usage, and the access line bills what message_start and message_delta said', async () => {
      const requestId = `anth-stream-${Date.now()}`;
      const stream = anthropic.messages.stream(
        { model: 'claude', max_tokens: 64, messages: [{ role: 'user', content: 'hello stream' }] },
        { headers: { 'x-request-id': requestId } },
      );
      let text = '';
      stream.on('text', (t) => {
        text += t;
      });
      const final = await stream.finalMessage();
      assert.equal(text, 'Hello from good.');
      const line = await logLine(requestId);
      assert.equal(line.input_tokens, final.usage.input_tokens);
      assert.equal(line.output_tokens, final.usage.output_tokens);
      assert.equal(line.cost_micro_usd, expectedCost({ inputTokens: final.usage.input_tokens, outputTokens: final.usage.output_tokens }));
    });

    it('a tool-use round trip works, plain and streamed', async () => {
      const first = await anthropic.messages.create({
        model: 'claude',
        max_tokens: 64,
        tools: [weather],
        messages: [{ role: 'user', content: 'use the weather tool' }],
      });
      assert.equal(first.stop_reason, 'tool_use');
      const call = first.content.find((b) => b.type === 'tool_use');
      assert.ok(call !== undefined && call.type === 'tool_use');
      assert.equal(call.name, 'weather');
      const stream = anthropic.messages.stream({
        model: 'claude',
        max_tokens: 64,
        tools: [weather],
        messages: [
          { role: 'user', content: 'use the weather tool' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] },
        ],
      });
      const final = await stream.finalMessage();
      assert.deepEqual(final.content, [{ type: 'text', text: 'Hello from good. The tool said: sunny' }]);
    });

    it('cache tokens reach the client and the bill exactly (cache writes and reads)', async () => {
      const system = [
        { type: 'text' as const, text: 'You are a careful assistant. '.repeat(20), cache_control: { type: 'ephemeral' as const } },
      ];
      const ask = (id: string) =>
        anthropic.messages.create(
          { model: 'claude', max_tokens: 32, system, messages: [{ role: 'user', content: 'hello cache' }] },
          { headers: { 'x-request-id': id } },
        );
      const id1 = `cache-w-${Date.now()}`;
      const wrote = await ask(id1);
      assert.ok((wrote.usage.cache_creation_input_tokens ?? 0) > 0);
      const id2 = `cache-r-${Date.now()}`;
      const read = await ask(id2);
      const cached = read.usage.cache_read_input_tokens ?? 0;
      assert.ok(cached > 0);
      const line = await logLine(id2);
      const inputTokens = read.usage.input_tokens + cached + (read.usage.cache_creation_input_tokens ?? 0);
      assert.equal(line.input_tokens, inputTokens);
      assert.equal(line.cost_micro_usd, expectedCost({ inputTokens, outputTokens: read.usage.output_tokens, cacheReadTokens: cached }));
    });
  });

  describe('Anthropic client -> openai provider (translated)', () => {
    it('a plain message is answered in Anthropic shape, with the usage billed', async () => {
      const requestId = `a2o-${Date.now()}`;
      const message = await anthropic.messages.create(
        { model: 'gpt', max_tokens: 64, system: 'be brief', messages: [{ role: 'user', content: 'hello there' }] },
        { headers: { 'x-request-id': requestId } },
      );
      assert.equal(message.type, 'message');
      assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from good.' }]);
      assert.equal(message.stop_reason, 'end_turn');
      assert.equal(good.stats().recent.at(-1)?.path, '/v1/chat/completions');
      const line = await logLine(requestId);
      assert.equal(line.input_tokens, message.usage.input_tokens);
      assert.equal(line.output_tokens, message.usage.output_tokens);
      assert.equal(
        line.cost_micro_usd,
        expectedCost({ inputTokens: message.usage.input_tokens, outputTokens: message.usage.output_tokens }),
      );
    });

    it('a streamed message is translated event by event, usage included', async () => {
      const requestId = `a2o-stream-${Date.now()}`;
      const stream = anthropic.messages.stream(
        { model: 'gpt', max_tokens: 64, messages: [{ role: 'user', content: 'hello stream' }] },
        { headers: { 'x-request-id': requestId } },
      );
      const final = await stream.finalMessage();
      assert.deepEqual(final.content, [{ type: 'text', text: 'Hello from good.' }]);
      assert.ok(final.usage.output_tokens > 0);
      const line = await logLine(requestId);
      assert.equal(line.output_tokens, final.usage.output_tokens);
      assert.equal(line.input_tokens, final.usage.input_tokens);
    });

    it('a tool-use round trip works through the translation, plain and streamed', async () => {
      const first = await anthropic.messages.create({
        model: 'gpt',
        max_tokens: 64,
        tools: [weather],
        messages: [{ role: 'user', content: 'use the weather tool' }],
      });
      assert.equal(first.stop_reason, 'tool_use');
      const call = first.content.find((b) => b.type === 'tool_use');
      assert.ok(call !== undefined && call.type === 'tool_use');
      assert.deepEqual(call.input, { city: 'mock' });
      const streamedCall = await anthropic.messages
        .stream({ model: 'gpt', max_tokens: 64, tools: [weather], messages: [{ role: 'user', content: 'use the weather tool' }] })
        .finalMessage();
      assert.equal(streamedCall.stop_reason, 'tool_use');
      const final = await anthropic.messages.create({
        model: 'gpt',
        max_tokens: 64,
        tools: [weather],
        messages: [
          { role: 'user', content: 'use the weather tool' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] },
        ],
      });
      assert.deepEqual(final.content, [{ type: 'text', text: 'Hello from good. The tool said: sunny' }]);
    });
  });

  describe('OpenAI client -> anthropic provider (translated)', () => {
    it('a plain completion is answered in OpenAI shape, and the usage survives exactly', async () => {
      const requestId = `o2a-${Date.now()}`;
      const completion = await openai.chat.completions.create(
        { model: 'claude', messages: [{ role: 'user', content: 'hello there' }] },
        { headers: { 'x-request-id': requestId } },
      );
      assert.equal(completion.object, 'chat.completion');
      assert.equal(completion.choices[0]?.message.content, 'Hello from good.');
      assert.equal(completion.choices[0]?.finish_reason, 'stop');
      const seen = good.stats().recent.at(-1);
      assert.equal(seen?.path, '/v1/messages');
      assert.equal((JSON.parse(seen?.body ?? '{}') as { max_tokens?: number }).max_tokens, 4096, 'Anthropic requires max_tokens');
      const direct = (await (
        await fetch(`${good.origin}/v1/messages`, { method: 'POST', body: seen?.body, headers: { 'content-type': 'application/json' } })
      ).json()) as { usage: { input_tokens: number; output_tokens: number } };
      assert.equal(completion.usage?.prompt_tokens, direct.usage.input_tokens);
      assert.equal(completion.usage?.completion_tokens, direct.usage.output_tokens);
      const line = await logLine(requestId);
      assert.equal(line.cost_micro_usd, expectedCost({ inputTokens: direct.usage.input_tokens, outputTokens: direct.usage.output_tokens }));
    });

    it('a streamed completion is translated, with the usage chunk when asked for', async () => {
      const stream = await openai.chat.completions.create({
        model: 'claude',
        messages: [{ role: 'user', content: 'hello stream' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        usage = chunk.usage ?? usage;
      }
      assert.equal(text, 'Hello from good.');
      assert.ok((usage?.completion_tokens ?? 0) > 0);
    });

    it('a tool-call round trip works through the translation, plain and streamed', async () => {
      const first = await openai.chat.completions.create({
        model: 'claude',
        tools: [openaiWeather],
        messages: [{ role: 'user', content: 'use the weather tool' }],
      });
      assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
      const call = first.choices[0]?.message.tool_calls?.[0];
      assert.ok(call !== undefined && call.type === 'function');
      assert.equal(call.function.name, 'weather');
      const stream = await openai.chat.completions.create({
        model: 'claude',
        stream: true,
        tools: [openaiWeather],
        messages: [
          { role: 'user', content: 'use the weather tool' },
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: 'sunny' },
        ],
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'Hello from good. The tool said: sunny');
    });

    it('a field Anthropic cannot express (n: 2) is refused with BadRequestError naming it, before any upstream call', async () => {
      const before = good.stats().requests['POST /v1/messages'] ?? 0;
      await assert.rejects(
        openai.chat.completions.create({ model: 'claude', n: 2, messages: [{ role: 'user', content: 'hi' }] }),
        (err: unknown) => {
          assert.ok(err instanceof OpenAI.BadRequestError, `not a BadRequestError: ${String(err)}`);
          assert.equal(err.param, 'n');
          assert.match(err.message, /\bn\b/);
          return true;
        },
      );
      assert.equal(good.stats().requests['POST /v1/messages'] ?? 0, before);
    });
  });

  describe('OpenAI client -> azure_openai provider', () => {
    it('a plain and a streamed completion go to the deployment path with api-version and api-key', async () => {
      const completion = await openai.chat.completions.create({ model: 'azure-gpt', messages: [{ role: 'user', content: 'hello azure' }] });
      assert.equal(completion.choices[0]?.message.content, 'Hello from good.');
      const seen = good.stats().recent.at(-1);
      assert.equal(seen?.path, '/openai/deployments/gpt4o-deploy/chat/completions');
      assert.equal(seen?.headers['api-key'], 'azure-test-key');
      assert.equal(seen?.headers.authorization, undefined);
      const stream = await openai.chat.completions.create({
        model: 'azure-gpt',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'Hello from good.');
    });
  });

  describe('models and token counts', () => {
    it("GET /v1/models answers the Anthropic SDK in Anthropic's list shape and the OpenAI SDK in OpenAI's", async () => {
      const page = await anthropic.models.list();
      const ids = page.data.map((m) => m.id).sort();
      assert.deepEqual(ids, ['azure-gpt', 'claude', 'failover', 'gpt', 'limited']);
      assert.equal(page.data[0]?.type, 'model');
      assert.ok(!Number.isNaN(Date.parse(page.data[0]?.created_at ?? '')));
      const one = await anthropic.models.retrieve('claude');
      assert.equal(one.id, 'claude');
      assert.equal(one.type, 'model');
      const list = await openai.models.list();
      assert.equal(list.data.length, 5);
      assert.equal(list.data[0]?.object, 'model');
    });

    it('count_tokens is relayed to an anthropic provider and estimated for an openai one', async () => {
      const params = { messages: [{ role: 'user' as const, content: 'count these words please' }] };
      const counted = await anthropic.messages.countTokens({ model: 'claude', ...params });
      const direct = (await (
        await fetch(`${good.origin}/v1/messages/count_tokens`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'claude-sonnet-4-5', ...params }),
        })
      ).json()) as { input_tokens: number };
      assert.equal(counted.input_tokens, direct.input_tokens);
      const { data, response } = await anthropic.messages.countTokens({ model: 'gpt', ...params }).withResponse();
      assert.ok(data.input_tokens > 0);
      assert.equal(response.headers.get('x-switchyard-estimated'), 'true');
    });

    it('count_tokens on a route with no anthropic candidate counts the text with o200k: one user message "hello world" is at most 5 tokens', async () => {
      const { data, response } = await anthropic.messages
        .countTokens({ model: 'gpt', messages: [{ role: 'user', content: 'hello world' }] })
        .withResponse();
      assert.ok(data.input_tokens >= 2 && data.input_tokens <= 5, `${data.input_tokens} tokens`);
      assert.equal(response.headers.get('x-switchyard-estimated'), 'true');
    });
  });

  describe('embeddings', () => {
    it('are routed to openai and azure_openai providers and billed by input tokens', async () => {
      const requestId = `emb-${Date.now()}`;
      const plain = await openai.embeddings.create(
        { model: 'gpt', input: ['one text', 'two texts'] },
        { headers: { 'x-request-id': requestId } },
      );
      assert.equal(plain.data.length, 2);
      assert.ok(plain.usage.prompt_tokens > 0);
      const line = await logLine(requestId);
      assert.equal(line.input_tokens, plain.usage.prompt_tokens);
      assert.equal(line.cost_micro_usd, plain.usage.prompt_tokens * PRICE.input_usd_per_mtok);
      const azure = await openai.embeddings.create({ model: 'azure-gpt', input: 'hello' });
      assert.equal(azure.data.length, 1);
      assert.equal(good.stats().recent.at(-1)?.path, '/openai/deployments/gpt4o-deploy/embeddings');
    });

    it('skip anthropic candidates, and a route with nothing else is a BadRequestError naming the problem', async () => {
      const served = await openai.embeddings.create({ model: 'failover', input: 'hello' });
      assert.equal(served.data.length, 1);
      assert.equal(bad.stats().requests['POST /v1/messages'] ?? 0, 0);
      await assert.rejects(openai.embeddings.create({ model: 'claude', input: 'hello' }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `not a BadRequestError: ${String(err)}`);
        assert.match(err.message, /no embeddings endpoint/);
        return true;
      });
    });
  });

  describe('errors and failover', () => {
    it('an unknown model is NotFoundError in both SDKs, the Anthropic one in Anthropic shape', async () => {
      await assert.rejects(
        anthropic.messages.create({ model: 'nope', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
        (err: unknown) => {
          assert.ok(err instanceof Anthropic.NotFoundError, `not a NotFoundError: ${String(err)}`);
          assert.equal((err.error as { type?: string }).type, 'error');
          assert.equal((err.error as { error?: { type?: string } }).error?.type, 'not_found_error');
          return true;
        },
      );
      await assert.rejects(
        openai.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
        OpenAI.NotFoundError,
      );
    });

    it('a Messages request without max_tokens is an invalid_request_error', async () => {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'claude', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, 'error');
      assert.equal(body.error.type, 'invalid_request_error');
      assert.match(body.error.message, /max_tokens/);
    });

    it("an upstream's 400 reaches each client in its own shape when the protocols differ, with the upstream's message", async () => {
      good.addFault({ mode: 'status', status: 400, count: 1 });
      await assert.rejects(
        openai.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'hi' }] }),
        (err: unknown) => {
          assert.ok(err instanceof OpenAI.BadRequestError, `not a BadRequestError: ${String(err)}`);
          assert.equal(err.type, 'invalid_request_error');
          return true;
        },
      );
      good.addFault({ mode: 'status', status: 400, count: 1 });
      await assert.rejects(
        anthropic.messages.create({ model: 'gpt', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
        (err: unknown) => {
          assert.ok(err instanceof Anthropic.BadRequestError, `not a BadRequestError: ${String(err)}`);
          assert.equal((err.error as { error?: { type?: string } }).error?.type, 'invalid_request_error');
          return true;
        },
      );
    });

    it('a stream cut after it started ends with an error event in the client protocol, pass-through or translated', async () => {
      for (const model of ['claude', 'gpt']) {
        const requestId = `cut-${model}-${Date.now()}`;
        good.addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
        const stream = anthropic.messages.stream(
          { model, max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] },
          { headers: { 'x-request-id': requestId } },
        );
        await assert.rejects(stream.finalMessage(), (err: unknown) => {
          assert.ok(err instanceof Anthropic.APIError, `${model}: not an APIError: ${String(err)}`);
          assert.match(err.message, /interrupted/);
          return true;
        });
        const line = await logLine(requestId);
        assert.equal(line.status, 'partial', model);
      }
    });

    it('upstream 429 on every candidate is RateLimitError in both SDKs', async () => {
      bad.addFault({ mode: 'status', status: 429 });
      await assert.rejects(
        anthropic.messages.create({ model: 'limited', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
        Anthropic.RateLimitError,
      );
      await assert.rejects(
        openai.chat.completions.create({ model: 'limited', messages: [{ role: 'user', content: 'hi' }] }),
        OpenAI.RateLimitError,
      );
      bad.clearFaults();
    });

    it('an anthropic candidate failing with 500 fails over to an openai candidate, still answering the Anthropic client in its shape', async () => {
      bad.addFault({ mode: 'status', status: 500 });
      const message = await anthropic.messages.create({ model: 'failover', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(message.type, 'message');
      assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from good.' }]);
      const streamed = await anthropic.messages
        .stream({ model: 'failover', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] })
        .finalMessage();
      assert.deepEqual(streamed.content, [{ type: 'text', text: 'Hello from good.' }]);
      bad.clearFaults();
    });
  });
});
