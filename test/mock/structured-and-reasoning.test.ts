import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { sseData } from '../support/observe.js';

// Structured output and reasoning, checked through the official SDKs so the mock's shapes are
// the ones real clients parse, and through raw HTTP where the exact wire matters.

let mock: MockProvider;
let anthropic: Anthropic;
let openai: OpenAI;

const Weather = z.object({
  city: z.string(),
  celsius: z.number().min(-90).max(60),
  days: z.array(z.object({ day: z.enum(['mon', 'tue']), rain: z.boolean(), note: z.string().nullable() })),
  kind: z.literal('forecast'),
  updated: z.string().datetime(),
});

const nestedSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 10 },
    tags: { type: 'array', items: { type: 'string' } },
    owner: { $ref: '#/$defs/person' },
    backup: { $ref: '#/definitions/person' },
    status: { enum: ['open', 'closed'] },
    choice: { anyOf: [{ type: 'number' }, { type: 'string' }] },
    maybe: { type: ['null', 'boolean'] },
    version: { const: 3 },
  },
  required: ['id'],
  $defs: { person: { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string', format: 'email' } } } },
  definitions: { person: { type: 'object', properties: { name: { type: 'string' } } } },
};

function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${mock.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('mock provider: structured output and reasoning', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    anthropic = new Anthropic({ baseURL: mock.origin, apiKey: 'sk-ant-mock', maxRetries: 0 });
    openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-mock', maxRetries: 0 });
  });
  after(() => mock.close());
  beforeEach(() => mock.reset());

  describe('structured output', () => {
    it('an OpenAI json_schema answer is JSON the caller’s zod schema parses, through chat.completions.parse', async () => {
      const completion = await openai.chat.completions.parse({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'weather?' }],
        response_format: zodResponseFormat(Weather, 'weather'),
      });
      const parsed = completion.choices[0]?.message.parsed;
      assert.deepEqual(Weather.parse(parsed), parsed);
      assert.equal(parsed?.kind, 'forecast');
      assert.equal(parsed?.days.length, 1);
      assert.equal(completion.choices[0]?.finish_reason, 'stop');
    });

    it('the placeholder follows nested objects, arrays, $ref to $defs and definitions, enum, const, unions and minimum', async () => {
      const res = await post('/v1/chat/completions', {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        response_format: { type: 'json_schema', json_schema: { name: 'thing', schema: nestedSchema, strict: false } },
      });
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      assert.deepEqual(JSON.parse(body.choices[0]?.message.content ?? ''), {
        id: 10,
        tags: ['mock'],
        owner: { name: 'mock', email: 'mock@example.com' },
        backup: { name: 'mock' },
        status: 'open',
        choice: 1,
        maybe: true,
        version: 3,
      });
    });

    it('a recursive schema ends in a finite value', async () => {
      const tree = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } } };
      const res = await post('/v1/messages', {
        model: 'm',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        output_config: { format: { type: 'json_schema', schema: tree } },
      });
      const body = (await res.json()) as { content: Array<{ text: string }> };
      let node = JSON.parse(body.content[0]?.text ?? '') as { children?: unknown[] };
      let levels = 0;
      while (Array.isArray(node.children) && node.children.length > 0) {
        node = node.children[0] as typeof node;
        levels++;
      }
      assert.ok(levels > 0 && levels < 50);
    });

    it('json_object answers with a JSON object holding the greeting', async () => {
      const completion = await openai.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        response_format: { type: 'json_object' },
      });
      assert.deepEqual(JSON.parse(completion.choices[0]?.message.content ?? ''), { text: 'Hello from east.' });
    });

    it('a streamed json_schema answer concatenates to the JSON even when asked for more chunks than it has characters', async () => {
      const schema = { type: 'object', properties: { ok: { type: 'boolean' } } };
      const stream = await openai.chat.completions.create(
        {
          model: 'm',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
          response_format: { type: 'json_schema', json_schema: { name: 'ok', schema } },
        },
        { headers: { 'x-mock-chunks': '50' } },
      );
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.deepEqual(JSON.parse(text), { ok: true });
    });

    it('an Anthropic output_config.format answer is one text block of valid JSON, plain and streamed', async () => {
      const schema = z.toJSONSchema(Weather);
      const message = await anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'weather?' }],
        output_config: { format: { type: 'json_schema', schema } },
      });
      assert.equal(message.content.length, 1);
      const block = message.content[0];
      assert.equal(block?.type, 'text');
      Weather.parse(JSON.parse(block?.type === 'text' ? block.text : ''));

      const final = await anthropic.messages
        .stream({
          model: 'c',
          max_tokens: 256,
          messages: [{ role: 'user', content: 'weather?' }],
          output_config: { format: { type: 'json_schema', schema } },
        })
        .finalMessage();
      const streamed = final.content[0];
      Weather.parse(JSON.parse(streamed?.type === 'text' ? streamed.text : ''));
    });

    it('the older beta output_format is honoured too', async () => {
      const res = await post('/v1/messages', {
        model: 'm',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        output_format: { type: 'json_schema', schema: { type: 'object', properties: { n: { type: 'integer' } } } },
      });
      const body = (await res.json()) as { content: Array<{ type: string; text: string }> };
      assert.deepEqual(JSON.parse(body.content[0]?.text ?? ''), { n: 1 });
    });

    it('a tool call still wins over structured output when the tool is forced', async () => {
      const message = await anthropic.messages.create({
        model: 'c',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 'lookup', input_schema: { type: 'object', properties: { ids: { type: 'array', items: { type: 'integer' } } } } }],
        tool_choice: { type: 'tool', name: 'lookup' },
        output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string' } } } } },
      });
      assert.equal(message.stop_reason, 'tool_use');
      assert.deepEqual(message.content[0]?.type === 'tool_use' ? message.content[0].input : null, { ids: [1] });
    });

    it('the final text after tool results is JSON under structured output', async () => {
      const completion = await openai.chat.completions.create({
        model: 'm',
        messages: [
          { role: 'user', content: 'use the tool' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 't', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        ],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'r', schema: { type: 'object', properties: { sky: { type: 'string' } } } },
        },
      });
      assert.deepEqual(JSON.parse(completion.choices[0]?.message.content ?? ''), { sky: 'mock' });
    });
  });

  describe('reasoning', () => {
    it('Anthropic thinking enabled puts a signed thinking block before the text and counts it in output tokens', async () => {
      const plain = await anthropic.messages.create({ model: 'c', max_tokens: 2048, messages: [{ role: 'user', content: 'hi' }] });
      const message = await anthropic.messages.create({
        model: 'c',
        max_tokens: 2048,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(message.content.length, 2);
      const [thinking, text] = message.content;
      assert.equal(thinking?.type, 'thinking');
      if (thinking?.type !== 'thinking') return;
      assert.equal(thinking.thinking, 'Thinking about it.');
      assert.match(thinking.signature, /^[A-Za-z0-9+/]{20,}={0,2}$/);
      assert.deepEqual(text, { type: 'text', text: 'Hello from east.' });
      assert.ok(message.usage.output_tokens > plain.usage.output_tokens);
    });

    it('adaptive thinking thinks too, and the thinking block precedes a tool call', async () => {
      const message = await anthropic.messages.create({
        model: 'c',
        max_tokens: 2048,
        thinking: { type: 'adaptive' },
        tools: [{ name: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        messages: [{ role: 'user', content: 'use the weather tool' }],
      });
      assert.deepEqual(
        message.content.map((b) => b.type),
        ['thinking', 'tool_use'],
      );
    });

    it('a streamed thinking block arrives as thinking_delta and signature_delta, the text at index 1', async () => {
      const res = await post('/v1/messages', {
        model: 'c',
        max_tokens: 2048,
        stream: true,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'hi' }],
      });
      const events = sseData(await res.text()).map((d) => JSON.parse(d) as Record<string, unknown>);
      const starts = events.filter((e) => e.type === 'content_block_start');
      assert.deepEqual(
        starts.map((e) => [e.index, (e.content_block as { type: string }).type]),
        [
          [0, 'thinking'],
          [1, 'text'],
        ],
      );
      const deltas = events.filter((e) => e.type === 'content_block_delta').map((e) => [e.index, (e.delta as { type: string }).type]);
      const firstText = deltas.findIndex(([, t]) => t === 'text_delta');
      assert.ok(deltas.slice(0, firstText).every(([i]) => i === 0));
      assert.deepEqual(deltas[firstText - 1], [0, 'signature_delta']);
      assert.ok(deltas.slice(firstText).every(([i, t]) => i === 1 && t === 'text_delta'));
    });

    it('the Anthropic SDK’s stream assembles the thinking block with its signature', async () => {
      const final = await anthropic.messages
        .stream({
          model: 'c',
          max_tokens: 2048,
          thinking: { type: 'enabled', budget_tokens: 1024 },
          messages: [{ role: 'user', content: 'hi' }],
        })
        .finalMessage();
      const [thinking, text] = final.content;
      assert.equal(thinking?.type === 'thinking' ? thinking.thinking : null, 'Thinking about it.');
      assert.ok(thinking?.type === 'thinking' && thinking.signature.length > 20);
      assert.equal(text?.type === 'text' ? text.text : null, 'Hello from east.');
    });

    it('OpenAI reasoning_effort gives reasoning_content beside the content, counted as reasoning tokens', async () => {
      const completion = await openai.chat.completions.create({
        model: 'm',
        reasoning_effort: 'low',
        messages: [{ role: 'user', content: 'hi' }],
      });
      const message = completion.choices[0]?.message as unknown as Record<string, unknown>;
      assert.equal(message.reasoning_content, 'Thinking about it.');
      assert.equal(message.content, 'Hello from east.');
      const reasoningTokens = completion.usage?.completion_tokens_details?.reasoning_tokens ?? 0;
      assert.ok(reasoningTokens > 0);
      assert.ok((completion.usage?.completion_tokens ?? 0) > reasoningTokens);
    });

    it('reasoning_effort none and no reasoning_effort give no reasoning_content', async () => {
      for (const extra of [{ reasoning_effort: 'none' as const }, {}]) {
        const completion = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
        const message = completion.choices[0]?.message as unknown as Record<string, unknown>;
        assert.equal('reasoning_content' in message, false);
        assert.equal(completion.usage?.completion_tokens_details, undefined);
      }
    });

    it('a streamed reasoning_effort answer sends delta.reasoning_content chunks before the content chunks', async () => {
      const stream = await openai.chat.completions.create({
        model: 'm',
        stream: true,
        stream_options: { include_usage: true },
        reasoning_effort: 'high',
        messages: [{ role: 'user', content: 'hi' }],
      });
      const order: string[] = [];
      let reasoning = '';
      let content = '';
      let reasoningTokens = 0;
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta as Record<string, unknown> | undefined;
        if (typeof delta?.reasoning_content === 'string') {
          reasoning += delta.reasoning_content;
          order.push('reasoning');
        }
        if (typeof delta?.content === 'string' && delta.content !== '') {
          content += delta.content;
          order.push('content');
        }
        reasoningTokens = chunk.usage?.completion_tokens_details?.reasoning_tokens ?? reasoningTokens;
      }
      assert.equal(reasoning, 'Thinking about it.');
      assert.equal(content, 'Hello from east.');
      assert.equal(order.lastIndexOf('reasoning') < order.indexOf('content'), true);
      assert.ok(reasoningTokens > 0);
    });
  });
});
