import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatCount } from '../support/observe.js';

// The official openai npm client, unmodified, against a real gateway process: what users will
// actually run. Retries are off so that every error reaches the test as the gateway sent it.

let mock: MockProvider;
let gw: GatewayProcess;
let client: OpenAI;

const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello from the sdk test' }];

describe('the official openai client', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 6 });
    gw = await startGatewayProcess(
      baseConfig(
        { east: mock.baseUrl },
        {
          'gpt-4o-mini': { candidates: [{ provider: 'east' }] },
          'team-default': { candidates: [{ provider: 'east', model: 'gpt-4o' }] },
        },
      ),
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
  });

  after(async () => {
    await gw?.stop();
    await mock?.close();
  });

  it("a non-streaming create returns the provider's content, usage and model", async () => {
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'gpt-4o-mini');
    assert.equal(completion.choices.length, 1);
    assert.equal(completion.choices[0]!.message.role, 'assistant');
    assert.equal(completion.choices[0]!.message.content, 'Hello from east.');
    assert.equal(completion.choices[0]!.finish_reason, 'stop');
    const usage = completion.usage;
    assert.ok(usage !== undefined);
    assert.ok(usage.prompt_tokens > 0);
    assert.ok(usage.completion_tokens > 0);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  });

  it('a route whose upstream model differs answers with the upstream model, and the response is attributed', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'team-default', messages }).withResponse();
    assert.equal(data.model, 'gpt-4o', 'the provider saw and answered for the upstream model');
    assert.equal(data.choices[0]!.message.content, 'Hello from east.');
    assert.equal(response.headers.get('x-switchyard-provider'), 'east');
    assert.equal(response.headers.get('x-switchyard-model'), 'gpt-4o');
  });

  it("a streaming create yields chunks whose deltas concatenate to the provider's text", async () => {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
    let text = '';
    let chunks = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      chunks += 1;
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        finish = choice.finish_reason ?? finish;
      }
      assert.ok(chunks < 1000, 'runaway stream');
    }
    assert.equal(text, 'Hello from east.');
    assert.ok(chunks >= 6, `expected the 6 content chunks and more, got ${chunks}`);
    assert.equal(finish, 'stop');
  });

  it('a streaming create with include_usage receives the usage in its last chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let usageChunks = 0;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) text += choice.delta.content ?? '';
      if (chunk.usage) {
        usage = chunk.usage;
        usageChunks += 1;
        assert.deepEqual(chunk.choices, [], 'the usage chunk has no choices');
      }
    }
    assert.equal(text, 'Hello from east.');
    assert.equal(usageChunks, 1);
    assert.ok(usage);
    assert.ok(usage.prompt_tokens > 0);
    assert.ok(usage.completion_tokens > 0);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  });

  it('an unknown model raises NotFoundError with status 404 and code model_not_found, without calling the provider', async () => {
    const before = chatCount(mock);
    await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError, `not an APIError: ${String(err)}`);
      assert.ok(err instanceof OpenAI.NotFoundError, `not a NotFoundError: ${err.constructor.name}`);
      assert.equal(err.status, 404);
      assert.equal(err.code, 'model_not_found');
      assert.equal(err.param, 'model');
      assert.equal(err.type, 'invalid_request_error');
      assert.match(err.message, /no-such-model/);
      assert.equal(err.headers?.get('x-switchyard-provider'), null);
      return true;
    });
    await assert.rejects(
      client.chat.completions.create({ model: 'no-such-model', messages, stream: true }),
      (err: unknown) => err instanceof OpenAI.NotFoundError && err.code === 'model_not_found',
    );
    assert.equal(chatCount(mock), before);
  });

  it("an upstream failure raises an APIError with the gateway's 5xx status and code", async () => {
    mock.addFault({ mode: 'status', status: 500, count: 1 });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mini', messages }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.InternalServerError, `not an InternalServerError: ${String(err)}`);
      assert.equal(err.status, 502);
      assert.equal(err.code, 'upstream_error');
      return true;
    });
  });

  it('models.list() returns the routed models', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      assert.equal(model.object, 'model');
      ids.push(model.id);
      assert.ok(ids.length < 100, 'runaway pagination');
    }
    assert.deepEqual(ids.sort(), ['gpt-4o-mini', 'team-default']);
  });

  it('models.retrieve() returns a routed model and raises NotFoundError for another', async () => {
    const model = await client.models.retrieve('team-default');
    assert.equal(model.id, 'team-default');
    assert.equal(model.object, 'model');
    await assert.rejects(client.models.retrieve('no-such-model'), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError, `not a NotFoundError: ${String(err)}`);
      assert.equal(err.code, 'model_not_found');
      return true;
    });
  });
});
