import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { z } from 'zod';
import type { ClientMatrix } from './fixture.js';
import {
  anthropicGreeting,
  chatPath,
  claudeModel,
  claudeRoute,
  droppedFields,
  gptModel,
  gptRoute,
  hasKeyDeep,
  lastBody,
  messagesPath,
  openaiGreeting,
  requestsTo,
  startClientMatrix,
} from './fixture.js';

// The official Anthropic SDK against both routes: claude-route is passed through to an
// Anthropic upstream, gpt-route is translated to an OpenAI one. Each case checks what the
// client got and what the upstream received.

let m: ClientMatrix;
let anthropic: Anthropic;

const weather: Tool = {
  name: 'weather',
  description: 'Current weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const Forecast = z.object({ city: z.string(), celsius: z.number(), rain: z.boolean() });
const forecastSchema = z.toJSONSchema(Forecast) as Record<string, unknown>;

const hi: MessageParam[] = [{ role: 'user', content: 'hi' }];

function textOf(message: Anthropic.Message): string {
  return message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

describe('the Anthropic SDK through the gateway', () => {
  before(async () => {
    m = await startClientMatrix();
    anthropic = new Anthropic({ baseURL: m.gw.url, apiKey: 'sk-ant-client', maxRetries: 0, timeout: 10_000 });
  });
  after(() => m?.stop());
  beforeEach(() => m.reset());

  describe('claude-route: an Anthropic upstream, passed through', () => {
    it('a plain message arrives with the upstream’s text, at /v1/messages, with the route’s model', async () => {
      const { data, response } = await anthropic.messages.create({ model: claudeRoute, max_tokens: 64, messages: hi }).withResponse();
      assert.deepEqual(data.content, [{ type: 'text', text: anthropicGreeting }]);
      assert.equal(data.stop_reason, 'end_turn');
      assert.equal(droppedFields(response.headers), null);
      assert.equal(lastBody(m.anthropicUpstream, messagesPath).model, claudeModel);
      assert.equal(m.openaiUpstream.stats().total, 0);
    });

    it('a stream assembles into the same message', async () => {
      const final = await anthropic.messages.stream({ model: claudeRoute, max_tokens: 64, messages: hi }).finalMessage();
      assert.equal(textOf(final), anthropicGreeting);
      assert.equal(final.stop_reason, 'end_turn');
      assert.ok(final.usage.output_tokens > 0);
    });

    it('the everyday parameters arrive exactly as sent, and nothing is reported dropped', async () => {
      const params = {
        max_tokens: 100,
        messages: hi,
        system: [{ type: 'text' as const, text: 'be brief', cache_control: { type: 'ephemeral' as const } }],
        temperature: 0.7,
        top_p: 0.9,
        top_k: 40,
        stop_sequences: ['END'],
        metadata: { user_id: 'user-1' },
        tools: [{ ...weather, eager_input_streaming: true }],
        tool_choice: { type: 'auto' as const },
      };
      const { response } = await anthropic.messages.create({ model: claudeRoute, ...params }).withResponse();
      assert.equal(droppedFields(response.headers), null);
      const { model, ...rest } = lastBody(m.anthropicUpstream, messagesPath);
      assert.equal(model, claudeModel);
      assert.deepEqual(rest, params);
    });

    it('a tool round trip: the tool_use arrives with its input, the tool_result comes back in the final text', async () => {
      await toolRoundTrip(claudeRoute, anthropicGreeting);
    });

    it('structured output: output_config.format arrives untouched and the text is JSON the schema accepts', async () => {
      const message = await anthropic.messages.create({
        model: claudeRoute,
        max_tokens: 256,
        messages: hi,
        output_config: { format: { type: 'json_schema', schema: forecastSchema } },
      });
      Forecast.parse(JSON.parse(textOf(message)));
      assert.deepEqual(lastBody(m.anthropicUpstream, messagesPath).output_config, {
        format: { type: 'json_schema', schema: forecastSchema },
      });
    });

    it('thinking: the streamed message carries the thinking block with its signature', async () => {
      const final = await anthropic.messages
        .stream({ model: claudeRoute, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: hi })
        .finalMessage();
      const [thinking, text] = final.content;
      assert.equal(thinking?.type, 'thinking');
      assert.equal(thinking?.type === 'thinking' ? thinking.thinking : null, 'Thinking about it.');
      assert.ok(thinking?.type === 'thinking' && thinking.signature.length > 0);
      assert.equal(text?.type === 'text' ? text.text : null, anthropicGreeting);
      assert.deepEqual(lastBody(m.anthropicUpstream, messagesPath).thinking, { type: 'enabled', budget_tokens: 1024 });
    });
  });

  describe('gpt-route: an OpenAI upstream, translated', () => {
    it('a plain message is translated to /v1/chat/completions and back into an Anthropic message', async () => {
      const message = await anthropic.messages.create({ model: gptRoute, max_tokens: 64, messages: hi });
      assert.equal(message.type, 'message');
      assert.equal(message.role, 'assistant');
      assert.deepEqual(
        message.content.map((b) => b.type),
        ['text'],
      );
      assert.equal(textOf(message), openaiGreeting);
      assert.equal(message.stop_reason, 'end_turn');
      assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
      const upstream = lastBody(m.openaiUpstream, chatPath);
      assert.equal(upstream.model, gptModel);
      const [sent] = upstream.messages as Array<{ role: string; content: unknown }>;
      assert.equal(sent?.role, 'user');
      assert.equal(m.anthropicUpstream.stats().total, 0);
    });

    it('a system prompt arrives as the first, system message', async () => {
      await anthropic.messages.create({ model: gptRoute, max_tokens: 64, system: 'be brief', messages: hi });
      const [first] = lastBody(m.openaiUpstream, chatPath).messages as Array<{ role: string; content: unknown }>;
      assert.equal(first?.role, 'system');
      assert.ok(JSON.stringify(first?.content).includes('be brief'));
    });

    it('a stream is translated into Anthropic events the SDK assembles', async () => {
      const stream = anthropic.messages.stream({ model: gptRoute, max_tokens: 64, messages: hi });
      const types = new Set<string>();
      stream.on('streamEvent', (event) => {
        types.add(event.type);
      });
      const final = await stream.finalMessage();
      assert.equal(textOf(final), openaiGreeting);
      assert.equal(final.stop_reason, 'end_turn');
      for (const t of [
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]) {
        assert.ok(types.has(t), `saw ${t}`);
      }
      assert.equal(lastBody(m.openaiUpstream, chatPath).stream, true);
    });

    it('a tool round trip: tools go up as functions, tool_calls come back as tool_use, the tool_result goes up as a tool message', async () => {
      await toolRoundTrip(gptRoute, openaiGreeting);
      const [first, second] = requestsTo(m.openaiUpstream, chatPath).map((r) => JSON.parse(r.body) as Record<string, unknown>);
      assert.deepEqual(first?.tools, [
        { type: 'function', function: { name: 'weather', description: 'Current weather', parameters: weather.input_schema } },
      ]);
      const messages = second?.messages as Array<Record<string, unknown>>;
      const assistant = messages.at(-2) as {
        role: string;
        tool_calls: Array<{ id: string; function: { name: string; arguments: string } }>;
      };
      assert.equal(assistant.role, 'assistant');
      assert.equal(assistant.tool_calls[0]?.function.name, 'weather');
      assert.deepEqual(JSON.parse(assistant.tool_calls[0]?.function.arguments ?? ''), { city: 'mock' });
      const tool = messages.at(-1);
      assert.equal(tool?.role, 'tool');
      assert.equal(tool?.tool_call_id, assistant.tool_calls[0]?.id);
    });

    it('a streamed tool call assembles into a tool_use block with its whole input', async () => {
      const final = await anthropic.messages
        .stream({ model: gptRoute, max_tokens: 64, tools: [weather], messages: [{ role: 'user', content: 'use the weather tool' }] })
        .finalMessage();
      const call = final.content.find((b) => b.type === 'tool_use');
      assert.equal(call?.type === 'tool_use' ? call.name : null, 'weather');
      assert.deepEqual(call?.type === 'tool_use' ? call.input : null, { city: 'mock' });
      assert.equal(final.stop_reason, 'tool_use');
    });

    it('structured output: output_config.format goes up as response_format json_schema and the text parses', async () => {
      const message = await anthropic.messages.create({
        model: gptRoute,
        max_tokens: 256,
        messages: hi,
        output_config: { format: { type: 'json_schema', schema: forecastSchema } },
      });
      Forecast.parse(JSON.parse(textOf(message)));
      const upstream = lastBody(m.openaiUpstream, chatPath);
      const format = upstream.response_format as { type: string; json_schema: { name: unknown; schema: unknown; strict: unknown } };
      assert.equal(format.type, 'json_schema');
      assert.equal(typeof format.json_schema.name, 'string');
      assert.notEqual(format.json_schema.name, '');
      assert.deepEqual(format.json_schema.schema, forecastSchema);
      assert.equal(typeof format.json_schema.strict, 'boolean');
      assert.equal('output_config' in upstream, false);
    });

    it('top_k is dropped and listed; stop_sequences become stop; metadata.user_id becomes user', async () => {
      // This SDK's types no longer declare temperature, top_p or top_k, but it sends what it is given.
      const params = {
        model: gptRoute,
        max_tokens: 64,
        messages: hi,
        top_k: 40,
        temperature: 0.5,
        stop_sequences: ['END', 'STOP'],
        metadata: { user_id: 'user-1' },
      };
      const { response } = await anthropic.messages.create(params).withResponse();
      const upstream = lastBody(m.openaiUpstream, chatPath);
      assert.equal('top_k' in upstream, false);
      assert.equal(upstream.temperature, 0.5);
      assert.deepEqual(upstream.stop, ['END', 'STOP']);
      assert.equal(upstream.user, 'user-1');
      assert.equal('metadata' in upstream, false);
      assert.equal('stop_sequences' in upstream, false);
      assert.deepEqual(droppedFields(response.headers), ['top_k']);
    });

    it('a tool’s eager_input_streaming is dropped and listed as tools.eager_input_streaming', async () => {
      const { response } = await anthropic.messages
        .create({ model: gptRoute, max_tokens: 64, messages: hi, tools: [{ ...weather, eager_input_streaming: true }] })
        .withResponse();
      assert.equal(hasKeyDeep(lastBody(m.openaiUpstream, chatPath).tools, 'eager_input_streaming'), false);
      assert.ok(
        droppedFields(response.headers)?.includes('tools.eager_input_streaming'),
        `dropped: ${response.headers.get('x-switchyard-dropped')}`,
      );
    });

    it('cache_control blocks are dropped toward OpenAI and listed as cache_control', async () => {
      const { data, response } = await anthropic.messages
        .create({
          model: gptRoute,
          max_tokens: 64,
          system: [{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }],
          messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
        })
        .withResponse();
      assert.equal(textOf(data), openaiGreeting);
      assert.equal(hasKeyDeep(lastBody(m.openaiUpstream, chatPath), 'cache_control'), false);
      assert.ok(droppedFields(response.headers)?.includes('cache_control'), `dropped: ${response.headers.get('x-switchyard-dropped')}`);
    });

    it('thinking goes up as reasoning_effort, and the upstream’s reasoning_content comes back as a thinking block', async () => {
      const message = await anthropic.messages.create({
        model: gptRoute,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages: hi,
      });
      const upstream = lastBody(m.openaiUpstream, chatPath);
      assert.ok(['low', 'medium', 'high'].includes(upstream.reasoning_effort as string), `reasoning_effort ${upstream.reasoning_effort}`);
      assert.equal('thinking' in upstream, false);
      const [thinking, text] = message.content;
      assert.equal(thinking?.type, 'thinking');
      assert.equal(thinking?.type === 'thinking' ? thinking.thinking : null, 'Thinking about it.');
      assert.equal(thinking?.type === 'thinking' ? typeof thinking.signature : null, 'string');
      assert.equal(text?.type === 'text' ? text.text : null, openaiGreeting);
    });

    it('streamed, reasoning_content comes back as thinking_delta events the SDK assembles into a thinking block', async () => {
      const stream = anthropic.messages.stream({
        model: gptRoute,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages: hi,
      });
      let thinkingDeltas = '';
      stream.on('thinking', (delta) => {
        thinkingDeltas += delta;
      });
      const final = await stream.finalMessage();
      assert.equal(thinkingDeltas, 'Thinking about it.');
      const [thinking, text] = final.content;
      assert.equal(thinking?.type === 'thinking' ? thinking.thinking : null, 'Thinking about it.');
      assert.equal(text?.type === 'text' ? text.text : null, openaiGreeting);
    });
  });
});

/** Asks for the weather tool, checks the tool_use, sends its result and checks the final text quotes it. */
async function toolRoundTrip(model: string, greeting: string): Promise<void> {
  const ask: MessageParam[] = [{ role: 'user', content: 'use the weather tool for Paris' }];
  const first = await anthropic.messages.create({ model, max_tokens: 64, messages: ask, tools: [weather] });
  assert.equal(first.stop_reason, 'tool_use');
  const call = first.content.find((b) => b.type === 'tool_use');
  assert.ok(call !== undefined && call.type === 'tool_use');
  assert.equal(call.name, 'weather');
  assert.deepEqual(call.input, { city: 'mock' });
  const final = await anthropic.messages.create({
    model,
    max_tokens: 64,
    tools: [weather],
    messages: [
      ...ask,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny, 21C' }] },
    ],
  });
  assert.equal(textOf(final), `${greeting} The tool said: sunny, 21C`);
  assert.equal(final.stop_reason, 'end_turn');
}
