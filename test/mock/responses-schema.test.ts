import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { OPENAI_SPEC_MISSING, openaiSchema, parseSseEvents, type SseEvent } from '../support/openai-schema.js';

// The mock's Responses API checked against OpenAI's published schema: every body and every
// stream event, for each kind of answer a gateway test asks of it, driven through the
// official SDK (the stream's raw events are read over fetch, so nothing the SDK tolerates
// is hidden).

const schema = openaiSchema();
const skip = schema === null ? OPENAI_SPEC_MISSING : false;

const weather = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};

let mock: MockProvider;
let openai: OpenAI;

async function rawStream(body: Record<string, unknown>): Promise<SseEvent[]> {
  const res = await fetch(`${mock.baseUrl}/responses`, { method: 'POST', body: JSON.stringify({ ...body, stream: true }) });
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  return parseSseEvents(await res.text());
}

function assertValid(problems: string[]): void {
  assert.deepEqual(problems, [], problems.join('\n'));
}

describe('mock provider: the Responses API against OpenAI’s published schema', { skip }, () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 3 });
    openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'unused', maxRetries: 0 });
  });
  after(() => mock?.close());
  beforeEach(() => mock.reset());

  const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ['plain text', { input: 'hello there' }],
    ['a function call', { input: 'use the tool for Paris', tools: [weather] }],
    [
      'the final text after a function_call_output',
      {
        input: [
          { role: 'user', content: 'use the tool' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
        ],
        tools: [weather],
      },
    ],
    ['reasoning with a summary', { input: 'think first', reasoning: { effort: 'low', summary: 'auto' } }],
    [
      'structured output',
      {
        input: 'give JSON',
        text: { format: { type: 'json_schema', name: 'city', strict: true, schema: weather.parameters } },
      },
    ],
    ['a stop at max_output_tokens', { input: 'hello', max_output_tokens: 2 }],
    ['reasoning, then a function call', { input: 'use the tool', tools: [weather], reasoning: { effort: 'medium', summary: 'detailed' } }],
  ];

  for (const [what, body] of cases) {
    it(`${what}: the body is a valid Response, and so is every event of its stream`, async () => {
      const plain = await openai.responses.create({ model: 'gpt-test', ...body } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
      assertValid(schema!.validate('Response', plain));
      const events = await rawStream({ model: 'gpt-test', ...body });
      assertValid(schema!.validateResponsesStream(events));
      const last = events.at(-1)?.data as { response: { output: unknown[] } };
      assert.deepEqual(
        last.response.output.map((item) => (item as { type: string }).type),
        plain.output.map((item) => item.type),
      );
    });
  }

  it('a function call comes back as the SDK reads it, plain and streamed', async () => {
    const plain = await openai.responses.create({ model: 'm', input: 'use the tool', tools: [weather] });
    const call = plain.output.find((item) => item.type === 'function_call');
    assert.equal(call?.name, 'get_weather');
    assert.deepEqual(JSON.parse(call?.arguments ?? ''), { city: 'mock' });
    const stream = openai.responses.stream({ model: 'm', input: 'use the tool', tools: [weather] });
    let args = '';
    for await (const event of stream) if (event.type === 'response.function_call_arguments.delta') args += event.delta;
    const final = await stream.finalResponse();
    assert.deepEqual(JSON.parse(args), { city: 'mock' });
    assert.equal(final.output.find((item) => item.type === 'function_call')?.arguments, args);
  });

  it('reasoning counts in output_tokens; max_output_tokens ends the answer incomplete', async () => {
    const reasoned = await openai.responses.create({ model: 'm', input: 'hi', reasoning: { effort: 'high' } });
    assert.equal(reasoned.output[0]?.type, 'reasoning');
    assert.ok((reasoned.usage?.output_tokens_details.reasoning_tokens ?? 0) > 0);
    const cut = await openai.responses.create({ model: 'm', input: 'hi', max_output_tokens: 2 });
    assert.equal(cut.status, 'incomplete');
    assert.equal(cut.incomplete_details?.reason, 'max_output_tokens');
    assert.equal(cut.output_text, 'Hello fr');
  });

  it('a kept response read back by id is valid too', async () => {
    const created = await openai.responses.create({ model: 'm', input: 'hi', tools: [weather] });
    const read = await fetch(`${mock.baseUrl}/responses/${created.id}`);
    assertValid(schema!.validate('Response', await read.json()));
  });
});
