import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

// The mock's legacy completions and its stateful Responses API, driven by the official
// OpenAI client as a gateway's upstream would be.

let mock: MockProvider;
let openai: OpenAI;

describe('mock provider: completions and the Responses API', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 3 });
    openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'unused', maxRetries: 0 });
  });
  after(() => mock?.close());
  beforeEach(() => mock.reset());

  it('a completion answers the greeting with usage; streamed, its pieces add up and the usage comes last when asked for', async () => {
    const plain = await openai.completions.create({ model: 'm', prompt: 'say hello' });
    assert.equal(plain.choices[0]?.text, 'Hello from east.');
    assert.deepEqual(plain.usage, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    const stream = await openai.completions.create({
      model: 'm',
      prompt: 'say hello',
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Hello from east.');
    assert.deepEqual(usage, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  });

  it('a response is kept: a continuation reports the conversation so far as cached input, and GET and DELETE find it', async () => {
    const first = await openai.responses.create({ model: 'm', input: 'hello there' });
    assert.match(first.id, /^resp_[0-9a-f]{48}$/);
    assert.equal(first.output_text, 'Hello from east.');
    assert.equal(first.usage?.input_tokens_details.cached_tokens, 0);
    const second = await openai.responses.create({ model: 'm', input: 'and again', previous_response_id: first.id });
    const context = (first.usage?.input_tokens ?? 0) + (first.usage?.output_tokens ?? 0);
    assert.equal(second.usage?.input_tokens_details.cached_tokens, context);
    assert.equal(second.usage?.input_tokens, context + 3);
    assert.equal((await openai.responses.retrieve(first.id)).id, first.id);
    await openai.responses.delete(first.id);
    await assert.rejects(openai.responses.retrieve(first.id), OpenAI.NotFoundError);
  });

  it('a streamed response runs created, deltas and completed, which the SDK assembles; it is kept once whole', async () => {
    const stream = openai.responses.stream({ model: 'm', input: 'hello' });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.equal(types.filter((t) => t === 'response.output_text.delta').length, 3);
    assert.equal(final.output_text, 'Hello from east.');
    assert.ok((final.usage?.output_tokens ?? 0) > 0);
    assert.equal((await openai.responses.retrieve(final.id)).status, 'completed');
  });

  it('an unknown previous_response_id is a 400 naming it; store: false keeps nothing', async () => {
    await assert.rejects(openai.responses.create({ model: 'm', input: 'x', previous_response_id: 'resp_nope' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.equal(err.code, 'previous_response_not_found');
      return true;
    });
    const unstored = await openai.responses.create({ model: 'm', input: 'x', store: false });
    await assert.rejects(openai.responses.retrieve(unstored.id), OpenAI.NotFoundError);
  });

  it("Azure's paths serve the same: completions under a deployment, responses on the resource", async () => {
    const completion = await fetch(`${mock.origin}/openai/deployments/d1/completions?api-version=x`, {
      method: 'POST',
      body: JSON.stringify({ model: 'd1', prompt: 'hi' }),
    });
    assert.equal(completion.status, 200);
    const created = await fetch(`${mock.origin}/openai/responses?api-version=x`, {
      method: 'POST',
      body: JSON.stringify({ model: 'd1', input: 'hi' }),
    });
    const { id } = (await created.json()) as { id: string };
    assert.equal((await fetch(`${mock.origin}/openai/responses/${id}?api-version=x`)).status, 200);
    assert.equal((await fetch(`${mock.origin}/openai/responses/${id}?api-version=x`, { method: 'DELETE' })).status, 200);
  });

  it('faults meet completions and new responses, not reads of kept ones; reset forgets every response', async () => {
    const kept = await openai.responses.create({ model: 'm', input: 'x' });
    mock.addFault({ mode: 'status', status: 503, count: 2 });
    await assert.rejects(openai.completions.create({ model: 'm', prompt: 'x' }), OpenAI.InternalServerError);
    assert.equal((await openai.responses.retrieve(kept.id)).id, kept.id);
    await assert.rejects(openai.responses.create({ model: 'm', input: 'x' }), OpenAI.InternalServerError);
    mock.reset();
    await assert.rejects(openai.responses.retrieve(kept.id), OpenAI.NotFoundError);
  });
});
