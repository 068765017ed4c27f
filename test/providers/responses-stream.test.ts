import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import {
  type CanonicalResponse,
  canonicalToResponsesObject,
  type ProviderProtocol,
  ResponsesEventEncoder,
  type ResponsesShape,
  replayResponse,
  responsesEcho,
  responsesMetering,
  responsesTranslation,
  SseParser,
} from '../../src/providers/index.js';
import { bedrockEventFrame as frame } from '../support/bedrock-frames.js';

// The Responses API as the client protocol of a translated answer: the event stream
// encoder, the replay of a stored Response, and the relay transforms that serve a
// Responses client from every provider protocol (or pass OpenAI's Responses through).

function shapeFor(parsed: Record<string, unknown> = {}): ResponsesShape {
  let n = 0;
  return { id: 'resp_1', createdAt: 1700000000, model: 'gpt-x', echo: responsesEcho(parsed), newItemId: (p) => `${p}_${++n}` };
}

type Event = Record<string, any>;

function events(text: string): Event[] {
  const out: Event[] = [];
  const collect = (event: string, data: string): void => {
    const payload = JSON.parse(data) as Event;
    assert.equal(event, payload.type, 'the event name repeats the payload type');
    out.push(payload);
  };
  const parser = new SseParser();
  parser.push(text, collect);
  parser.end(collect);
  return out;
}

function assertNumbered(list: Event[]): void {
  assert.deepEqual(
    list.map((e) => e.sequence_number),
    list.map((_, i) => i),
  );
}

/** The canonical events of an answer with reasoning, text and two tool calls, into an encoder. */
function drive(encoder: ResponsesEventEncoder): void {
  encoder.start('up_1', 'claude-x');
  encoder.thinking('Let me ');
  encoder.thinking('see.');
  encoder.thinkingSignature('sig');
  encoder.text('Calling ');
  encoder.text('now.');
  encoder.toolStart(0, 'toolu_a', 'weather');
  encoder.toolArguments(0, '{"city":');
  encoder.toolArguments(0, '"Oslo"}');
  encoder.toolStart(1, 'toolu_b', 'time');
  encoder.toolArguments(1, '{}');
  encoder.finish('tool_use', null);
  encoder.usage({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 60 });
  encoder.done();
}

describe('the Responses API event encoder', () => {
  it('writes each item added, streamed and done in turn, numbered from 0, ending with response.completed', () => {
    const encoder = new ResponsesEventEncoder(shapeFor());
    drive(encoder);
    const list = events(encoder.out);
    assertNumbered(list);
    assert.deepEqual(
      list.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.reasoning_summary_part.added',
        'response.reasoning_summary_text.delta',
        'response.reasoning_summary_text.delta',
        'response.reasoning_summary_text.done',
        'response.reasoning_summary_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.equal(list[0]?.response.status, 'in_progress');
    assert.deepEqual(list[0]?.response.output, []);
    assert.equal(list[0]?.response.id, 'resp_1');
    const textDone = list.find((e) => e.type === 'response.output_text.done');
    assert.deepEqual([textDone?.item_id, textDone?.output_index, textDone?.text], ['msg_2', 1, 'Calling now.']);
    const argsDone = list.filter((e) => e.type === 'response.function_call_arguments.done');
    assert.deepEqual(
      argsDone.map((e) => [e.item_id, e.output_index, e.name, e.arguments]),
      [
        ['fc_3', 2, 'weather', '{"city":"Oslo"}'],
        ['fc_4', 3, 'time', '{}'],
      ],
    );
  });

  it('ends with the same Response the plain writer gives for the same answer', () => {
    const encoder = new ResponsesEventEncoder(shapeFor());
    drive(encoder);
    const answer: CanonicalResponse = {
      id: 'up_1',
      model: 'claude-x',
      content: [
        { type: 'thinking', text: 'Let me see.', signature: 'sig' },
        { type: 'text', text: 'Calling now.' },
        { type: 'tool_call', id: 'toolu_a', name: 'weather', input: { city: 'Oslo' } },
        { type: 'tool_call', id: 'toolu_b', name: 'time', input: {} },
      ],
      stopReason: 'tool_use',
      usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 60 },
    };
    const streamed = encoder.response;
    assert.ok(streamed !== null);
    const plain = canonicalToResponsesObject(answer, shapeFor(), streamed.completed_at as number);
    assert.deepEqual(streamed, plain);
    assert.deepEqual(events(encoder.out).at(-1)?.response, streamed);
  });

  it('ends with response.incomplete when the answer hit its output limit', () => {
    const encoder = new ResponsesEventEncoder(shapeFor());
    encoder.start('x', 'm');
    encoder.text('Par');
    encoder.finish('max_tokens', null);
    encoder.done();
    const last = events(encoder.out).at(-1);
    assert.equal(last?.type, 'response.incomplete');
    assert.deepEqual(last?.response.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(last?.response.output[0].status, 'incomplete');
    assert.equal(Object.hasOwn(last?.response ?? {}, 'usage'), false, 'no usage until the upstream reports one');
  });

  it('ends a failed stream with an error event in sequence, and has no Response', () => {
    const encoder = new ResponsesEventEncoder(shapeFor());
    encoder.start('x', 'm');
    encoder.text('Hi');
    encoder.error(502, 'the upstream broke', 'stream_interrupted');
    encoder.done();
    const list = events(encoder.out);
    assertNumbered(list);
    const last = list.at(-1);
    assert.deepEqual(
      [last?.type, last?.code, last?.message, last?.param, last?.error.type],
      ['error', 'stream_interrupted', 'the upstream broke', null, 'server_error'],
    );
    assert.equal(encoder.response, null);
  });
});

describe('a stored Response replayed as its event stream', () => {
  it('gives every item whole, in order, numbered, and ends by its status', () => {
    const stored = canonicalToResponsesObject(
      {
        id: 'u',
        model: 'm',
        content: [
          { type: 'thinking', text: 'Hmm.', signature: '' },
          { type: 'text', text: 'Hello.' },
          { type: 'tool_call', id: 'call_1', name: 'f', input: { a: 1 } },
        ],
        stopReason: 'tool_use',
        usage: { inputTokens: 3, outputTokens: 4 },
      },
      shapeFor(),
    );
    const list = events(replayResponse(stored));
    assertNumbered(list);
    assert.deepEqual(
      list.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.reasoning_summary_part.added',
        'response.reasoning_summary_text.delta',
        'response.reasoning_summary_text.done',
        'response.reasoning_summary_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.equal(list[0]?.response.status, 'in_progress');
    assert.deepEqual(list.at(-1)?.response, stored);
    assert.deepEqual(
      list.filter((e) => e.type === 'response.output_item.done').map((e) => e.item),
      stored.output,
    );
  });
});

// --- each provider protocol's answers, served to a Responses client -------------------------

const anthropicEvent = (payload: Record<string, unknown>): string =>
  `event: ${payload.type as string}\ndata: ${JSON.stringify(payload)}\n\n`;
const openaiChunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

const STREAMS: Record<ProviderProtocol, string | Buffer> = {
  openai:
    openaiChunk({ role: 'assistant', content: '' }) +
    openaiChunk({ content: 'Sunny ' }) +
    openaiChunk({ content: 'soon.' }) +
    openaiChunk({
      tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
    }) +
    openaiChunk({}, 'tool_calls') +
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [], usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 } })}\n\n` +
    'data: [DONE]\n\n',
  anthropic:
    anthropicEvent({
      type: 'message_start',
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [],
        stop_reason: null,
        usage: { input_tokens: 9, output_tokens: 1 },
      },
    }) +
    anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
    anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Sunny ' } }) +
    anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'soon.' } }) +
    anthropicEvent({ type: 'content_block_stop', index: 0 }) +
    anthropicEvent({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'call_a', name: 'weather', input: {} },
    }) +
    anthropicEvent({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' } }) +
    anthropicEvent({ type: 'content_block_stop', index: 1 }) +
    anthropicEvent({ type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 5 } }) +
    anthropicEvent({ type: 'message_stop' }),
  gemini:
    `data: ${JSON.stringify({ responseId: 'g1', modelVersion: 'gemini-x', candidates: [{ content: { role: 'model', parts: [{ text: 'Sunny ' }] } }] })}\n\n` +
    `data: ${JSON.stringify({
      responseId: 'g1',
      modelVersion: 'gemini-x',
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'soon.' }, { functionCall: { name: 'weather', args: { city: 'Oslo' } } }] },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 5, totalTokenCount: 14 },
    })}\n\n`,
  bedrock: Buffer.concat([
    frame('messageStart', { role: 'assistant' }),
    frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Sunny ' } }),
    frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'soon.' } }),
    frame('contentBlockStop', { contentBlockIndex: 0 }),
    frame('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'call_a', name: 'weather' } } }),
    frame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":"Oslo"}' } } }),
    frame('contentBlockStop', { contentBlockIndex: 1 }),
    frame('messageStop', { stopReason: 'tool_use' }),
    frame('metadata', { usage: { inputTokens: 9, outputTokens: 5, totalTokens: 14 } }),
  ]),
};

const PLAIN: Record<ProviderProtocol, unknown> = {
  openai: {
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Sunny soon.',
          tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 },
  },
  anthropic: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-x',
    content: [
      { type: 'text', text: 'Sunny soon.' },
      { type: 'tool_use', id: 'call_a', name: 'weather', input: { city: 'Oslo' } },
    ],
    stop_reason: 'tool_use',
    usage: { input_tokens: 9, output_tokens: 5 },
  },
  gemini: {
    responseId: 'g1',
    modelVersion: 'gemini-x',
    candidates: [
      {
        content: { role: 'model', parts: [{ text: 'Sunny soon.' }, { functionCall: { name: 'weather', args: { city: 'Oslo' } } }] },
        finishReason: 'STOP',
      },
    ],
    usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 5, totalTokenCount: 14 },
  },
  bedrock: {
    output: {
      message: {
        role: 'assistant',
        content: [{ text: 'Sunny soon.' }, { toolUse: { toolUseId: 'call_a', name: 'weather', input: { city: 'Oslo' } } }],
      },
    },
    stopReason: 'tool_use',
    usage: { inputTokens: 9, outputTokens: 5, totalTokens: 14 },
  },
};

/** What the answer is, whatever protocol it came in: the gateway's ids, the upstream call id (Gemini's is made up). */
function assertAnswer(response: Record<string, any> | null, from: ProviderProtocol): void {
  assert.ok(response !== null, `${from}: a Response`);
  assert.equal(response.status, 'completed');
  assert.equal(response.id, 'resp_1');
  const [message, call] = response.output as Record<string, any>[];
  assert.equal(message?.type, 'message');
  assert.equal(message?.content[0].text, 'Sunny soon.');
  assert.deepEqual([call?.type, call?.name, JSON.parse(call?.arguments)], ['function_call', 'weather', { city: 'Oslo' }]);
  if (from !== 'gemini') assert.equal(call?.call_id, 'call_a');
  assert.equal(response.usage.input_tokens, 9);
  assert.equal(response.usage.output_tokens, 5);
}

describe('a Responses client served from each provider protocol', () => {
  for (const from of ['openai', 'anthropic', 'gemini', 'bedrock'] as const) {
    it(`${from}: a stream becomes Responses events, ending with the Response, billed on the upstream's usage`, () => {
      const t = responsesTranslation(from, shapeFor(), { model: 'm' });
      const bytes = Buffer.from(STREAMS[from]);
      let out = '';
      for (let i = 0; i < bytes.length; i += 11) out += t.chunk(bytes.subarray(i, i + 11));
      out += t.end();
      const list = events(out);
      assertNumbered(list);
      assert.equal(list.at(-1)?.type, 'response.completed');
      assertAnswer(t.response, from);
      assert.deepEqual(list.at(-1)?.response, t.response);
      assert.equal(t.usage?.inputTokens, 9);
    });

    it(`${from}: a whole answer becomes a Response object`, () => {
      const t = responsesTranslation(from, shapeFor(), { model: 'm' });
      const answer = t.plain(200, Buffer.from(JSON.stringify(PLAIN[from])));
      assert.equal(answer.status, 200);
      const body = JSON.parse(String(answer.body)) as Record<string, any>;
      assertAnswer(body, from);
      assert.deepEqual(t.response, body);
      assert.equal(answer.usage?.outputTokens, 5);
    });
  }

  it("an upstream error keeps its status in OpenAI's error shape, with no Response", () => {
    const t = responsesTranslation('anthropic', shapeFor());
    const body = { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } };
    const answer = t.plain(429, Buffer.from(JSON.stringify(body)));
    assert.equal(answer.status, 429);
    const error = JSON.parse(String(answer.body)).error;
    assert.equal(error.message, 'slow down');
    assert.equal(error.type, 'rate_limit_error');
    assert.equal(t.response, null);
  });

  it("an answer the gateway cannot read is a 502 in OpenAI's shape", () => {
    const t = responsesTranslation('anthropic', shapeFor());
    const answer = t.plain(200, Buffer.from('{"nope":true}'));
    assert.equal(answer.status, 502);
    assert.equal(JSON.parse(String(answer.body)).error.code, 'upstream_error');
    assert.equal(t.response, null);
  });

  it('a stream cut short ends with an error event in sequence', () => {
    const t = responsesTranslation('anthropic', shapeFor());
    const text = String(STREAMS.anthropic);
    const out = t.chunk(Buffer.from(text.slice(0, text.indexOf('event: content_block_stop')))) + t.end();
    const list = events(out);
    assertNumbered(list);
    assert.equal(list.at(-1)?.type, 'error');
    assert.equal(t.response, null);
  });
});

describe('the Responses pass-through keeps the Response it relayed', () => {
  const stored = canonicalToResponsesObject(
    {
      id: 'u',
      model: 'gpt-4o',
      content: [{ type: 'text', text: 'Hi.' }],
      stopReason: 'end_turn',
      usage: { inputTokens: 3, outputTokens: 2 },
    },
    shapeFor(),
  );

  it('a plain body: parsed only when asked for', () => {
    const t = responsesMetering(() => {});
    t.plain(200, Buffer.from(JSON.stringify(stored)));
    assert.deepEqual(t.response, stored);
    assert.equal(t.response, t.response, 'parsed once');
  });

  it("a stream: its response.completed event's Response", () => {
    const t = responsesMetering(() => {});
    const bytes = Buffer.from(replayResponse(stored));
    for (let i = 0; i < bytes.length; i += 5) t.chunk(bytes.subarray(i, i + 5));
    t.end();
    assert.deepEqual(t.response, stored);
    assert.deepEqual(t.usage, { inputTokens: 3, outputTokens: 2 });
  });

  it('no Response for an error answer, or a stream that did not complete', () => {
    const failed = responsesMetering(() => {});
    failed.plain(500, Buffer.from('{"error":{}}'));
    assert.equal(failed.response, null);
    const cut = responsesMetering(() => {});
    cut.chunk(Buffer.from(replayResponse(stored).split('event: response.completed')[0] as string));
    cut.end();
    assert.equal(cut.response, null);
  });
});

describe('the openai SDK reads a translated Responses stream', () => {
  let server: Server;
  let base: string;
  before(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const t = responsesTranslation('anthropic', shapeFor());
      const upstream = Buffer.from(STREAMS.anthropic);
      for (let i = 0; i < upstream.length; i += 9) res.write(t.chunk(upstream.subarray(i, i + 9)));
      res.end(t.end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('assembles the final Response: its text and function call', async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'k', maxRetries: 0 });
    const stream = client.responses.stream({ model: 'm', input: 'weather?' });
    const response = await stream.finalResponse();
    assert.equal(response.output_text, 'Sunny soon.');
    const call = response.output.find((item) => item.type === 'function_call');
    assert.deepEqual([call?.type === 'function_call' ? call.call_id : null, response.status], ['call_a', 'completed']);
  });
});
