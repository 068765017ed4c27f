import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

// The `say:` trigger: a test dictates the model's exact text, and with U+241F marks the
// exact stream chunks it arrives in, through each protocol's official client.

let mock: MockProvider;
let openai: OpenAI;
let anthropic: Anthropic;

const MARK = '\u241f';
const CARD = '4111111111111111';

const tokens = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

/** The content deltas of a streamed chat completion, the role chunk's empty content aside. */
async function chatDeltas(body: Omit<OpenAI.ChatCompletionCreateParamsStreaming, 'stream' | 'model'>, headers?: Record<string, string>) {
  const stream = await openai.chat.completions.create({ model: 'm', stream: true, ...body }, { headers });
  const deltas: string[] = [];
  const reasoning: string[] = [];
  let usage: OpenAI.CompletionUsage | undefined;
  let finish: string | null = null;
  let reasoningBeforeContent = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    finish = choice.finish_reason ?? finish;
    const delta = choice.delta as { role?: string; content?: string | null; reasoning_content?: string };
    if (typeof delta.reasoning_content === 'string') reasoning.push(delta.reasoning_content);
    if (delta.role === undefined && typeof delta.content === 'string') {
      if (deltas.length === 0) reasoningBeforeContent = reasoning.length;
      deltas.push(delta.content);
    }
  }
  return { deltas, reasoning, reasoningBeforeContent, usage, finish };
}

describe('mock provider: the say: trigger', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 5 });
    openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'unused', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: mock.origin, apiKey: 'unused', maxRetries: 0 });
  });
  after(() => mock?.close());
  beforeEach(() => mock.reset());

  it('chat completions say the text after say: with its usage; streamed, each mark ends one delta', async () => {
    const plain = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `say: ab${MARK}cd${MARK}e` }] });
    assert.equal(plain.choices[0]?.message.content, 'abcde');
    assert.equal(plain.choices[0]?.finish_reason, 'stop');
    assert.equal(plain.usage?.completion_tokens, tokens('abcde'));

    const streamed = await chatDeltas(
      { messages: [{ role: 'user', content: `say: ab${MARK}cd${MARK}e` }], stream_options: { include_usage: true } },
      { 'x-mock-chunks': '1' },
    );
    assert.deepEqual(streamed.deltas, ['ab', 'cd', 'e']);
    assert.equal(streamed.finish, 'stop');
    assert.equal(streamed.usage?.completion_tokens, tokens('abcde'));
  });

  it('a card number split at every offset arrives in exactly those two deltas', async () => {
    for (let at = 1; at < CARD.length; at++) {
      const content = `say: card ${CARD.slice(0, at)}${MARK}${CARD.slice(at)} ok`;
      const { deltas } = await chatDeltas({ messages: [{ role: 'user', content }] });
      assert.deepEqual(deltas, [`card ${CARD.slice(0, at)}`, `${CARD.slice(at)} ok`], `split at ${at}`);
    }
  });

  it('without marks the text streams in x-mock-chunks pieces, never repeated to fill them', async () => {
    const many = await chatDeltas({ messages: [{ role: 'user', content: 'say: <EMAIL_1>' }] });
    assert.equal(many.deltas.length, 5);
    assert.equal(many.deltas.join(''), '<EMAIL_1>');
    const few = await chatDeltas({ messages: [{ role: 'user', content: 'say:abc' }] }, { 'x-mock-chunks': '10' });
    assert.deepEqual(few.deltas, ['a', 'b', 'c']);
  });

  it('say: wins over the tool word and structured output, not over a forced tool call or tool results', async () => {
    const tool = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } };
    const said = await openai.chat.completions.create({
      model: 'm',
      tools: [tool],
      response_format: { type: 'json_object' },
      messages: [{ role: 'user', content: 'say: use the tool' }],
    });
    assert.equal(said.choices[0]?.message.content, 'use the tool');
    assert.equal(said.choices[0]?.message.tool_calls, undefined);

    const forced = await openai.chat.completions.create({
      model: 'm',
      tools: [tool],
      tool_choice: 'required',
      messages: [{ role: 'user', content: 'say: hi' }],
    });
    const call = forced.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(call.function.name, 'lookup');

    const answered = await openai.chat.completions.create({
      model: 'm',
      tools: [tool],
      messages: [
        { role: 'user', content: 'say: hi' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'found' },
      ],
    });
    assert.equal(answered.choices[0]?.message.content, 'Hello from east. The tool said: found');
  });

  it('reasoning still streams first, and the output limit cuts the marked chunks where the text stops', async () => {
    const reasoned = await chatDeltas({ reasoning_effort: 'low', messages: [{ role: 'user', content: `say: x${MARK}y` }] });
    assert.deepEqual(reasoned.deltas, ['x', 'y']);
    assert.equal(reasoned.reasoning.join(''), 'Thinking about it.');
    assert.equal(reasoned.reasoningBeforeContent, reasoned.reasoning.length);

    const cut = await chatDeltas({ messages: [{ role: 'user', content: `say: ab${MARK}cdef${MARK}gh` }] }, { 'x-mock-max-tokens': '1' });
    assert.deepEqual(cut.deltas, ['ab', 'cd']);
    assert.equal(cut.finish, 'length');
  });

  it('Anthropic messages say the text, after the thinking block, and stream the marked deltas', async () => {
    const plain = await anthropic.messages.create({
      model: 'claude-mock',
      max_tokens: 64,
      messages: [{ role: 'user', content: [{ type: 'text', text: `say: ab${MARK}cd${MARK}e` }] }],
    });
    assert.deepEqual(plain.content, [{ type: 'text', text: 'abcde' }]);
    assert.equal(plain.stop_reason, 'end_turn');

    const stream = await anthropic.messages.create({
      model: 'claude-mock',
      max_tokens: 64,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: `say: ${CARD.slice(0, 7)}${MARK}${CARD.slice(7)}` }],
    });
    const blocks: string[] = [];
    const deltas: string[] = [];
    let outputTokens = 0;
    for await (const event of stream) {
      if (event.type === 'content_block_start') blocks.push(event.content_block.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') deltas.push(event.delta.text);
      if (event.type === 'message_delta') outputTokens = event.usage.output_tokens;
    }
    assert.deepEqual(blocks, ['thinking', 'text']);
    assert.deepEqual(deltas, [CARD.slice(0, 7), CARD.slice(7)]);
    assert.equal(outputTokens, tokens(`${CARD}Thinking about it.`));
  });

  it('legacy completions say a string prompt after say:, plain and streamed in the marked chunks', async () => {
    const plain = await openai.completions.create({ model: 'm', prompt: `say: ab${MARK}cd${MARK}e` });
    assert.equal(plain.choices[0]?.text, 'abcde');
    assert.equal(plain.usage?.completion_tokens, tokens('abcde'));

    const stream = await openai.completions.create({
      model: 'm',
      prompt: `say: ab${MARK}cd${MARK}e`,
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (choice !== undefined && choice.finish_reason === null) deltas.push(choice.text);
    }
    assert.deepEqual(deltas, ['ab', 'cd', 'e']);
    assert.equal(usage?.completion_tokens, tokens('abcde'));

    const greeted = await openai.completions.create({ model: 'm', prompt: 'please say: hi' });
    assert.equal(greeted.choices[0]?.text, 'Hello from east.');
  });

  it('the Responses API says a bare string input or the last user item, plain and streamed in the marked chunks', async () => {
    const plain = await openai.responses.create({ model: 'm', input: `say: ab${MARK}cd${MARK}e` });
    assert.equal(plain.output_text, 'abcde');
    assert.equal(plain.usage?.output_tokens, tokens('abcde'));

    const stream = await openai.responses.create({
      model: 'm',
      stream: true,
      reasoning: { effort: 'low' },
      input: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'Hello from east.' },
        { role: 'user', content: [{ type: 'input_text', text: `say: <EMAIL_1>${MARK} is ${MARK}mine` }] },
      ],
    });
    const items: string[] = [];
    const deltas: string[] = [];
    let final: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      if (event.type === 'response.output_item.added') items.push(event.item.type);
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
      if (event.type === 'response.completed') final = event.response;
    }
    assert.deepEqual(items, ['reasoning', 'message']);
    assert.deepEqual(deltas, ['<EMAIL_1>', ' is ', 'mine']);
    const message = final?.output.find((item) => item.type === 'message');
    assert.deepEqual(
      message?.content.map((part) => (part.type === 'output_text' ? part.text : '')),
      ['<EMAIL_1> is mine'],
    );
    const reasoningTokens = final?.usage?.output_tokens_details.reasoning_tokens ?? 0;
    assert.equal(final?.usage?.output_tokens, tokens('<EMAIL_1> is mine') + reasoningTokens);
  });
});
