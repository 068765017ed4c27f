import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { AnthropicUsageReader, SseParser, StreamTranslator } from '../../src/providers/index.js';

// --- upstream streams, as the providers send them --------------------------------------

function openaiChunk(
  delta: Record<string, unknown>,
  finish: string | null = null,
  usage?: Record<string, unknown>,
): Record<string, unknown> {
  const chunk: Record<string, unknown> = {
    id: 'chatcmpl-9',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-4o',
    choices: usage === undefined ? [{ index: 0, delta, logprobs: null, finish_reason: finish }] : [],
  };
  if (usage !== undefined) chunk.usage = usage;
  return chunk;
}

function openaiSse(chunks: Record<string, unknown>[], done = true): string {
  return chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + (done ? 'data: [DONE]\n\n' : '');
}

const openaiText = openaiSse([
  openaiChunk({ role: 'assistant', content: '' }),
  openaiChunk({ content: 'Hel' }),
  openaiChunk({ content: 'lo ☃' }),
  openaiChunk({}, 'stop'),
  openaiChunk({}, null, { prompt_tokens: 50, completion_tokens: 3, total_tokens: 53, prompt_tokens_details: { cached_tokens: 40 } }),
]);

const openaiTools = openaiSse([
  openaiChunk({ role: 'assistant', content: null }),
  openaiChunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '' } }] }),
  openaiChunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  openaiChunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
  openaiChunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'time', arguments: '{"tz":"CET"}' } }] }),
  openaiChunk({}, 'tool_calls'),
  openaiChunk({}, null, { prompt_tokens: 80, completion_tokens: 20, total_tokens: 100 }),
]);

function anthropicEvent(payload: Record<string, unknown>): string {
  return `event: ${payload.type as string}\ndata: ${JSON.stringify(payload)}\n\n`;
}

const anthropicStart = anthropicEvent({
  type: 'message_start',
  message: {
    id: 'msg_9',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 },
  },
});

const anthropicTextAndTools =
  anthropicStart +
  anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
  'event: ping\ndata: {"type": "ping"}\n\n' +
  anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } }) +
  anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'look.' } }) +
  anthropicEvent({ type: 'content_block_stop', index: 0 }) +
  anthropicEvent({
    type: 'content_block_start',
    index: 1,
    content_block: { type: 'tool_use', id: 'toolu_a', name: 'weather', input: {} },
  }) +
  anthropicEvent({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } }) +
  anthropicEvent({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city": "Os' } }) +
  anthropicEvent({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'lo"}' } }) +
  anthropicEvent({ type: 'content_block_stop', index: 1 }) +
  anthropicEvent({ type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_b', name: 'time', input: {} } }) +
  anthropicEvent({ type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"tz":"CET"}' } }) +
  anthropicEvent({ type: 'content_block_stop', index: 2 }) +
  anthropicEvent({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 42 } }) +
  anthropicEvent({ type: 'message_stop' });

// --- helpers ------------------------------------------------------------------------------

/** Feeds `text` to the translator in pieces of the given sizes (cycled), then ends it. */
function translate(t: StreamTranslator, text: string, sizes: number[] = [7]): string {
  const bytes = Buffer.from(text);
  let out = '';
  for (let i = 0, k = 0; i < bytes.length; k++) {
    const size = sizes[k % sizes.length] as number;
    out += t.push(bytes.subarray(i, i + size));
    i += size;
  }
  return out + t.end();
}

interface Sse {
  event: string;
  data: string;
}

function parse(text: string): Sse[] {
  const events: Sse[] = [];
  const parser = new SseParser();
  parser.push(text, (event, data) => events.push({ event, data }));
  parser.end((event, data) => events.push({ event, data }));
  return events;
}

function anthropicEvents(text: string): Record<string, any>[] {
  return parse(text).map((e) => {
    const payload = JSON.parse(e.data) as Record<string, any>;
    assert.equal(e.event, payload.type, 'the event name repeats the payload type');
    return payload;
  });
}

function openaiEvents(text: string): (Record<string, any> | '[DONE]')[] {
  return parse(text).map((e) => (e.data === '[DONE]' ? '[DONE]' : (JSON.parse(e.data) as Record<string, any>)));
}

// --- tests ----------------------------------------------------------------------------------

describe('the SSE parser', () => {
  const text = 'event: a\ndata: {"x":1}\n\n: a comment\ndata: line one\ndata: line two\n\nid: 5\nevent: b\ndata:tight\n\n';
  const expected = [
    { event: 'a', data: '{"x":1}' },
    { event: '', data: 'line one\nline two' },
    { event: 'b', data: 'tight' },
  ];

  it('reads events, multi-line data and comments, split at every byte boundary', () => {
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const got: Sse[] = [];
      const parser = new SseParser();
      const listen = (event: string, data: string): number => got.push({ event, data });
      parser.push(bytes.subarray(0, cut), listen);
      parser.push(bytes.subarray(cut), listen);
      parser.end(listen);
      assert.deepEqual(got, expected, `cut at ${cut}`);
    }
  });

  it('keeps a UTF-8 character split across chunks, and reads CRLF line ends', () => {
    const got: Sse[] = [];
    const parser = new SseParser();
    const bytes = Buffer.from('data: ☃\r\n\r\n');
    for (const b of bytes) parser.push(Buffer.from([b]), (event, data) => got.push({ event, data }));
    assert.deepEqual(got, [{ event: '', data: '☃' }]);
  });
});

describe('OpenAI upstream stream -> Anthropic client', () => {
  it('text only: message_start, ping, one text block, message_delta with end_turn and usage, message_stop', () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const events = anthropicEvents(translate(t, openaiText, [1, 5, 13]));
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.equal(events[0]?.message.id, 'chatcmpl-9');
    assert.equal(events[0]?.message.model, 'gpt-4o');
    assert.deepEqual(events[2]?.content_block, { type: 'text', text: '' });
    assert.equal(events[3]?.delta.text + events[4]?.delta.text, 'Hello ☃');
    assert.deepEqual(events[6]?.delta, { stop_reason: 'end_turn', stop_sequence: null });
    assert.deepEqual(events[6]?.usage, { input_tokens: 10, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 40 });
    assert.deepEqual(t.usage, { inputTokens: 50, outputTokens: 3, cacheReadTokens: 40 });
    assert.equal(t.complete, true);
  });

  it('tool use: one tool_use block per call with streamed input_json_delta, stop_reason tool_use', () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const events = anthropicEvents(translate(t, openaiTools, [3]));
    const starts = events.filter((e) => e.type === 'content_block_start');
    assert.deepEqual(
      starts.map((e) => [e.index, e.content_block]),
      [
        [0, { type: 'tool_use', id: 'call_a', name: 'weather', input: {} }],
        [1, { type: 'tool_use', id: 'call_b', name: 'time', input: {} }],
      ],
    );
    const json = (index: number): string =>
      events
        .filter((e) => e.type === 'content_block_delta' && e.index === index)
        .map((e) => e.delta.partial_json)
        .join('');
    assert.deepEqual(JSON.parse(json(0)), { city: 'Oslo' });
    assert.deepEqual(JSON.parse(json(1)), { tz: 'CET' });
    assert.deepEqual(
      events.filter((e) => e.type === 'content_block_stop').map((e) => e.index),
      [0, 1],
    );
    assert.equal(events.at(-2)?.delta.stop_reason, 'tool_use');
    assert.equal(events.at(-2)?.usage.input_tokens, 80);
  });

  it('the first upstream event yields client bytes at once', () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const first = openaiText.slice(0, openaiText.indexOf('\n\n') + 2);
    assert.match(t.push(Buffer.from(first)), /^event: message_start\n/);
  });

  it('a stream cut midway ends with an Anthropic error event and keeps the usage seen', () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const cut = openaiText.slice(0, openaiText.indexOf('lo ☃'));
    const events = anthropicEvents(translate(t, cut));
    const last = events.at(-1);
    assert.deepEqual(last, {
      type: 'error',
      error: { type: 'api_error', message: 'the upstream stream ended before the answer was complete' },
    });
    assert.equal(t.complete, false);
    assert.equal(t.push(Buffer.from('data: {}\n\n')), '', 'nothing after the end');
  });

  it('fail(message) ends the client stream with an error event, once', () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    t.push(Buffer.from(openaiText.slice(0, 200)));
    const out = t.fail('upstream timed out');
    assert.equal(out, 'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"upstream timed out"}}\n\n');
    assert.equal(t.fail('again'), '');
    assert.equal(t.end(), '');
  });

  it('an upstream error event becomes an Anthropic error event', () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const events = anthropicEvents(translate(t, `data: ${JSON.stringify({ error: { message: 'boom', type: 'server_error' } })}\n\n`));
    assert.deepEqual(events, [{ type: 'error', error: { type: 'api_error', message: 'boom' } }]);
  });

  it("Azure's opening prompt-filter chunk is skipped, and a tool id repeated on every delta opens one block", () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const azurePrelude = { id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: [{ prompt_index: 0 }] };
    const text = openaiSse([
      azurePrelude,
      openaiChunk({ role: 'assistant' }),
      openaiChunk({ tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'f', arguments: '{"a"' } }] }),
      openaiChunk({ tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { arguments: ':1}' } }] }),
      openaiChunk({ tool_calls: [{ index: 1, function: { name: 'g', arguments: '{}' } }] }),
      openaiChunk({}, 'tool_calls'),
    ]);
    const events = anthropicEvents(translate(t, text));
    assert.equal(events[0]?.message.id, 'chatcmpl-9');
    const starts = events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block);
    assert.deepEqual(starts, [
      { type: 'tool_use', id: 'call_x', name: 'f', input: {} },
      { type: 'tool_use', id: 'call_1', name: 'g', input: {} },
    ]);
    const json = events.filter((e) => e.index === 0 && e.type === 'content_block_delta').map((e) => e.delta.partial_json);
    assert.equal(json.join(''), '{"a":1}');
  });

  it('an upstream that ends after its finish chunk without [DONE] still completes', () => {
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const text = openaiSse([openaiChunk({ role: 'assistant', content: 'hi' }), openaiChunk({}, 'length')], false);
    const events = anthropicEvents(translate(t, text));
    assert.equal(events.at(-1)?.type, 'message_stop');
    assert.equal(events.at(-2)?.delta.stop_reason, 'max_tokens');
  });
});

describe('Anthropic upstream stream -> OpenAI client', () => {
  it('role chunk, content deltas, tool_calls deltas with index/id/name/arguments, finish, usage chunk, [DONE]', () => {
    const t = new StreamTranslator({ from: 'anthropic', to: 'openai', includeUsage: true });
    const events = openaiEvents(translate(t, anthropicTextAndTools, [2, 11]));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.filter((e): e is Record<string, any> => e !== '[DONE]');
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === 'msg_9' && c.model === 'claude-sonnet-4-5'));
    assert.deepEqual(chunks[0]?.choices[0].delta, { role: 'assistant', content: '' });
    const deltas = chunks.slice(1, -2).map((c) => c.choices[0].delta);
    assert.equal(deltas.map((d) => d.content ?? '').join(''), 'Let me look.');
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    assert.deepEqual(calls[0], { index: 0, id: 'toolu_a', type: 'function', function: { name: 'weather', arguments: '' } });
    const args = (i: number): string =>
      calls
        .filter((c) => c.index === i)
        .map((c) => c.function.arguments)
        .join('');
    assert.deepEqual(JSON.parse(args(0)), { city: 'Oslo' });
    assert.deepEqual(JSON.parse(args(1)), { tz: 'CET' });
    assert.equal(calls.find((c) => c.index === 1)?.id, 'toolu_b');
    const finish = chunks.at(-2);
    assert.deepEqual(finish?.choices[0], { index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
    const usage = chunks.at(-1);
    assert.deepEqual(usage?.choices, []);
    assert.deepEqual(usage?.usage, {
      prompt_tokens: 130,
      completion_tokens: 42,
      total_tokens: 172,
      prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 20 },
    });
    assert.deepEqual(t.usage, { inputTokens: 130, outputTokens: 42, cacheReadTokens: 100, cacheWriteTokens: 20 });
  });

  it('without include_usage there is no usage chunk, but the usage is still seen for billing', () => {
    const t = new StreamTranslator({ from: 'anthropic', to: 'openai' });
    const events = openaiEvents(translate(t, anthropicTextAndTools));
    assert.ok(events.every((e) => e === '[DONE]' || e.choices.length === 1));
    assert.equal(t.usage?.outputTokens, 42);
  });

  it('a stream cut midway ends with an OpenAI error data event', () => {
    const t = new StreamTranslator({ from: 'anthropic', to: 'openai' });
    const cut = anthropicTextAndTools.slice(0, anthropicTextAndTools.indexOf('lo\\"}'));
    const events = openaiEvents(translate(t, cut, [4]));
    const last = events.at(-1) as Record<string, any>;
    assert.equal(last.error.type, 'server_error');
    assert.equal(last.error.code, 'stream_interrupted');
    assert.equal(t.complete, false);
    assert.equal(t.usage?.inputTokens, 130, 'usage from message_start is kept for a partial bill');
  });

  it('an upstream overloaded error event becomes an OpenAI error event', () => {
    const t = new StreamTranslator({ from: 'anthropic', to: 'openai' });
    const text = anthropicStart + anthropicEvent({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const last = openaiEvents(translate(t, text)).at(-1) as Record<string, any>;
    assert.deepEqual(last, { error: { message: 'Overloaded', type: 'server_error', param: null, code: null } });
  });

  it('refuses to translate a protocol into itself', () => {
    assert.throws(() => new StreamTranslator({ from: 'openai', to: 'openai' }), TypeError);
  });
});

describe('stream round trips', () => {
  it('OpenAI -> Anthropic -> OpenAI keeps text, tool calls, finish reason and usage', () => {
    const toAnthropic = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const back = new StreamTranslator({ from: 'anthropic', to: 'openai', includeUsage: true });
    const upstream = openaiTools.replace('"content":null', '"content":"Sure."');
    const events = openaiEvents(translate(back, translate(toAnthropic, upstream, [5]), [3]));
    const chunks = events.filter((e): e is Record<string, any> => e !== '[DONE]');
    const deltas = chunks.flatMap((c) => c.choices.map((ch: Record<string, any>) => ch.delta));
    assert.equal(deltas.map((d) => d.content ?? '').join(''), 'Sure.');
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    assert.deepEqual(
      calls.filter((c) => c.id !== undefined).map((c) => [c.index, c.id, c.function.name]),
      [
        [0, 'call_a', 'weather'],
        [1, 'call_b', 'time'],
      ],
    );
    assert.equal(chunks.at(-2)?.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(chunks.at(-1)?.usage, {
      prompt_tokens: 80,
      completion_tokens: 20,
      total_tokens: 100,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    assert.deepEqual(back.usage, toAnthropic.usage);
  });

  it('Anthropic -> OpenAI -> Anthropic keeps blocks, stop reason and cache usage', () => {
    const toOpenai = new StreamTranslator({ from: 'anthropic', to: 'openai', includeUsage: true });
    const back = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const events = anthropicEvents(translate(back, translate(toOpenai, anthropicTextAndTools, [4]), [6]));
    const starts = events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block.type);
    assert.deepEqual(starts, ['text', 'tool_use', 'tool_use']);
    const final = events.at(-2);
    assert.equal(final?.delta.stop_reason, 'tool_use');
    assert.deepEqual(final?.usage, { input_tokens: 10, output_tokens: 42, cache_creation_input_tokens: 20, cache_read_input_tokens: 100 });
  });
});

describe('usage of an Anthropic stream relayed untranslated', () => {
  it('is read from message_start and message_delta, however the bytes are split', () => {
    for (const size of [1, 3, 64, 100_000]) {
      const reader = new AnthropicUsageReader();
      const bytes = Buffer.from(anthropicTextAndTools);
      for (let i = 0; i < bytes.length; i += size) reader.observe(bytes.subarray(i, i + size));
      reader.end();
      assert.deepEqual(reader.seen, { inputTokens: 130, outputTokens: 42, cacheReadTokens: 100, cacheWriteTokens: 20 });
      assert.equal(reader.complete, true);
    }
  });

  it('a cut stream keeps the input counts of message_start and is not complete', () => {
    const reader = new AnthropicUsageReader();
    reader.observe(Buffer.from(anthropicTextAndTools.slice(0, 900)));
    reader.end();
    assert.deepEqual(reader.seen, { inputTokens: 130, outputTokens: 1, cacheReadTokens: 100, cacheWriteTokens: 20 });
    assert.equal(reader.complete, false);
  });
});

describe('the official SDKs read translated streams', () => {
  let server: Server;
  let base: string;
  before(async () => {
    // Serves a canned upstream stream, translated, as each protocol's streaming endpoint.
    server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const anthropicClient = req.url?.startsWith('/v1/messages') === true;
      const t = anthropicClient
        ? new StreamTranslator({ from: 'openai', to: 'anthropic' })
        : new StreamTranslator({ from: 'anthropic', to: 'openai', includeUsage: true });
      const upstream = Buffer.from(anthropicClient ? openaiTools.replace('"content":null', '"content":"Sure."') : anthropicTextAndTools);
      for (let i = 0; i < upstream.length; i += 9) res.write(t.push(upstream.subarray(i, i + 9)));
      res.end(t.end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('@anthropic-ai/sdk assembles the final message from an OpenAI upstream stream', async () => {
    const client = new Anthropic({ baseURL: base, apiKey: 'k', maxRetries: 0 });
    const stream = client.messages.stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    const message = await stream.finalMessage();
    assert.deepEqual(message.content, [
      { type: 'text', text: 'Sure.' },
      { type: 'tool_use', id: 'call_a', name: 'weather', input: { city: 'Oslo' } },
      { type: 'tool_use', id: 'call_b', name: 'time', input: { tz: 'CET' } },
    ]);
    assert.equal(message.stop_reason, 'tool_use');
    assert.equal(message.usage.input_tokens, 80);
    assert.equal(message.usage.output_tokens, 20);
  });

  it('openai SDK assembles the tool calls from an Anthropic upstream stream', async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'k', maxRetries: 0 });
    const stream = client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream_options: { include_usage: true },
    });
    const completion = await stream.finalChatCompletion();
    const message = completion.choices[0]?.message;
    assert.equal(message?.content, 'Let me look.');
    assert.deepEqual(
      message?.tool_calls?.map((c) => (c.type === 'function' ? [c.id, c.function.name, JSON.parse(c.function.arguments)] : null)),
      [
        ['toolu_a', 'weather', { city: 'Oslo' }],
        ['toolu_b', 'time', { tz: 'CET' }],
      ],
    );
    assert.equal(completion.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(completion.usage?.prompt_tokens, 130);
  });
});

describe('reasoning in translated streams', () => {
  it("an OpenAI-compatible server's reasoning_content deltas reach an Anthropic client as a thinking block before the text", () => {
    const upstream = openaiSse([
      openaiChunk({ role: 'assistant', content: '' }),
      openaiChunk({ reasoning_content: 'Let me ' }),
      openaiChunk({ reasoning_content: 'think.' }),
      openaiChunk({ content: 'Yes.' }),
      openaiChunk({}, 'stop'),
      openaiChunk({}, null, { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 }),
    ]);
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const events = anthropicEvents(translate(t, upstream, [4]));
    const starts = events.filter((e) => e.type === 'content_block_start');
    assert.deepEqual(
      starts.map((e) => [e.index, e.content_block.type]),
      [
        [0, 'thinking'],
        [1, 'text'],
      ],
    );
    const thinking = events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'thinking_delta');
    assert.equal(thinking.map((e) => e.delta.thinking).join(''), 'Let me think.');
    assert.ok(events.some((e) => e.type === 'content_block_stop' && e.index === 0));
  });

  it('Anthropic thinking deltas reach an OpenAI client as reasoning_content, and the signature is not sent', () => {
    const upstream =
      anthropicStart +
      anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }) +
      anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm, ' } }) +
      anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'yes.' } }) +
      anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'c2ln' } }) +
      anthropicEvent({ type: 'content_block_stop', index: 0 }) +
      anthropicEvent({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }) +
      anthropicEvent({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Done.' } }) +
      anthropicEvent({ type: 'content_block_stop', index: 1 }) +
      anthropicEvent({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 9 } }) +
      anthropicEvent({ type: 'message_stop' });
    const t = new StreamTranslator({ from: 'anthropic', to: 'openai' });
    const text = translate(t, upstream, [9]);
    assert.ok(!text.includes('c2ln'), 'the signature stays out of an OpenAI stream');
    const chunks = openaiEvents(text).filter((c): c is Record<string, any> => c !== '[DONE]');
    const deltas = chunks.map((c) => c.choices[0]?.delta ?? {});
    assert.equal(deltas.map((d) => d.reasoning_content ?? '').join(''), 'Hmm, yes.');
    assert.equal(deltas.map((d) => d.content ?? '').join(''), 'Done.');
    const firstText = deltas.findIndex((d) => d.content === 'Done.');
    const lastReasoning = deltas.map((d) => typeof d.reasoning_content === 'string').lastIndexOf(true);
    assert.ok(lastReasoning < firstText);
  });
});
