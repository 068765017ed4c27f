import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { type AIMessage, type AIMessageChunk, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import type { LanguageModel } from 'ai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import {
  GREETING,
  keyOf,
  type ResponsesFixture,
  ROUTES,
  type RouteKind,
  startResponsesFixture,
  UPSTREAM_PATH,
  upstreamBodies,
} from './fixture.js';

// Two agent frameworks on the gateway's Responses API, on every provider protocol: the Vercel
// AI SDK's default OpenAI model (which speaks the Responses API, not chat completions) and
// LangChain's ChatOpenAI with useResponsesApi. Both drive multi-step tool loops that continue
// a conversation the way they do against OpenAI: by item_reference / function_call_output
// items and previous_response_id, which the gateway must resolve from its own store before a
// translated provider can be asked.

let fx: ResponsesFixture;

const KINDS = Object.keys(ROUTES) as RouteKind[];

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly body: string;
  /** The gateway's x-switchyard-dropped answer header: what it could not carry to the provider. */
  dropped?: string | null;
}

/** Every request the clients sent the gateway, so a test can say which API they spoke. */
const sent: Sent[] = [];

/** The fetch both frameworks are given: the global one, noting what goes out. */
const recordingFetch: typeof fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  const note: Sent = { method: init?.method ?? 'GET', path: new URL(url).pathname, body: typeof init?.body === 'string' ? init.body : '' };
  sent.push(note);
  const res = await fetch(input, init);
  note.dropped = res.headers.get('x-switchyard-dropped');
  return res;
};

const responsesCalls = (): Sent[] => sent.filter((s) => s.method === 'POST' && s.path === '/v1/responses');

/** The route's provider was asked on its own protocol, so the gateway (not a shortcut) served the SDK. */
function reachedProvider(kind: RouteKind): void {
  const paths = fx.mocks[kind].stats().recent.map((r) => r.path);
  assert.ok(paths.some(UPSTREAM_PATH[kind]), `${kind} upstream paths: ${paths.join(', ')}`);
}

let aiModel: (route: string) => LanguageModel;

const Forecast = z.object({
  city: z.string(),
  celsius: z.number(),
  days: z.array(z.object({ day: z.string(), rain: z.boolean() })),
});

function textOf(message: { content: unknown }): string {
  if (typeof message.content === 'string') return message.content;
  if (!Array.isArray(message.content)) return '';
  return message.content.map((p: { type?: string; text?: string }) => (p.type === 'text' ? (p.text ?? '') : '')).join('');
}

const chatOpenAI = (route: string): ChatOpenAI =>
  new ChatOpenAI({
    model: route,
    useResponsesApi: true,
    apiKey: keyOf('alpha1'),
    maxRetries: 0,
    configuration: { baseURL: `${fx.gw.url}/v1`, fetch: recordingFetch },
  });

/**
 * A generateText tool loop with reasoning asked for: the route names are no reasoning models
 * to the SDK, so it is told to treat them as one. With store on (its default) it then refers
 * to the reasoning item it was given by item_reference, as it does against OpenAI; with store
 * off it sends the loop inline and leaves out reasoning that carries no encrypted content.
 */
async function reasoningToolLoop(route: string, options: { store?: boolean } = {}) {
  let runs = 0;
  const weather = tool({
    description: 'The weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      runs++;
      return `fog in ${city}`;
    },
  });
  const result = await generateText({
    model: aiModel(route),
    prompt: 'What is the weather in Paris? Use the weather tool.',
    tools: { weather },
    stopWhen: stepCountIs(3),
    providerOptions: { openai: { forceReasoning: true, reasoningEffort: 'low', reasoningSummary: 'auto', ...options } },
    maxRetries: 0,
  });
  assert.equal(runs, 1);
  assert.equal(responsesCalls().length, 2);
  return result;
}

describe('agent frameworks on the Responses API of every provider', () => {
  before(async () => {
    fx = await startResponsesFixture();
    const openai = createOpenAI({ baseURL: `${fx.gw.url}/v1`, apiKey: keyOf('alpha1'), fetch: recordingFetch });
    // The default call, not openai.chat(): in @ai-sdk/openai v2 and later it is the Responses API.
    aiModel = (route) => openai(route);
  });
  after(async () => {
    await fx?.stop();
  });
  beforeEach(() => {
    fx.reset();
    sent.length = 0;
  });

  for (const kind of KINDS) {
    const route = ROUTES[kind];

    describe(`${kind} (${route})`, () => {
      it('AI SDK generateText is answered on /v1/responses with the provider’s text', async () => {
        const result = await generateText({ model: aiModel(route), prompt: 'Say hello', maxRetries: 0 });
        assert.equal(result.text, GREETING[kind]);
        assert.equal(result.finishReason, 'stop');
        assert.ok((result.usage.outputTokens ?? 0) > 0);
        assert.equal(responsesCalls().length, 1, JSON.stringify(sent.map((s) => s.path)));
        reachedProvider(kind);
      });

      it('AI SDK streamText streams the text and reports usage', async () => {
        const result = streamText({ model: aiModel(route), prompt: 'Say hello', maxRetries: 0 });
        let text = '';
        for await (const delta of result.textStream) text += delta;
        assert.equal(text, GREETING[kind]);
        const usage = await result.usage;
        assert.ok((usage.inputTokens ?? 0) > 0, JSON.stringify(usage));
        assert.ok((usage.outputTokens ?? 0) > 0, JSON.stringify(usage));
        assert.equal(await result.finishReason, 'stop');
        assert.equal(responsesCalls().length, 1);
        reachedProvider(kind);
      });

      it('AI SDK runs a tool and continues to the final text in a multi-step loop', async () => {
        let runs = 0;
        const weather = tool({
          description: 'The weather in a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            runs++;
            return `sunny in ${city}`;
          },
        });
        const result = await generateText({
          model: aiModel(route),
          prompt: 'What is the weather in Paris? Use the weather tool.',
          tools: { weather },
          stopWhen: stepCountIs(3),
          maxRetries: 0,
        });
        assert.equal(runs, 1);
        assert.equal(result.steps.length, 2);
        assert.equal(result.steps[0]?.finishReason, 'tool-calls');
        assert.match(result.text, /The tool said: .*sunny in mock/);
        assert.equal(responsesCalls().length, 2);
        // The provider heard the whole conversation on the second step, however the SDK
        // referred to the first step's items.
        const last = JSON.stringify(upstreamBodies(fx, kind).at(-1));
        assert.match(last, /weather in Paris/);
        assert.match(last, /sunny in mock/);
      });

      it('AI SDK streamText runs the tool loop streamed, to the final text', async () => {
        let runs = 0;
        const weather = tool({
          description: 'The weather in a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            runs++;
            return `rain in ${city}`;
          },
        });
        const result = streamText({
          model: aiModel(route),
          prompt: 'What is the weather in Paris? Use the weather tool.',
          tools: { weather },
          stopWhen: stepCountIs(3),
          maxRetries: 0,
        });
        let text = '';
        for await (const delta of result.textStream) text += delta;
        assert.equal(runs, 1);
        assert.match(text, /The tool said: .*rain in mock/);
        assert.equal((await result.steps).length, 2);
        assert.equal(responsesCalls().length, 2);
      });

      it('AI SDK: a second turn built from response.messages refers to the stored answer by item_reference', async () => {
        const first = await generateText({ model: aiModel(route), prompt: 'My name is Ada.', maxRetries: 0 });
        const second = await generateText({
          model: aiModel(route),
          messages: [
            { role: 'user', content: 'My name is Ada.' },
            ...first.response.messages,
            { role: 'user', content: 'What is my name?' },
          ],
          maxRetries: 0,
        });
        assert.equal(second.text, GREETING[kind]);
        const input = (JSON.parse(responsesCalls()[1]?.body ?? '{}') as { input: Array<{ type?: string }> }).input;
        assert.ok(
          input.some((i) => i.type === 'item_reference'),
          `the SDK refers to its stored answer: ${JSON.stringify(input)}`,
        );
        // The gateway put the referenced answer back in its place for the provider.
        const heard = JSON.stringify(upstreamBodies(fx, kind).at(-1));
        for (const said of ['My name is Ada.', GREETING[kind], 'What is my name?']) assert.ok(heard.includes(said), `${said} in ${heard}`);
        assert.ok(!heard.includes('item_reference'), heard);
      });

      it('AI SDK: previousResponseId continues a stored conversation', async () => {
        const first = await generateText({ model: aiModel(route), prompt: 'Remember the number 42.', maxRetries: 0 });
        const previousResponseId = first.providerMetadata?.openai?.responseId;
        assert.equal(typeof previousResponseId, 'string');
        const second = await generateText({
          model: aiModel(route),
          prompt: 'What number?',
          providerOptions: { openai: { previousResponseId: previousResponseId as string } },
          maxRetries: 0,
        });
        assert.equal(second.text, GREETING[kind]);
        const heard = JSON.stringify(upstreamBodies(fx, kind).at(-1));
        for (const said of ['Remember the number 42.', GREETING[kind], 'What number?'])
          assert.ok(heard.includes(said), `${said} in ${heard}`);
      });

      it('AI SDK with reasoning: the tool loop refers to the stored reasoning by item_reference', async () => {
        const result = await reasoningToolLoop(route);
        assert.match(result.text, /The tool said: .*fog in mock/);
        const [first, second] = responsesCalls();
        const input = (JSON.parse(second?.body ?? '{}') as { input: Array<{ type?: string; id?: string }> }).input;
        const reasoningId = result.steps[0]?.content.find((p) => p.type === 'reasoning')?.providerMetadata?.openai?.itemId;
        assert.match(String(reasoningId), /^rs_/);
        assert.ok(
          input.some((i) => i.type === 'item_reference' && i.id === reasoningId),
          JSON.stringify(input),
        );
        assert.equal(first?.dropped, null);
        const heard = JSON.stringify(upstreamBodies(fx, kind).at(-1));
        assert.match(heard, /weather in Paris/);
        // Only the provider that wrote the reasoning, and keeps it, is sent a reference to it.
        if (kind === 'openai') assert.ok(heard.includes(`{"type":"item_reference","id":"${String(reasoningId)}"}`), heard);
        else assert.ok(!heard.includes('item_reference'), heard);
        if (kind === 'anthropic' || kind === 'bedrock') {
          // Mid tool loop Claude wants its own signed thinking back, which a Responses client
          // never held: the turn goes without thinking, and says so.
          assert.ok(!heard.includes('"thinking"'), heard);
          assert.match(second?.dropped ?? '', /reasoning_effort/);
        }
        if (kind === 'gemini') assert.match(heard, /"thoughtSignature"/, 'the call id carried Gemini’s signature back');
      });

      it('AI SDK with store: false sends the whole loop inline, and the gateway keeps none of it', async () => {
        const result = await reasoningToolLoop(route, { store: false });
        assert.match(result.text, /The tool said: .*fog in mock/);
        const bodies = responsesCalls().map((c) => JSON.parse(c.body) as { store?: boolean; input: Array<{ type?: string }> });
        assert.equal(bodies[1]?.store, false);
        assert.ok(!bodies[1]?.input.some((i) => i.type === 'item_reference'), JSON.stringify(bodies[1]));
        const id = result.providerMetadata?.openai?.responseId;
        await assert.rejects(fx.client().responses.retrieve(String(id)), (err: { status?: number }) => err.status === 404);
      });

      it('AI SDK generateObject returns an object the zod schema parses', async () => {
        const result = await generateObject({ model: aiModel(route), schema: Forecast, prompt: 'the forecast', maxRetries: 0 });
        assert.deepEqual(Forecast.parse(result.object), result.object);
        const body = JSON.parse(responsesCalls()[0]?.body ?? '{}') as { text?: { format?: { type?: string } } };
        assert.equal(body.text?.format?.type, 'json_schema', 'the SDK asked for structured output through text.format');
      });

      it('LangChain invoke is answered on /v1/responses with the provider’s text', async () => {
        const reply = await chatOpenAI(route).invoke('Say hello');
        assert.equal(textOf(reply), GREETING[kind]);
        assert.equal(responsesCalls().length, 1, JSON.stringify(sent.map((s) => s.path)));
        reachedProvider(kind);
      });

      it('LangChain stream yields chunks that join to the text', async () => {
        let text = '';
        let chunks = 0;
        for await (const chunk of await chatOpenAI(route).stream('Say hello')) {
          text += textOf(chunk);
          chunks++;
        }
        assert.equal(text, GREETING[kind]);
        assert.ok(chunks > 1);
        assert.equal(responsesCalls().length, 1);
      });

      it('LangChain: a history with the earlier AIMessage, and previous_response_id, both reach the provider whole', async () => {
        const model = chatOpenAI(route);
        const question = new HumanMessage('My name is Ada.');
        const first = await model.invoke([question]);
        assert.equal(textOf(first), GREETING[kind]);
        const again = await model.invoke([question, first, new HumanMessage('What is my name?')]);
        assert.equal(textOf(again), GREETING[kind]);
        let heard = JSON.stringify(upstreamBodies(fx, kind).at(-1));
        for (const said of ['My name is Ada.', GREETING[kind], 'What is my name?']) assert.ok(heard.includes(said), `${said} in ${heard}`);
        const responseId = first.response_metadata.id as string;
        assert.match(responseId, /^resp_/);
        const chained = await model.invoke([new HumanMessage('Where do I live?')], { previous_response_id: responseId });
        assert.equal(textOf(chained), GREETING[kind]);
        heard = JSON.stringify(upstreamBodies(fx, kind).at(-1));
        for (const said of ['My name is Ada.', 'Where do I live?']) assert.ok(heard.includes(said), `${said} in ${heard}`);
      });

      it('LangChain withStructuredOutput(zod) asks through text.format and gets an object the schema parses', async () => {
        const result = await chatOpenAI(route).withStructuredOutput(Forecast).invoke('the forecast');
        assert.deepEqual(Forecast.parse(result), result);
        const body = JSON.parse(responsesCalls()[0]?.body ?? '{}') as { text?: { format?: { type?: string } }; tools?: unknown[] };
        assert.equal(body.text?.format?.type, 'json_schema', JSON.stringify(body));
      });

      it('LangChain stream with bound tools: the chunks add up to the whole tool call', async () => {
        const weather = langchainTool(async ({ city }: { city: string }) => `sunny in ${city}`, {
          name: 'weather',
          description: 'The weather in a city',
          schema: z.object({ city: z.string() }),
        });
        let whole: AIMessageChunk | undefined;
        for await (const chunk of await chatOpenAI(route).bindTools([weather]).stream('Use the weather tool for Paris.')) {
          whole = whole === undefined ? chunk : whole.concat(chunk);
        }
        assert.equal(whole?.tool_calls?.length, 1, JSON.stringify(whole?.tool_call_chunks));
        assert.equal(whole?.tool_calls?.[0]?.name, 'weather');
        assert.deepEqual(whole?.tool_calls?.[0]?.args, { city: 'mock' });
      });

      it('LangChain bindTools: a tool call, its ToolMessage, then the final text', async () => {
        const weather = langchainTool(async ({ city }: { city: string }) => `sunny in ${city}`, {
          name: 'weather',
          description: 'The weather in a city',
          schema: z.object({ city: z.string() }),
        });
        const model = chatOpenAI(route).bindTools([weather]);
        const question = new HumanMessage('What is the weather in Paris? Use the weather tool.');
        const first = (await model.invoke([question])) as AIMessageChunk;
        assert.equal(first.tool_calls?.length, 1, JSON.stringify(first.content));
        const call = first.tool_calls?.[0];
        assert.ok(call !== undefined && call.id !== undefined);
        assert.equal(call.name, 'weather');
        assert.deepEqual(call.args, { city: 'mock' });
        const result = (await weather.invoke(call)) as ToolMessage;
        assert.ok(result instanceof ToolMessage);
        const second = await model.invoke([question, first as AIMessage, result]);
        assert.match(textOf(second), /The tool said: .*sunny in mock/);
        assert.equal(responsesCalls().length, 2);
        assert.match(JSON.stringify(upstreamBodies(fx, kind).at(-1)), /weather in Paris/);
      });
    });
  }

  it('openai: reasoning the OpenAI provider wrote, referred to mid tool loop, goes back to it by reference, nothing dropped', async () => {
    await reasoningToolLoop(ROUTES.openai);
    const bodies = upstreamBodies(fx, 'openai');
    const first = JSON.stringify(bodies.at(-2));
    const heard = bodies.at(-1) as { input: Array<{ type: string; id?: string }> };
    const reference = heard.input.find((i) => i.type === 'item_reference');
    assert.ok(reference?.id?.startsWith('rs_'), JSON.stringify(heard.input));
    assert.ok(!first.includes(reference?.id as string), 'the id is the one the provider gave in its answer, not one it was sent');
    assert.equal(responsesCalls()[1]?.dropped ?? '', '');
  });
});
