import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

let mock: MockProvider;
let anthropic: Anthropic;
let openai: OpenAI;

const weather = {
  name: 'weather',
  description: 'Current weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
};
const openaiWeather = {
  type: 'function' as const,
  function: { name: 'weather', description: 'Current weather', parameters: weather.input_schema },
};

function messages(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${mock.origin}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** Reads an Anthropic SSE body into its event names, checking each names its payload's type. */
function eventTypes(text: string): string[] {
  return text
    .split('\n\n')
    .filter((b) => b !== '')
    .map((block) => {
      const [eventLine, dataLine] = block.split('\n');
      const name = eventLine?.slice('event: '.length) ?? '';
      assert.equal((JSON.parse(dataLine?.slice('data: '.length) ?? '') as { type: string }).type, name);
      return name;
    });
}

describe('mock provider: Anthropic messages', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    anthropic = new Anthropic({ baseURL: mock.origin, apiKey: 'sk-ant-mock', maxRetries: 0 });
    openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-mock', maxRetries: 0 });
  });
  after(() => mock.close());
  beforeEach(() => mock.reset());

  it('the Anthropic SDK reads a plain message with the greeting, end_turn and usage', async () => {
    const message = await anthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'x'.repeat(40) }],
    });
    assert.match(message.id, /^msg_/);
    assert.equal(message.model, 'claude-sonnet-4-5');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from east.' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.usage, { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 4 });
    // The SDK sends its key as x-api-key or as a bearer token, depending on version and options.
    const headers = mock.stats().recent[0]?.headers ?? {};
    assert.ok(headers['x-api-key'] === 'sk-ant-mock' || headers.authorization === 'Bearer sk-ant-mock');
  });

  it('a stream sends message_start, a text block with ping, deltas, message_delta and message_stop', async () => {
    const res = await messages(
      { model: 'm', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-mock-chunks': '3' },
    );
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.deepEqual(eventTypes(await res.text()), [
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, [{ type: 'text', text: 'Hello from east.' }]);
    assert.equal(final.usage.output_tokens, 4);
  });

  it('asking for a tool gets a tool_use block with placeholder input, plain and streamed', async () => {
    const ask = {
      model: 'm',
      max_tokens: 50,
      tools: [weather],
      messages: [{ role: 'user' as const, content: 'Use the weather tool for Oslo' }],
    };
    const plain = await anthropic.messages.create(ask);
    assert.equal(plain.stop_reason, 'tool_use');
    const block = plain.content[0];
    assert.equal(block?.type, 'tool_use');
    if (block?.type === 'tool_use') {
      assert.match(block.id, /^toolu_/);
      assert.equal(block.name, 'weather');
      assert.deepEqual(block.input, { city: 'mock', days: 1 });
    }
    const streamed = await anthropic.messages.stream(ask).finalMessage();
    assert.equal(streamed.stop_reason, 'tool_use');
    assert.deepEqual(streamed.content[0]?.type === 'tool_use' ? streamed.content[0].input : null, { city: 'mock', days: 1 });
  });

  it('without the word "tool" or with tool_choice none the answer is text; tool_choice any forces a call', async () => {
    const base = { model: 'm', max_tokens: 50, tools: [weather] };
    const plain = await anthropic.messages.create({ ...base, messages: [{ role: 'user', content: 'Hello' }] });
    assert.equal(plain.stop_reason, 'end_turn');
    const none = await anthropic.messages.create({
      ...base,
      tool_choice: { type: 'none' },
      messages: [{ role: 'user', content: 'use a tool' }],
    });
    assert.equal(none.stop_reason, 'end_turn');
    const forced = await anthropic.messages.create({
      ...base,
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Hello' }],
    });
    assert.equal(forced.stop_reason, 'tool_use');
  });

  it('a tool_result turn gets a final text answer that quotes the result', async () => {
    const message = await anthropic.messages.create({
      model: 'm',
      max_tokens: 50,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Use the weather tool' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny, 21 C' }] },
      ],
    });
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from east. The tool said: Sunny, 21 C' }]);
  });

  it('cache_control writes the marked prefix to the cache once, then reads it', async () => {
    const body = {
      model: 'm',
      max_tokens: 10,
      system: [{ type: 'text' as const, text: 's'.repeat(400), cache_control: { type: 'ephemeral' as const } }],
      messages: [{ role: 'user' as const, content: 'q'.repeat(40) }],
    };
    const first = await anthropic.messages.create(body);
    assert.deepEqual(first.usage, { input_tokens: 10, cache_creation_input_tokens: 100, cache_read_input_tokens: 0, output_tokens: 4 });
    const second = await anthropic.messages.create(body);
    assert.deepEqual(second.usage, { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 100, output_tokens: 4 });
    const streamed = await anthropic.messages.stream(body).finalMessage();
    assert.equal(streamed.usage.cache_read_input_tokens, 100);
    assert.equal(streamed.usage.input_tokens, 10);
  });

  it('count_tokens counts the whole prompt, tools and system included', async () => {
    const counted = await anthropic.messages.countTokens({
      model: 'm',
      system: 's'.repeat(40),
      messages: [{ role: 'user', content: 'q'.repeat(40) }],
    });
    assert.deepEqual(counted, { input_tokens: 20 });
  });

  it('a malformed request answers 400 in the Anthropic error shape', async () => {
    const res = await messages({ model: 'm', messages: [] });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /max_tokens/);
  });

  it('a status fault answers in the Anthropic shape, and the SDK sees its type', async () => {
    mock.addFault({ mode: 'status', status: 529, count: 1 });
    await assert.rejects(
      anthropic.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof Anthropic.APIError);
        assert.equal(err.status, 529);
        assert.equal((err.error as { error: { type: string } }).error.type, 'overloaded_error');
        return true;
      },
    );
  });

  it('cut_stream drops a message stream after K deltas; close and hang apply too', async () => {
    mock.addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
    const res = await messages({ model: 'm', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(res.text());
    mock.addFault({ mode: 'close', count: 1 });
    await assert.rejects(messages({ model: 'm', max_tokens: 5, messages: [] }), TypeError);
    mock.addFault({ mode: 'hang', count: 1 });
    const controller = new AbortController();
    const pending = fetch(`${mock.origin}/v1/messages/count_tokens`, { method: 'POST', body: '{}', signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(pending, { name: 'AbortError' });
  });

  it('a latency fault delays a message', async () => {
    mock.addFault({ mode: 'latency', latency_ms: 150, count: 1 });
    const started = performance.now();
    await anthropic.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    assert.ok(performance.now() - started >= 140);
  });
});

describe('mock provider: OpenAI tool calls', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'west' });
    openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-mock', maxRetries: 0 });
  });
  after(() => mock.close());

  it('asking for a tool gets tool_calls and finish_reason tool_calls, plain and streamed', async () => {
    const ask = { model: 'm', tools: [openaiWeather], messages: [{ role: 'user' as const, content: 'use the weather tool' }] };
    const plain = await openai.chat.completions.create(ask);
    assert.equal(plain.choices[0]?.finish_reason, 'tool_calls');
    const call = plain.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, 'weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'mock', days: 1 });
    assert.equal(plain.choices[0]?.message.content, null);

    const streamed = await openai.chat.completions.stream({ ...ask, stream_options: { include_usage: true } }).finalChatCompletion();
    assert.equal(streamed.choices[0]?.finish_reason, 'tool_calls');
    const scall = streamed.choices[0]?.message.tool_calls?.[0];
    assert.ok(scall?.type === 'function');
    assert.deepEqual(JSON.parse(scall.function.arguments), { city: 'mock', days: 1 });
    assert.ok((streamed.usage?.completion_tokens ?? 0) > 0);
  });

  it('tool messages get a final text answer quoting the results', async () => {
    const done = await openai.chat.completions.create({
      model: 'm',
      tools: [openaiWeather],
      messages: [
        { role: 'user', content: 'use the weather tool' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Rain' },
      ],
    });
    assert.equal(done.choices[0]?.finish_reason, 'stop');
    assert.equal(done.choices[0]?.message.content, 'Hello from west. The tool said: Rain');
  });

  it('tool_choice naming a function forces it', async () => {
    const other = { type: 'function' as const, function: { name: 'clock', parameters: { type: 'object', properties: {} } } };
    const res = await openai.chat.completions.create({
      model: 'm',
      tools: [openaiWeather, other],
      tool_choice: { type: 'function', function: { name: 'clock' } },
      messages: [{ role: 'user', content: 'hi' }],
    });
    const call = res.choices[0]?.message.tool_calls?.[0];
    assert.equal(call?.type === 'function' ? call.function.name : null, 'clock');
  });
});
