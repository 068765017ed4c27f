import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';
import { generateObject, generateText, streamText, tool } from 'ai';
import { z } from 'zod';
import type { ClientMatrix } from './fixture.js';
import {
  anthropicGreeting,
  chatPath,
  claudeRoute,
  droppedFields,
  gptRoute,
  hasKeyDeep,
  lastBody,
  messagesPath,
  openaiGreeting,
  startClientMatrix,
} from './fixture.js';

// The Vercel AI SDK's OpenAI (chat completions) and Anthropic providers against both routes,
// each in its own protocol: the OpenAI provider calls `${gw}/v1/chat/completions`, the
// Anthropic provider `${gw}/v1/messages`.

let m: ClientMatrix;
let openaiChat: (model: string) => LanguageModel;
let anthropicModel: (model: string) => LanguageModel;

const weather = tool({ description: 'Current weather', inputSchema: z.object({ city: z.string() }) });

const Forecast = z.object({
  city: z.string(),
  celsius: z.number(),
  days: z.array(z.object({ day: z.string(), rain: z.boolean() })),
});

interface Target {
  readonly route: string;
  readonly greeting: string;
  readonly upstream: () => ClientMatrix['openaiUpstream'];
  readonly path: string;
}

const targets: readonly Target[] = [
  { route: gptRoute, greeting: openaiGreeting, upstream: () => m.openaiUpstream, path: chatPath },
  { route: claudeRoute, greeting: anthropicGreeting, upstream: () => m.anthropicUpstream, path: messagesPath },
];

/**
 * Reads a streamText result to its end and throws the first error part, so a failed stream
 * fails with the gateway's message rather than the SDK's "No output generated".
 */
async function settle(result: { fullStream: AsyncIterable<{ type: string; error?: unknown }> }): Promise<void> {
  for await (const part of result.fullStream) if (part.type === 'error') throw part.error;
}

/** settle() reports stream errors; the SDK's default handler would also print them. */
const quiet = (): void => undefined;

describe('the Vercel AI SDK through the gateway', () => {
  before(async () => {
    // The Anthropic provider warns on every call that it does not know the model "claude-route".
    (globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
    m = await startClientMatrix();
    const openai = createOpenAI({ baseURL: `${m.gw.url}/v1`, apiKey: 'sk-client' });
    const anthropic = createAnthropic({ baseURL: `${m.gw.url}/v1`, apiKey: 'sk-ant-client' });
    openaiChat = (model) => openai.chat(model);
    anthropicModel = (model) => anthropic(model);
  });
  after(() => m?.stop());
  beforeEach(() => m.reset());

  for (const [library, model, sameRoute] of [
    ['@ai-sdk/openai (chat)', () => openaiChat, gptRoute],
    ['@ai-sdk/anthropic', () => anthropicModel, claudeRoute],
  ] as const) {
    describe(library, () => {
      for (const target of targets) {
        const how = target.route === sameRoute ? 'same protocol' : 'translated';
        describe(`${target.route} (${how})`, () => {
          it('generateText returns the upstream’s text', async () => {
            const result = await generateText({ model: model()(target.route), prompt: 'hi', maxRetries: 0 });
            assert.equal(result.text, target.greeting);
            assert.equal(result.finishReason, 'stop');
            assert.ok((result.usage.outputTokens ?? 0) > 0);
            assert.ok(
              target
                .upstream()
                .stats()
                .recent.some((r) => r.path === target.path),
            );
            if (target.route === sameRoute) assert.equal(droppedFields(result.response.headers ?? {}), null);
          });

          it('streamText with a zod tool streams the tool call with its arguments', async () => {
            const result = streamText({
              model: model()(target.route),
              prompt: 'use the weather tool for Paris',
              tools: { weather },
              maxRetries: 0,
              onError: quiet,
            });
            await settle(result);
            const calls = await result.toolCalls;
            assert.equal(calls.length, 1);
            assert.equal(calls[0]?.toolName, 'weather');
            assert.deepEqual(calls[0]?.input, { city: 'mock' });
            assert.equal(await result.finishReason, 'tool-calls');
            const upstreamTools = lastBody(target.upstream(), target.path).tools;
            if (target.route === gptRoute) assert.equal(hasKeyDeep(upstreamTools, 'eager_input_streaming'), false);
          });

          it('generateObject with a zod schema returns an object the schema parses', async () => {
            const result = await generateObject({ model: model()(target.route), schema: Forecast, prompt: 'the forecast', maxRetries: 0 });
            assert.deepEqual(Forecast.parse(result.object), result.object);
          });
        });
      }
    });
  }

  it('@ai-sdk/anthropic streamText marks tools eager_input_streaming; toward OpenAI it is dropped and listed', async () => {
    const same = streamText({
      model: anthropicModel(claudeRoute),
      prompt: 'use the weather tool',
      tools: { weather },
      maxRetries: 0,
      onError: quiet,
    });
    await settle(same);
    const sent = lastBody(m.anthropicUpstream, messagesPath).tools as Array<Record<string, unknown>>;
    assert.equal(sent[0]?.eager_input_streaming, true);

    const translated = streamText({
      model: anthropicModel(gptRoute),
      prompt: 'use the weather tool',
      tools: { weather },
      maxRetries: 0,
      onError: quiet,
    });
    await settle(translated);
    const headers = (await translated.response).headers ?? {};
    assert.ok(droppedFields(headers)?.includes('tools.eager_input_streaming'), `dropped: ${JSON.stringify(headers)}`);
  });
});
