import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { OPENAI_SPEC_MISSING, openaiSchema, parseSseEvents } from '../support/openai-schema.js';

// The mock's chat completions and legacy completions checked against OpenAI's published
// schema, body and every chunk, for each kind of answer a gateway test asks of it.

const schema = openaiSchema();

const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
];
const hi = [{ role: 'user', content: 'hi' }];

let mock: MockProvider;

async function post(path: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${mock.baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  return res.text();
}

function chunksOf(text: string): unknown[] {
  const events = parseSseEvents(text);
  assert.equal(events.at(-1)?.data, '[DONE]');
  return events.slice(0, -1).map((e) => e.data);
}

function assertValid(problems: string[]): void {
  assert.deepEqual(problems, [], problems.join('\n'));
}

describe('mock provider: chat completions against OpenAI’s published schema', {
  skip: schema === null ? OPENAI_SPEC_MISSING : false,
}, () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 3 });
  });
  after(() => mock?.close());

  const cases: ReadonlyArray<readonly [string, Record<string, unknown>, Record<string, string>?]> = [
    ['plain text', { messages: hi }],
    ['a tool call', { messages: [{ role: 'user', content: 'use the tool' }], tools }],
    ['reasoning', { messages: hi, reasoning_effort: 'low' }],
    [
      'structured output',
      { messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: tools[0]?.function.parameters } } },
    ],
    ['a stop at the output limit', { messages: hi }, { 'x-mock-max-tokens': '2' }],
  ];
  for (const [what, body, headers] of cases) {
    it(`${what}: the body and every streamed chunk are valid`, async () => {
      const plain = JSON.parse(await post('/chat/completions', { model: 'm', ...body }, headers));
      assertValid(schema!.validate('CreateChatCompletionResponse', plain));
      const streamed = await post(
        '/chat/completions',
        { model: 'm', ...body, stream: true, stream_options: { include_usage: true } },
        headers,
      );
      for (const [i, chunk] of chunksOf(streamed).entries()) {
        assertValid(schema!.validate('CreateChatCompletionStreamResponse', chunk).map((p) => `chunk ${i}: ${p}`));
      }
    });
  }

  // The spec gives a streamed legacy completion the body's schema, whose finish_reason cannot
  // be null; OpenAI's chunks before the last carry null there, so those are checked without it.
  it('a legacy completion and its chunks are valid', async () => {
    const plain = JSON.parse(await post('/completions', { model: 'm', prompt: 'hi' }));
    assertValid(schema!.validate('CreateCompletionResponse', plain));
    const streamed = await post('/completions', { model: 'm', prompt: 'hi', stream: true });
    for (const [i, chunk] of chunksOf(streamed).entries()) {
      const choices = (chunk as { choices: Record<string, unknown>[] }).choices.map((c) =>
        c.finish_reason === null ? { ...c, finish_reason: 'stop' } : c,
      );
      assertValid(schema!.validate('CreateCompletionResponse', { ...(chunk as object), choices }).map((p) => `chunk ${i}: ${p}`));
    }
  });
});
