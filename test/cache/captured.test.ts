import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AnswerCapture, type CapturedAnswer } from '../../src/cache/captured.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { type AnswerCase, ask, OPERATION, PROTOCOL } from './answers.js';

// Capturing a cached miss's answer as it reaches the client: kept as whole events within
// its bound, and judged for what decides whether it may be stored (a tool call, a whole end).

const CHAT_LIKE: readonly AnswerCase[] = ['chat', 'messages', 'completions', 'responses'];
const WITH_TOOLS: readonly AnswerCase[] = ['chat', 'messages', 'responses'];

function capture(c: AnswerCase, maxBytes = 1 << 20): AnswerCapture {
  return new AnswerCapture({ operation: OPERATION[c], protocol: PROTOCOL[c], maxBytes });
}

/** The events of a stream's text, one each (every one ends in a blank line). */
function split(stream: string): string[] {
  return stream.split(/(?<=\n\n)/);
}

function captured(c: AnswerCase, form: 'whole' | 'stream', text: string, status = 200): CapturedAnswer {
  const cap = capture(c);
  if (form === 'whole') cap.body(status, text);
  else for (const event of split(text)) cap.events(event);
  return cap.result();
}

let mock: MockProvider;

describe('capturing an answer for the cache', { timeout: 120_000 }, () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 4 });
  });
  after(() => mock?.close());

  it('a text answer is kept as it came, complete and calling no tool, whole or streamed, in each protocol', async () => {
    for (const c of CHAT_LIKE) {
      const whole = await ask(mock, c);
      assert.deepEqual(captured(c, 'whole', whole), {
        form: 'whole',
        body: whole,
        bytes: Buffer.byteLength(whole),
        toolCalls: false,
        complete: true,
        oversize: false,
      });
      const stream = await ask(mock, c, { stream: true, includeUsage: c === 'chat' });
      assert.deepEqual(captured(c, 'stream', stream), {
        form: 'stream',
        events: split(stream),
        bytes: Buffer.byteLength(stream),
        toolCalls: false,
        complete: true,
        oversize: false,
      });
    }
  });

  it('a tool call is found in each protocol, whole and streamed', async () => {
    for (const c of WITH_TOOLS) {
      assert.equal(captured(c, 'whole', await ask(mock, c, { tool: true })).toolCalls, true, `${c} whole`);
      assert.equal(captured(c, 'stream', await ask(mock, c, { stream: true, tool: true })).toolCalls, true, `${c} streamed`);
    }
  });

  it('a server tool counts as a tool call: Anthropic server_tool_use, a Responses web search', () => {
    const anthropic = capture('messages');
    anthropic.events(
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}\n\n',
    );
    assert.equal(anthropic.result().toolCalls, true);
    const responses = capture('responses');
    responses.body(
      200,
      JSON.stringify({ id: 'resp_1', status: 'completed', output: [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }] }),
    );
    assert.equal(responses.result().toolCalls, true);
  });

  it('text that quotes a tool call is not one: the model text is escaped', async () => {
    const quoted = 'here: {"type":"tool_use","tool_calls":[{"id":"x"}],"type":"function_call"}';
    for (const c of WITH_TOOLS) {
      const body = JSON.stringify({
        say: quoted,
        choices: [{ index: 0, message: { role: 'assistant', content: quoted }, finish_reason: 'stop' }],
      });
      const stream = `data: ${body}\n\n${c === 'chat' ? 'data: [DONE]\n\n' : ''}`;
      assert.equal(captured(c, 'stream', stream).toolCalls, false, c);
    }
  });

  it('a stream cut before its end is not complete', async () => {
    const ends: Record<string, (event: string) => boolean> = {
      chat: (e) => e.includes('"finish_reason":"') || e.includes('[DONE]'),
      completions: (e) => e.includes('"finish_reason":"') || e.includes('[DONE]'),
      messages: (e) => e.includes('message_stop'),
      responses: (e) => e.includes('response.completed'),
    };
    for (const c of CHAT_LIKE) {
      const events = split(await ask(mock, c, { stream: true }));
      const cut = events.slice(0, events.findIndex(ends[c] as (e: string) => boolean));
      assert.ok(cut.length > 2);
      assert.equal(captured(c, 'stream', cut.join('')).complete, false, c);
    }
  });

  it('an error on the way makes a stream incomplete, even after its finish', async () => {
    const chat = split(await ask(mock, 'chat', { stream: true }));
    const openaiError = 'data: {"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}\n\n';
    assert.equal(captured('chat', 'stream', [...chat.slice(0, -1), openaiError].join('')).complete, false);
    const messages = split(await ask(mock, 'messages', { stream: true }));
    const anthropicError = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    assert.equal(captured('messages', 'stream', [...messages.slice(0, 3), anthropicError].join('')).complete, false);
    const responses = split(await ask(mock, 'responses', { stream: true }));
    for (const type of ['response.incomplete', 'response.failed']) {
      const last = (responses.at(-1) as string).replaceAll('response.completed', type);
      assert.equal(captured('responses', 'stream', [...responses.slice(0, -1), last].join('')).complete, false, type);
    }
  });

  it("an error nested in an OpenAI chunk (Azure's content filter results) is not the stream's error", async () => {
    const chat = split(await ask(mock, 'chat', { stream: true }));
    const filtered =
      'data: {"id":"","choices":[],"prompt_filter_results":[{"content_filter_results":{"error":{"code":"x","message":"y"}}}]}\n\n';
    assert.equal(captured('chat', 'stream', [filtered, ...chat].join('')).complete, true);
  });

  it('a whole answer is complete only on a success that is what it says', async () => {
    const chat = await ask(mock, 'chat');
    assert.equal(captured('chat', 'whole', chat, 500).complete, false);
    assert.equal(captured('chat', 'whole', '{"error":{"message":"no"}}').complete, false);
    assert.equal(captured('chat', 'whole', 'not json').complete, false);
    const incomplete = JSON.stringify({ ...JSON.parse(await ask(mock, 'responses')), status: 'incomplete' });
    assert.equal(captured('responses', 'whole', incomplete).complete, false);
  });

  it('events are kept one whole event each, however they arrive: several at once, or a piece ending inside one', async () => {
    const stream = await ask(mock, 'messages', { stream: true, tool: true });
    const events = split(stream);
    for (const cuts of [[stream.length], [1, 7, 100, 101, 350, stream.length], [...Array(stream.length).keys()].map((i) => i + 1)]) {
      const cap = capture('messages');
      let from = 0;
      for (const to of cuts) {
        cap.events(stream.slice(from, to));
        from = to;
      }
      const got = cap.result();
      assert.deepEqual(got.events, events, `cut at ${cuts.length} places`);
      assert.equal(got.complete, true);
    }
  });

  it('events ended by CRLF are cut at their blank line, and a last one without it is made whole', () => {
    const cap = capture('chat');
    cap.events('data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\r\n\r');
    cap.events('\ndata: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\r\n\r\ndata: [DONE]');
    const got = cap.result();
    assert.deepEqual(got.events, [
      'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\r\n\r\n',
      'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\r\n\r\n',
      'data: [DONE]\n\n',
    ]);
    assert.equal(got.complete, true);
  });

  it('an answer past maxBytes is oversize: nothing is kept, every byte is counted, and it is not complete', async () => {
    const stream = await ask(mock, 'chat', { stream: true });
    const cap = capture('chat', 200);
    for (const event of split(stream)) cap.events(event);
    assert.deepEqual(cap.result(), { form: 'stream', bytes: Buffer.byteLength(stream), toolCalls: false, complete: false, oversize: true });
    const whole = await ask(mock, 'chat');
    const big = capture('chat', 10);
    big.body(200, whole);
    assert.deepEqual(big.result(), { form: 'whole', bytes: Buffer.byteLength(whole), toolCalls: false, complete: false, oversize: true });
  });

  it('an answer is captured whole or as events, not both', () => {
    const cap = capture('chat');
    cap.events('data: [DONE]\n\n');
    assert.throws(() => cap.body(200, '{}'), TypeError);
  });
});
