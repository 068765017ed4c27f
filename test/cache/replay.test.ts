import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { deltaPieces } from '../../src/cache/event-text.js';
import { type Fresh, freshIds, replayEvents, replayWhole } from '../../src/cache/replay.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { type AnswerCase, ask, dataOf, entryOf, ReplayServer, SAID } from './answers.js';

// Replaying a cached answer: in the form it was stored in, the stored answer under fresh
// ids; in the other form, rebuilt (a stream assembled whole, a whole answer streamed in
// pieces), and read by the official SDKs as they read a model's.

const NOW_S = 1_900_000_000;
const fresh = (): Fresh => freshIds(NOW_S);

const CHAT_LIKE: readonly AnswerCase[] = ['chat', 'messages', 'completions', 'responses'];
const WITH_TOOLS: readonly AnswerCase[] = ['chat', 'messages', 'responses'];

/** An answer's id or one of its items' (never a tool call's: `call_…`, `toolu_…`). */
const ANSWER_ID = /^(?:chatcmpl-|cmpl-|msg_|resp_|fc_|rs_)/;

/**
 * The value with each answer id replaced by its order of first appearance and each time by a
 * marker: two sequences normalise alike when they differ only by a consistent renaming.
 */
function normalised(value: unknown): unknown {
  const seen = new Map<string, string>();
  const walk = (v: unknown, key: string | null): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, null));
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if ((key === 'id' || key === 'item_id') && typeof v === 'string' && ANSWER_ID.test(v)) {
      if (!seen.has(v)) seen.set(v, `<id ${seen.size}>`);
      return seen.get(v);
    }
    if ((key === 'created' || key === 'created_at' || key === 'completed_at') && typeof v === 'number') return '<time>';
    return v;
  };
  return walk(value, null);
}

/** Every answer id and every time in the value. */
function idsAndTimes(value: unknown): { ids: Set<string>; times: Set<number> } {
  const ids = new Set<string>();
  const times = new Set<number>();
  const walk = (v: unknown, key: string | null): void => {
    if (Array.isArray(v)) for (const x of v) walk(x, null);
    else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) walk(x, k);
    else if ((key === 'id' || key === 'item_id') && typeof v === 'string' && ANSWER_ID.test(v)) ids.add(v);
    else if ((key === 'created' || key === 'created_at' || key === 'completed_at') && typeof v === 'number') times.add(v);
  };
  walk(value, null);
  return { ids, times };
}

interface Summary {
  readonly text: string;
  readonly finish: unknown;
  readonly usage: unknown;
  readonly tools: readonly { name: string; args: unknown }[];
}

/** What a whole answer says, whatever its ids and wrapping: its text, how it ended, its token counts, its tool calls. */
function summary(c: AnswerCase, body: string): Summary {
  const b = JSON.parse(body);
  switch (c) {
    case 'chat': {
      const message = b.choices[0].message;
      const tools = (message.tool_calls ?? []).map((t: any) => ({ name: t.function.name, args: JSON.parse(t.function.arguments) }));
      const { prompt_tokens, completion_tokens, total_tokens } = b.usage;
      return {
        text: message.content ?? '',
        finish: b.choices[0].finish_reason,
        usage: { prompt_tokens, completion_tokens, total_tokens },
        tools,
      };
    }
    case 'completions': {
      const { prompt_tokens, completion_tokens, total_tokens } = b.usage;
      return {
        text: b.choices[0].text,
        finish: b.choices[0].finish_reason,
        usage: { prompt_tokens, completion_tokens, total_tokens },
        tools: [],
      };
    }
    case 'messages': {
      const text = b.content.flatMap((x: any) => (x.type === 'text' ? [x.text] : [])).join('');
      const tools = b.content.flatMap((x: any) => (x.type === 'tool_use' ? [{ name: x.name, args: x.input }] : []));
      return { text, finish: b.stop_reason, usage: { input: b.usage.input_tokens, output: b.usage.output_tokens }, tools };
    }
    case 'responses': {
      const text = b.output.flatMap((i: any) => (i.type === 'message' ? i.content.map((p: any) => p.text) : [])).join('');
      const tools = b.output.flatMap((i: any) => (i.type === 'function_call' ? [{ name: i.name, args: JSON.parse(i.arguments) }] : []));
      return { text, finish: b.status, usage: { input: b.usage.input_tokens, output: b.usage.output_tokens }, tools };
    }
    case 'embeddings':
      throw new TypeError('no summary of embeddings');
  }
}

/** The usage a stream reported, shaped as summary() gives it. */
function streamedUsage(c: AnswerCase, events: readonly string[]): unknown {
  const data = dataOf(events).filter((d) => d !== '[DONE]') as any[];
  if (c === 'messages') {
    const input = data.find((d) => d.type === 'message_start').message.usage.input_tokens;
    return { input, output: data.find((d) => d.type === 'message_delta').usage.output_tokens };
  }
  if (c === 'responses') {
    const { usage } = data.find((d) => d.type === 'response.completed').response;
    return { input: usage.input_tokens, output: usage.output_tokens };
  }
  const { prompt_tokens, completion_tokens, total_tokens } = data.filter((d) => d.usage != null).at(-1).usage;
  return { prompt_tokens, completion_tokens, total_tokens };
}

/** The text deltas of a stream, in its protocol. */
function textDeltas(c: AnswerCase, events: readonly string[]): string[] {
  return dataOf(events).flatMap((d: any) => {
    if (d === '[DONE]') return [];
    if (c === 'chat')
      return typeof d.choices?.[0]?.delta?.content === 'string' && d.choices[0].delta.content !== '' ? [d.choices[0].delta.content] : [];
    if (c === 'completions') return typeof d.choices?.[0]?.text === 'string' && d.choices[0].text !== '' ? [d.choices[0].text] : [];
    if (c === 'messages') return d.type === 'content_block_delta' && d.delta.type === 'text_delta' ? [d.delta.text] : [];
    return d.type === 'response.output_text.delta' ? [d.delta] : [];
  });
}

/** The usage the mock gives a whole answer, as the request path keeps it on the entry. */
function usageOfWhole(c: AnswerCase, body: string): { inputTokens: number; outputTokens: number } {
  const b = JSON.parse(body);
  if (c === 'messages' || c === 'responses') return { inputTokens: b.usage.input_tokens, outputTokens: b.usage.output_tokens };
  return { inputTokens: b.usage.prompt_tokens, outputTokens: b.usage.completion_tokens };
}

let mock: MockProvider;
const server = new ReplayServer();

describe('replaying a cached answer', { timeout: 120_000 }, () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 4 });
    await server.start();
  });
  after(async () => {
    await mock?.close();
    await server.close();
  });

  it('a whole answer replayed whole is the stored body with a fresh id and created, its tool call ids kept', async () => {
    for (const c of CHAT_LIKE) {
      for (const tool of c === 'completions' ? [false] : [false, true]) {
        const body = await ask(mock, c, { tool });
        const replayed = replayWhole(entryOf(c, 'whole', body), fresh());
        assert.deepEqual(normalised(JSON.parse(replayed)), normalised(JSON.parse(body)), `${c}${tool ? ' with a tool call' : ''}`);
        const before = idsAndTimes(JSON.parse(body));
        const now = idsAndTimes(JSON.parse(replayed));
        for (const id of now.ids) assert.ok(!before.ids.has(id), `${c}: ${id} is a fresh id`);
        assert.equal(now.ids.size, before.ids.size);
        if (c !== 'messages') assert.deepEqual([...now.times], [NOW_S], `${c}: stamped now`);
      }
    }
  });

  it('embeddings replay as stored, and are never streamed', async () => {
    const body = await ask(mock, 'embeddings');
    const entry = entryOf('embeddings', 'whole', body);
    assert.equal(replayWhole(entry, fresh()), body);
    assert.throws(() => replayEvents(entry, fresh()), TypeError);
  });

  it('a stream replayed as a stream is the stored events, in order, with fresh ids and created', async () => {
    for (const c of CHAT_LIKE) {
      for (const tool of c === 'completions' ? [false] : [false, true]) {
        const stream = await ask(mock, c, { stream: true, tool, includeUsage: true });
        const entry = entryOf(c, 'stream', stream);
        const replayed = replayEvents(entry, fresh(), { includeUsage: true });
        assert.equal(replayed.length, entry.events?.length, c);
        assert.deepEqual(normalised(dataOf(replayed)), normalised(dataOf(entry.events ?? [])), `${c}${tool ? ' with a tool call' : ''}`);
        const before = idsAndTimes(dataOf(entry.events ?? []));
        const now = idsAndTimes(dataOf(replayed));
        for (const id of now.ids) assert.ok(!before.ids.has(id), `${c}: ${id} is a fresh id`);
        if (c !== 'messages') assert.deepEqual([...now.times], [NOW_S], `${c}: stamped now`);
      }
    }
  });

  it('every event of a replay names the answer and its items by the same fresh ids; two replays share none', async () => {
    const chat = entryOf('chat', 'stream', await ask(mock, 'chat', { stream: true }));
    const [first, second] = [replayEvents(chat, fresh()), replayEvents(chat, fresh())].map(
      (events) => new Set(dataOf(events).flatMap((d: any) => (d === '[DONE]' ? [] : [d.id]))),
    );
    assert.equal(first?.size, 1);
    assert.equal(second?.size, 1);
    assert.notDeepEqual(first, second);

    const responses = entryOf('responses', 'stream', await ask(mock, 'responses', { stream: true }));
    const data = dataOf(replayEvents(responses, fresh())) as any[];
    const added = data.find((d) => d.type === 'response.output_item.added').item.id;
    const completed = data.find((d) => d.type === 'response.completed').response;
    assert.equal(completed.output[0].id, added);
    assert.equal(data.find((d) => d.type === 'response.created').response.id, completed.id);
    for (const d of data.filter((x) => 'item_id' in x)) assert.equal(d.item_id, added, d.type);
  });

  it('a stream replayed whole says what the same upstream says unstreamed: text, finish, usage and tool calls', async () => {
    for (const c of CHAT_LIKE) {
      for (const tool of WITH_TOOLS.includes(c) ? [false, true] : [false]) {
        const whole = await ask(mock, c, { tool });
        const stream = await ask(mock, c, { stream: true, tool, includeUsage: true });
        const entry = entryOf(c, 'stream', stream);
        const replayed = replayWhole(entry, fresh());
        // The usage is the stream's own: the mock counts a streamed tool call in fewer tokens than the same call whole.
        const expected = { ...summary(c, whole), usage: streamedUsage(c, entry.events ?? []) };
        assert.deepEqual(summary(c, replayed), expected, `${c}${tool ? ' with a tool call' : ''}`);
      }
    }
  });

  it("a stream that did not report usage replayed whole reports the entry's usage", async () => {
    const whole = await ask(mock, 'chat');
    const entry = entryOf('chat', 'stream', await ask(mock, 'chat', { stream: true }), usageOfWhole('chat', whole));
    assert.deepEqual(summary('chat', replayWhole(entry, fresh())), summary('chat', whole));
  });

  it('a stream replayed whole keeps its tool call ids', async () => {
    const stream = await ask(mock, 'messages', { stream: true, tool: true });
    const streamedId = (dataOf(entryOf('messages', 'stream', stream).events ?? []) as any[]).find(
      (d) => d.type === 'content_block_start' && d.content_block.type === 'tool_use',
    ).content_block.id;
    const body = JSON.parse(replayWhole(entryOf('messages', 'stream', stream), fresh()));
    assert.equal(body.content.find((b: any) => b.type === 'tool_use').id, streamedId);
  });

  it('a whole answer replayed as a stream comes in several text deltas, which add up to its text and assemble back to it', async () => {
    for (const c of CHAT_LIKE) {
      for (const tool of WITH_TOOLS.includes(c) ? [false, true] : [false]) {
        const whole = await ask(mock, c, { tool });
        const usage = usageOfWhole(c, whole);
        const events = replayEvents(entryOf(c, 'whole', whole, usage), fresh(), { includeUsage: true });
        const deltas = textDeltas(c, events);
        if (!tool) {
          assert.ok(deltas.length > 1, `${c}: ${deltas.length} deltas`);
          assert.equal(deltas.join(''), SAID);
        }
        const back = replayWhole(entryOf(c, 'stream', events.join(''), usage), fresh());
        assert.deepEqual(summary(c, back), summary(c, whole), `${c}${tool ? ' with a tool call' : ''}`);
      }
    }
  });

  it("the model's reasoning survives either way, Anthropic's thinking with its signature", async () => {
    const reasoningOf = (c: AnswerCase, body: string): unknown => {
      const b = JSON.parse(body);
      if (c === 'chat') return b.choices[0].message.reasoning_content;
      if (c === 'messages') return b.content.filter((x: any) => x.type === 'thinking').map((x: any) => [x.thinking, x.signature]);
      return b.output.filter((i: any) => i.type === 'reasoning').map((i: any) => i.summary.map((p: any) => p.text));
    };
    for (const c of WITH_TOOLS) {
      const whole = await ask(mock, c, { reasoning: true });
      const expected = reasoningOf(c, whole);
      assert.ok(JSON.stringify(expected).includes('Thinking about it.'), `${c}: ${JSON.stringify(expected)}`);
      const stream = await ask(mock, c, { stream: true, reasoning: true, includeUsage: true });
      assert.deepEqual(reasoningOf(c, replayWhole(entryOf(c, 'stream', stream), fresh())), expected, `${c}, a stream replayed whole`);
      const events = replayEvents(entryOf(c, 'whole', whole, usageOfWhole(c, whole)), fresh());
      assert.deepEqual(
        reasoningOf(c, replayWhole(entryOf(c, 'stream', events.join('')), fresh())),
        expected,
        `${c}, a whole answer streamed`,
      );
    }
  });

  it('an OpenAI answer of several choices keeps each apart, whole or streamed', () => {
    const chunk = (choices: unknown[], usage?: unknown) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-n2', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...(usage ? { usage } : {}) })}\n\n`;
    const delta = (index: number, content: string, finish: string | null = null) => ({
      index,
      delta: { content },
      logprobs: null,
      finish_reason: finish,
    });
    const stream = [
      chunk([delta(0, 'Red '), delta(1, 'Blue ')]),
      chunk([delta(1, 'sky.')]),
      chunk([delta(0, 'rose.', 'stop')]),
      chunk([delta(1, '', 'length')]),
      chunk([], { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }),
      'data: [DONE]\n\n',
    ].join('');
    const whole = JSON.parse(replayWhole(entryOf('chat', 'stream', stream), fresh()));
    assert.deepEqual(
      whole.choices.map((c: any) => [c.index, c.message.content, c.finish_reason]),
      [
        [0, 'Red rose.', 'stop'],
        [1, 'Blue sky.', 'length'],
      ],
    );
    const events = replayEvents(entryOf('chat', 'whole', JSON.stringify(whole)), fresh(), { includeUsage: true });
    const again = JSON.parse(replayWhole(entryOf('chat', 'stream', events.join('')), fresh()));
    assert.deepEqual(
      again.choices.map((c: any) => [c.index, c.message.content, c.finish_reason]),
      whole.choices.map((c: any) => [c.index, c.message.content, c.finish_reason]),
    );
    assert.equal(again.usage.total_tokens, 7);
  });

  it("the usage-only chunk follows the client's stream_options, not the stored stream's", async () => {
    const usageChunks = (events: readonly string[]) =>
      dataOf(events).filter((d: any) => d !== '[DONE]' && d.choices.length === 0 && d.usage != null) as any[];
    for (const c of ['chat', 'completions'] as const) {
      const usage = usageOfWhole(c, await ask(mock, c));
      const withUsage = entryOf(c, 'stream', await ask(mock, c, { stream: true, includeUsage: true }), usage);
      const without = entryOf(c, 'stream', await ask(mock, c, { stream: true }), usage);
      const whole = entryOf(c, 'whole', await ask(mock, c), usage);
      for (const entry of [withUsage, without, whole]) {
        assert.equal(usageChunks(replayEvents(entry, fresh(), { includeUsage: false })).length, 0, `${c} ${entry.form}`);
        const asked = replayEvents(entry, fresh(), { includeUsage: true });
        const [chunk] = usageChunks(asked);
        assert.equal(chunk?.usage.prompt_tokens, usage.inputTokens, `${c} ${entry.form}`);
        assert.equal(chunk?.usage.completion_tokens, usage.outputTokens);
        assert.equal(asked.at(-1), 'data: [DONE]\n\n');
        assert.deepEqual(dataOf(asked.slice(0, -1)).at(-1), chunk, 'the usage chunk comes last, before [DONE]');
      }
    }
  });

  it('deltas are cut after a space, at most 24 characters long, never inside a surrogate pair', () => {
    const text = `${SAID} ${'x'.repeat(50)} ${'🌞'.repeat(20)}`;
    const pieces = deltaPieces(text);
    assert.equal(pieces.join(''), text);
    for (const piece of pieces) assert.ok(piece.length <= 24 && piece.length > 0, piece);
    assert.equal(pieces[0], 'The quick brown fox ');
    for (const piece of pieces) assert.doesNotThrow(() => encodeURIComponent(piece), 'no lone surrogate');
    assert.deepEqual(deltaPieces(''), []);
  });
});

describe('the official SDKs read a replayed stream', { timeout: 120_000 }, () => {
  let openai: OpenAI;
  let anthropic: Anthropic;
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 4 });
    await server.start();
    openai = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: server.baseUrl, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await mock?.close();
    await server.close();
  });

  /** The entry of the answer in each form: as stored streamed, and as stored whole. */
  async function bothForms(c: AnswerCase, tool = false) {
    const whole = await ask(mock, c, { tool });
    const usage = usageOfWhole(c, whole);
    return [entryOf(c, 'stream', await ask(mock, c, { stream: true, tool, includeUsage: true }), usage), entryOf(c, 'whole', whole, usage)];
  }

  it('the OpenAI SDK assembles a replayed chat completion stream, text or tool call', async () => {
    for (const tool of [false, true]) {
      for (const entry of await bothForms('chat', tool)) {
        server.reply = { events: replayEvents(entry, fresh(), { includeUsage: true }) };
        const stream = openai.chat.completions.stream({
          model: 'm',
          messages: [{ role: 'user', content: 'hi' }],
          stream_options: { include_usage: true },
        });
        const final = await stream.finalChatCompletion();
        const choice = final.choices[0];
        assert.match(final.id, /^chatcmpl-/);
        if (tool) {
          assert.equal(choice?.finish_reason, 'tool_calls');
          assert.equal(choice?.message.tool_calls?.[0]?.type === 'function' && choice.message.tool_calls[0].function.name, 'weather');
        } else assert.equal(choice?.message.content, SAID, entry.form);
        assert.equal(final.usage?.prompt_tokens, entry.usage?.inputTokens);
      }
    }
  });

  it('the Anthropic SDK assembles a replayed message stream, text or tool use', async () => {
    for (const tool of [false, true]) {
      for (const entry of await bothForms('messages', tool)) {
        server.reply = { events: replayEvents(entry, fresh()) };
        const final = await anthropic.messages
          .stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
          .finalMessage();
        assert.match(final.id, /^msg_/);
        if (tool) {
          const use = final.content.find((b) => b.type === 'tool_use');
          assert.equal(use?.type === 'tool_use' && use.name, 'weather');
          assert.equal(final.stop_reason, 'tool_use');
        } else assert.deepEqual(final.content, [{ type: 'text', text: SAID }]);
        assert.equal(final.usage.input_tokens, entry.usage?.inputTokens, entry.form);
        assert.equal(final.usage.output_tokens, entry.usage?.outputTokens);
      }
    }
  });

  it("the Anthropic SDK reads a replayed thinking block with its signature, and the OpenAI SDK a Response's reasoning", async () => {
    const message = await ask(mock, 'messages', { reasoning: true });
    const thinking = JSON.parse(message).content[0];
    for (const entry of [
      entryOf('messages', 'whole', message),
      entryOf('messages', 'stream', await ask(mock, 'messages', { stream: true, reasoning: true })),
    ]) {
      server.reply = { events: replayEvents(entry, fresh()) };
      const final = await anthropic.messages
        .stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
        .finalMessage();
      assert.deepEqual(final.content[0], thinking, entry.form);
      assert.deepEqual(final.content[1], { type: 'text', text: SAID });
    }
    const response = await ask(mock, 'responses', { reasoning: true });
    server.reply = { events: replayEvents(entryOf('responses', 'whole', response), fresh()) };
    const final = await openai.responses.stream({ model: 'm', input: 'hi' }).finalResponse();
    const reasoning = final.output.find((i) => i.type === 'reasoning');
    assert.deepEqual(reasoning?.type === 'reasoning' && reasoning.summary, JSON.parse(response).output[0].summary);
    assert.equal(final.output_text, SAID);
  });

  it('the OpenAI SDK reads a replayed completion stream', async () => {
    for (const entry of await bothForms('completions')) {
      server.reply = { events: replayEvents(entry, fresh(), { includeUsage: true }) };
      const stream = await openai.completions.create({ model: 'm', prompt: 'hi', stream: true, stream_options: { include_usage: true } });
      let text = '';
      let usage: unknown = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(text, SAID, entry.form);
      assert.equal((usage as { prompt_tokens: number } | null)?.prompt_tokens, entry.usage?.inputTokens);
    }
  });

  it('the OpenAI SDK assembles a replayed Responses stream, text or function call', async () => {
    for (const tool of [false, true]) {
      for (const entry of await bothForms('responses', tool)) {
        server.reply = { events: replayEvents(entry, fresh()) };
        const final = await openai.responses.stream({ model: 'm', input: 'hi' }).finalResponse();
        assert.match(final.id, /^resp_/);
        if (tool) assert.equal(final.output.find((i) => i.type === 'function_call')?.name, 'weather');
        else assert.equal(final.output_text, SAID, entry.form);
        assert.equal(final.created_at, NOW_S);
      }
    }
  });

  it('a replayed whole answer is read by the SDKs as a plain answer', async () => {
    const [stream] = await bothForms('chat');
    server.reply = { body: replayWhole(stream as never, fresh()) };
    const chat = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(chat.choices[0]?.message.content, SAID);
    const [messages] = await bothForms('messages');
    server.reply = { body: replayWhole(messages as never, fresh()) };
    const message = await anthropic.messages.create({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(message.content[0]?.type === 'text' && message.content[0].text, SAID);
  });
});
