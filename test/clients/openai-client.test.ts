import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
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

// The official OpenAI SDK against both routes: gpt-route is passed through to an OpenAI
// upstream, claude-route is translated to an Anthropic one. Each case checks what the client
// got and what the upstream received.

let m: ClientMatrix;
let openai: OpenAI;

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'weather',
    description: 'Current weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const Forecast = z.object({ city: z.string(), celsius: z.number(), rain: z.boolean() });

const hi: ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

/** A 1×1 PNG, enough for an image part. */
const pixel = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

describe('the OpenAI SDK through the gateway', () => {
  before(async () => {
    m = await startClientMatrix();
    openai = new OpenAI({ baseURL: `${m.gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0, timeout: 10_000 });
  });
  after(() => m?.stop());
  beforeEach(() => m.reset());

  describe('gpt-route: an OpenAI upstream, passed through', () => {
    it('a plain completion arrives with the upstream’s text, at /v1/chat/completions, with the route’s model', async () => {
      const { data, response } = await openai.chat.completions.create({ model: gptRoute, messages: hi }).withResponse();
      assert.equal(data.choices[0]?.message.content, openaiGreeting);
      assert.equal(data.choices[0]?.finish_reason, 'stop');
      assert.equal(droppedFields(response.headers), null);
      assert.equal(requestsTo(m.openaiUpstream, chatPath).length, 1);
      assert.equal(lastBody(m.openaiUpstream, chatPath).model, gptModel);
      assert.equal(m.anthropicUpstream.stats().total, 0);
    });

    it('a stream concatenates to the text and ends with the usage chunk it asked for', async () => {
      const stream = await openai.chat.completions.create({
        model: gptRoute,
        messages: hi,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        usage = chunk.usage ?? usage;
      }
      assert.equal(text, openaiGreeting);
      assert.ok((usage?.completion_tokens ?? 0) > 0);
      assert.deepEqual(lastBody(m.openaiUpstream, chatPath).stream_options, { include_usage: true });
    });

    it('the everyday parameters arrive exactly as sent, and nothing is reported dropped', async () => {
      const params = {
        messages: hi,
        temperature: 1.5,
        top_p: 0.9,
        max_completion_tokens: 100,
        seed: 7,
        frequency_penalty: 0.5,
        presence_penalty: 0.25,
        stop: ['END'],
        user: 'user-1',
        logit_bias: { '50256': -100 },
        metadata: { team: 'a' },
        store: false,
        service_tier: 'auto' as const,
        parallel_tool_calls: false,
        tools: [weatherTool],
        tool_choice: 'auto' as const,
      };
      const { response } = await openai.chat.completions.create({ model: gptRoute, ...params }).withResponse();
      assert.equal(droppedFields(response.headers), null);
      const { model, ...rest } = lastBody(m.openaiUpstream, chatPath);
      assert.equal(model, gptModel);
      assert.deepEqual(rest, params);
    });

    it('a tool call round trip: the call arrives with its arguments, the result comes back in the final text', async () => {
      await toolRoundTrip(gptRoute, openaiGreeting);
      const second = lastBody(m.openaiUpstream, chatPath);
      const messages = second.messages as Array<Record<string, unknown>>;
      assert.equal(messages.at(-1)?.role, 'tool');
    });

    it('structured output: chat.completions.parse gets an object its zod schema accepts, and response_format arrives untouched', async () => {
      const format = zodResponseFormat(Forecast, 'forecast');
      const completion = await openai.chat.completions.parse({ model: gptRoute, messages: hi, response_format: format });
      assert.deepEqual(completion.choices[0]?.message.parsed, Forecast.parse(completion.choices[0]?.message.parsed));
      assert.deepEqual(lastBody(m.openaiUpstream, chatPath).response_format, JSON.parse(JSON.stringify(format)));
    });

    it('reasoning_effort reaches the upstream and its reasoning_content reaches the client', async () => {
      const completion = await openai.chat.completions.create({ model: gptRoute, messages: hi, reasoning_effort: 'low' });
      const message = completion.choices[0]?.message as unknown as Record<string, unknown> | undefined;
      assert.equal(message?.reasoning_content, 'Thinking about it.');
      assert.equal(lastBody(m.openaiUpstream, chatPath).reasoning_effort, 'low');
    });
  });

  describe('claude-route: an Anthropic upstream, translated', () => {
    it('a plain completion is translated to /v1/messages with max_tokens, and back', async () => {
      const { data } = await openai.chat.completions.create({ model: claudeRoute, messages: hi }).withResponse();
      assert.equal(data.object, 'chat.completion');
      assert.equal(data.choices[0]?.message.content, anthropicGreeting);
      assert.equal(data.choices[0]?.finish_reason, 'stop');
      assert.ok((data.usage?.prompt_tokens ?? 0) > 0 && (data.usage?.completion_tokens ?? 0) > 0);
      const upstream = lastBody(m.anthropicUpstream, messagesPath);
      assert.equal(upstream.model, claudeModel);
      assert.ok(Number.isSafeInteger(upstream.max_tokens));
      const [sent] = upstream.messages as Array<{ role: string; content: unknown }>;
      assert.equal(sent?.role, 'user');
      assert.ok(sent?.content === 'hi' || JSON.stringify(sent?.content) === '[{"type":"text","text":"hi"}]', JSON.stringify(sent));
      assert.equal(m.openaiUpstream.stats().total, 0);
    });

    it('a stream is translated into chat.completion.chunk deltas that concatenate to the text', async () => {
      const stream = await openai.chat.completions.create({
        model: claudeRoute,
        messages: hi,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let finish: string | null | undefined;
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        usage = chunk.usage ?? usage;
      }
      assert.equal(text, anthropicGreeting);
      assert.equal(finish, 'stop');
      assert.ok((usage?.completion_tokens ?? 0) > 0);
      assert.equal(lastBody(m.anthropicUpstream, messagesPath).stream, true);
    });

    it('a tool call round trip: tools go up as input_schema, the tool_use comes back as tool_calls, the result as a tool_result', async () => {
      await toolRoundTrip(claudeRoute, anthropicGreeting);
      const [first, second] = requestsTo(m.anthropicUpstream, messagesPath).map((r) => JSON.parse(r.body) as Record<string, unknown>);
      assert.deepEqual(first?.tools, [{ name: 'weather', description: 'Current weather', input_schema: weatherTool.function.parameters }]);
      const messages = second?.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>;
      const assistant = messages.at(-2);
      const user = messages.at(-1);
      assert.equal(assistant?.role, 'assistant');
      const toolUse = assistant?.content.find((b) => b.type === 'tool_use');
      assert.deepEqual(toolUse?.input, { city: 'mock' });
      assert.equal(user?.role, 'user');
      const result = user?.content.find((b) => b.type === 'tool_result');
      assert.equal(result?.tool_use_id, toolUse?.id);
    });

    it('a streamed tool call arrives as tool_calls deltas with the id, the name and the whole arguments', async () => {
      const stream = await openai.chat.completions.create({
        model: claudeRoute,
        stream: true,
        tools: [weatherTool],
        messages: [{ role: 'user', content: 'use the weather tool' }],
      });
      let args = '';
      let name = '';
      let id = '';
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        const call = chunk.choices[0]?.delta.tool_calls?.[0];
        args += call?.function?.arguments ?? '';
        name += call?.function?.name ?? '';
        id = call?.id ?? id;
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(name, 'weather');
      assert.notEqual(id, '');
      assert.deepEqual(JSON.parse(args), { city: 'mock' });
      assert.equal(finish, 'tool_calls');
    });

    it('structured output: response_format json_schema goes up as output_config.format, and parse accepts the answer', async () => {
      const format = zodResponseFormat(Forecast, 'forecast');
      const completion = await openai.chat.completions.parse({ model: claudeRoute, messages: hi, response_format: format });
      const parsed = completion.choices[0]?.message.parsed;
      assert.deepEqual(parsed, Forecast.parse(parsed));
      const upstream = lastBody(m.anthropicUpstream, messagesPath);
      assert.deepEqual(upstream.output_config, { format: { type: 'json_schema', schema: format.json_schema.schema } });
      assert.equal('response_format' in upstream, false);
    });

    it('parameters Anthropic has no field for are dropped and listed in x-switchyard-dropped', async () => {
      const { data, response } = await openai.chat.completions
        .create({
          model: claudeRoute,
          messages: hi,
          seed: 7,
          frequency_penalty: 0.5,
          presence_penalty: 0.25,
          logit_bias: { '50256': -100 },
          store: true,
          prediction: { type: 'content', content: 'Hello' },
          // `auto` is the default and asks for nothing, so it would not be listed.
          service_tier: 'flex',
          metadata: { team: 'a' },
        })
        .withResponse();
      assert.equal(data.choices[0]?.message.content, anthropicGreeting);
      const upstream = lastBody(m.anthropicUpstream, messagesPath);
      for (const field of ['seed', 'frequency_penalty', 'presence_penalty', 'logit_bias', 'store', 'prediction', 'service_tier']) {
        assert.equal(field in upstream, false, `${field} must not reach the Anthropic upstream`);
      }
      assert.equal(hasKeyDeep(upstream.metadata ?? {}, 'team'), false);
      const dropped = droppedFields(response.headers) ?? [];
      for (const field of [
        'seed',
        'frequency_penalty',
        'presence_penalty',
        'logit_bias',
        'store',
        'prediction',
        'service_tier',
        'metadata',
      ]) {
        assert.ok(
          dropped.some((d) => d === field || d.startsWith(`${field}.`)),
          `x-switchyard-dropped lists ${field}: ${dropped.join(',')}`,
        );
      }
    });

    it('temperature above Anthropic’s range arrives as 1 and is listed; stop becomes stop_sequences; user becomes metadata.user_id', async () => {
      const { response } = await openai.chat.completions
        .create({ model: claudeRoute, messages: hi, temperature: 1.5, stop: ['END', 'STOP'], user: 'user-1', top_p: 0.9 })
        .withResponse();
      const upstream = lastBody(m.anthropicUpstream, messagesPath);
      assert.equal(upstream.temperature, 1);
      assert.equal(upstream.top_p, 0.9);
      assert.deepEqual(upstream.stop_sequences, ['END', 'STOP']);
      assert.deepEqual(upstream.metadata, { user_id: 'user-1' });
      assert.equal('stop' in upstream, false);
      assert.equal('user' in upstream, false);
      assert.ok(droppedFields(response.headers)?.includes('temperature'));
    });

    it('metadata.user_id alone arrives as metadata.user_id', async () => {
      await openai.chat.completions.create({ model: claudeRoute, messages: hi, metadata: { user_id: 'user-2' }, store: true });
      assert.deepEqual(lastBody(m.anthropicUpstream, messagesPath).metadata, { user_id: 'user-2' });
    });

    it('max_completion_tokens arrives as max_tokens', async () => {
      await openai.chat.completions.create({ model: claudeRoute, messages: hi, max_completion_tokens: 321 });
      assert.equal(lastBody(m.anthropicUpstream, messagesPath).max_tokens, 321);
    });

    it('reasoning_effort arrives as a thinking budget below max_tokens, and the thinking comes back as reasoning_content', async () => {
      const completion = await openai.chat.completions.create({
        model: claudeRoute,
        messages: hi,
        reasoning_effort: 'low',
        max_completion_tokens: 8000,
      });
      const message = completion.choices[0]?.message as unknown as Record<string, unknown>;
      assert.equal(message.reasoning_content, 'Thinking about it.');
      assert.equal(message.content, anthropicGreeting);
      const upstream = lastBody(m.anthropicUpstream, messagesPath);
      const thinking = upstream.thinking as { type: string; budget_tokens: number };
      assert.equal(thinking.type, 'enabled');
      assert.ok(thinking.budget_tokens >= 1024, `budget ${thinking.budget_tokens}`);
      assert.ok(
        thinking.budget_tokens < (upstream.max_tokens as number),
        `budget ${thinking.budget_tokens} < max_tokens ${upstream.max_tokens}`,
      );
      assert.equal('reasoning_effort' in upstream, false);
    });

    it('streamed, the thinking comes back as delta.reasoning_content before the content', async () => {
      const stream = await openai.chat.completions.create({
        model: claudeRoute,
        messages: hi,
        reasoning_effort: 'medium',
        max_completion_tokens: 8000,
        stream: true,
      });
      let reasoning = '';
      let text = '';
      let reasoningAfterText = false;
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta as Record<string, unknown> | undefined;
        if (typeof delta?.reasoning_content === 'string') {
          reasoning += delta.reasoning_content;
          if (text !== '') reasoningAfterText = true;
        }
        text += typeof delta?.content === 'string' ? delta.content : '';
      }
      assert.equal(reasoning, 'Thinking about it.');
      assert.equal(text, anthropicGreeting);
      assert.equal(reasoningAfterText, false);
    });

    it('a text part’s cache_control arrives on the Anthropic text block', async () => {
      const part = {
        type: 'text',
        text: 'long context',
        cache_control: { type: 'ephemeral' },
      } as unknown as OpenAI.ChatCompletionContentPartText;
      await openai.chat.completions.create({ model: claudeRoute, messages: [{ role: 'user', content: [part] }] });
      const messages = lastBody(m.anthropicUpstream, messagesPath).messages as Array<{ content: Array<Record<string, unknown>> }>;
      assert.deepEqual(messages[0]?.content[0], { type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } });
    });

    it('an image part arrives as a base64 image block, its detail dropped and listed', async () => {
      const { response } = await openai.chat.completions
        .create({
          model: claudeRoute,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'what is this?' },
                { type: 'image_url', image_url: { url: pixel, detail: 'high' } },
              ],
            },
          ],
        })
        .withResponse();
      const messages = lastBody(m.anthropicUpstream, messagesPath).messages as Array<{ content: Array<Record<string, unknown>> }>;
      const image = messages[0]?.content.find((b) => b.type === 'image');
      assert.deepEqual(image?.source, { type: 'base64', media_type: 'image/png', data: pixel.slice(pixel.indexOf(',') + 1) });
      assert.equal(hasKeyDeep(messages, 'detail'), false);
      assert.ok(
        droppedFields(response.headers)?.some((d) => d.includes('detail')),
        `dropped: ${response.headers.get('x-switchyard-dropped')}`,
      );
    });

    for (const [field, extra] of [
      ['n', { n: 2 }],
      ['logprobs', { logprobs: true }],
      ['top_logprobs', { top_logprobs: 2 }],
    ] as const) {
      it(`${field} cannot be honoured by the route's only candidate: a 400 naming it, and nothing sent upstream`, async () => {
        const params = { model: claudeRoute, messages: hi, ...extra } as ChatCompletionCreateParamsNonStreaming;
        await assert.rejects(openai.chat.completions.create(params), (err: unknown) => {
          assert.ok(err instanceof OpenAI.BadRequestError, String(err));
          assert.match(err.message, new RegExp(`\\b${field}\\b`));
          return true;
        });
        assert.equal(m.anthropicUpstream.stats().total, 0);
      });
    }
  });
});

/** Asks for the weather tool, checks the call, sends its result and checks the final text quotes it. */
async function toolRoundTrip(model: string, greeting: string): Promise<void> {
  const ask: ChatCompletionMessageParam[] = [{ role: 'user', content: 'use the weather tool for Paris' }];
  const first = await openai.chat.completions.create({ model, messages: ask, tools: [weatherTool] });
  const choice = first.choices[0];
  assert.equal(choice?.finish_reason, 'tool_calls');
  const call = choice?.message.tool_calls?.[0];
  assert.ok(call !== undefined && call.type === 'function');
  assert.equal(call.function.name, 'weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'mock' });
  const final = await openai.chat.completions.create({
    model,
    tools: [weatherTool],
    messages: [
      ...ask,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
    ],
  });
  assert.equal(final.choices[0]?.message.content, `${greeting} The tool said: sunny, 21C`);
  assert.equal(final.choices[0]?.finish_reason, 'stop');
}
