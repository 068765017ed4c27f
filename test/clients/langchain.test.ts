import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { AIMessageChunk } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import type { ClientMatrix } from './fixture.js';
import { anthropicGreeting, chatPath, claudeRoute, gptRoute, messagesPath, openaiGreeting, startClientMatrix } from './fixture.js';

// LangChain's ChatOpenAI (over the openai SDK, chat completions) and ChatAnthropic (over
// @anthropic-ai/sdk) against both routes, each in its own protocol.

let m: ClientMatrix;

const weather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
  name: 'weather',
  description: 'Current weather',
  schema: z.object({ city: z.string() }),
});

const Forecast = z.object({ city: z.string(), celsius: z.number(), rain: z.boolean() });

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

function textOf(message: { content: unknown }): string {
  if (typeof message.content === 'string') return message.content;
  if (!Array.isArray(message.content)) return '';
  return message.content.map((p: { type?: string; text?: string }) => (p.type === 'text' ? (p.text ?? '') : '')).join('');
}

const libraries: ReadonlyArray<readonly [string, (route: string) => BaseChatModel, string]> = [
  [
    'ChatOpenAI',
    (route) => new ChatOpenAI({ model: route, apiKey: 'sk-client', maxRetries: 0, configuration: { baseURL: `${m.gw.url}/v1` } }),
    gptRoute,
  ],
  [
    'ChatAnthropic',
    (route) => new ChatAnthropic({ model: route, apiKey: 'sk-ant-client', maxRetries: 0, anthropicApiUrl: m.gw.url }),
    claudeRoute,
  ],
];

describe('LangChain through the gateway', () => {
  before(async () => {
    m = await startClientMatrix();
  });
  after(() => m?.stop());
  beforeEach(() => m.reset());

  for (const [library, chat, sameRoute] of libraries) {
    describe(library, () => {
      for (const target of targets) {
        const how = target.route === sameRoute ? 'same protocol' : 'translated';
        describe(`${target.route} (${how})`, () => {
          it('invoke returns the upstream’s text', async () => {
            const reply = await chat(target.route).invoke('hi');
            assert.equal(textOf(reply), target.greeting);
            assert.ok(
              target
                .upstream()
                .stats()
                .recent.some((r) => r.path === target.path),
            );
          });

          it('stream yields chunks that concatenate to the text', async () => {
            let text = '';
            let chunks = 0;
            for await (const chunk of await chat(target.route).stream('hi')) {
              text += textOf(chunk);
              chunks++;
            }
            assert.equal(text, target.greeting);
            assert.ok(chunks > 1);
          });

          it('withStructuredOutput(zod) returns an object the schema parses', async () => {
            const structured = chat(target.route).withStructuredOutput(Forecast);
            const result = await structured.invoke('the forecast');
            assert.deepEqual(Forecast.parse(result), result);
          });

          it('bindTools: the tool call arrives with its name and arguments', async () => {
            const model = chat(target.route);
            assert.ok(model.bindTools !== undefined);
            const reply = (await model.bindTools([weather]).invoke('use the weather tool for Paris')) as AIMessageChunk;
            assert.equal(reply.tool_calls?.length, 1);
            assert.equal(reply.tool_calls?.[0]?.name, 'weather');
            assert.deepEqual(reply.tool_calls?.[0]?.args, { city: 'mock' });
          });
        });
      }
    });
  }
});
