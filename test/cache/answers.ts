import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnswerCapture } from '../../src/cache/captured.js';
import type { CachedOperation, CachedProtocol, CacheEntry } from '../../src/cache/entry.js';
import type { MockProvider } from '../../src/mock/index.js';

// Real answers for the cache's tests: what the mock provider says on each endpoint, whole
// and streamed, with and without a tool call, captured into entries as the request path
// captures a miss's answer; and a tiny server that writes a replay to an official SDK.

/** An endpoint in its client protocol. */
export type AnswerCase = 'chat' | 'messages' | 'completions' | 'responses' | 'embeddings';

/** The text the model is told to say: long enough for several deltas, with a character outside the BMP. */
export const SAID = 'The quick brown fox jumps over the lazy dog, then naps in the warm sun 🌞 until dusk.';

export const OPERATION: Readonly<Record<AnswerCase, CachedOperation>> = {
  chat: 'chat',
  messages: 'chat',
  completions: 'completions',
  responses: 'responses',
  embeddings: 'embeddings',
};
export const PROTOCOL: Readonly<Record<AnswerCase, CachedProtocol>> = {
  chat: 'openai',
  messages: 'anthropic',
  completions: 'openai',
  responses: 'responses',
  embeddings: 'openai',
};

const PATH: Readonly<Record<AnswerCase, string>> = {
  chat: '/v1/chat/completions',
  messages: '/v1/messages',
  completions: '/v1/completions',
  responses: '/v1/responses',
  embeddings: '/v1/embeddings',
};

const WEATHER_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

export interface AskOptions {
  readonly stream?: boolean;
  /** Offer the weather tool and ask for it. */
  readonly tool?: boolean;
  /** OpenAI: `stream_options.include_usage`. */
  readonly includeUsage?: boolean;
  /** Ask for the model's reasoning (OpenAI `reasoning_effort`, Anthropic `thinking`, a Responses reasoning summary). */
  readonly reasoning?: boolean;
}

function requestBody(c: AnswerCase, o: AskOptions): Record<string, unknown> {
  const words = o.tool === true ? 'use the weather tool for Oslo' : `say: ${SAID}`;
  const stream = o.stream === true ? { stream: true } : {};
  const usage = o.includeUsage === true ? { stream_options: { include_usage: true } } : {};
  const think = o.reasoning === true;
  switch (c) {
    case 'chat': {
      const tools = o.tool === true ? { tools: [{ type: 'function', function: { name: 'weather', parameters: WEATHER_SCHEMA } }] } : {};
      const reasoning = think ? { reasoning_effort: 'low' } : {};
      return { model: 'm', messages: [{ role: 'user', content: words }], ...tools, ...reasoning, ...stream, ...usage };
    }
    case 'messages': {
      const tools = o.tool === true ? { tools: [{ name: 'weather', input_schema: WEATHER_SCHEMA }] } : {};
      const thinking = think ? { thinking: { type: 'enabled', budget_tokens: 1024 } } : {};
      return { model: 'm', max_tokens: 2048, messages: [{ role: 'user', content: words }], ...tools, ...thinking, ...stream };
    }
    case 'completions':
      return { model: 'm', prompt: words, ...stream, ...usage };
    case 'responses': {
      const tools = o.tool === true ? { tools: [{ type: 'function', name: 'weather', parameters: WEATHER_SCHEMA }] } : {};
      const reasoning = think ? { reasoning: { effort: 'low', summary: 'auto' } } : {};
      return { model: 'm', input: words, store: false, ...tools, ...reasoning, ...stream };
    }
    case 'embeddings':
      return { model: 'm', input: SAID };
  }
}

/** The mock's answer to one request, as text (a JSON body or an event stream). */
export async function ask(mock: MockProvider, c: AnswerCase, o: AskOptions = {}): Promise<string> {
  const res = await fetch(`${mock.origin}${PATH[c]}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(requestBody(c, o)),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return text;
}

/** An answer captured as the request path captures a miss's, made into an entry (its usage given, as the path knows it). */
export function entryOf(c: AnswerCase, form: 'whole' | 'stream', text: string, usage: CacheEntry['usage'] = null): CacheEntry {
  const capture = new AnswerCapture({ operation: OPERATION[c], protocol: PROTOCOL[c], maxBytes: 1 << 20 });
  if (form === 'whole') capture.body(200, text);
  else capture.events(text);
  const got = capture.result();
  assert.equal(got.complete, true, `the ${c} answer is whole`);
  return {
    v: 1,
    key: 'k'.repeat(64),
    operation: OPERATION[c],
    protocol: PROTOCOL[c],
    route: 'm',
    team: 'none',
    createdAtMs: 0,
    ttlS: 60,
    form,
    ...(form === 'whole' ? { body: got.body } : { events: got.events }),
    origin: { provider: 'east', model: 'm', candidate: 'east/m' },
    usage,
    costMicroUsd: null,
  };
}

/** The data of each event, parsed (`[DONE]` as the string). */
export function dataOf(events: readonly string[]): unknown[] {
  return events.map((event) => {
    const data = event
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    return data === '[DONE]' ? data : JSON.parse(data);
  });
}

/** A server that answers every request with what `reply` holds now: events (written one per chunk) or a JSON body. */
export class ReplayServer {
  reply: { events: readonly string[] } | { body: string } = { body: '{}' };
  #server: Server | null = null;
  baseUrl = '';

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const reply = this.reply;
        if ('body' in reply) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(reply.body);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const event of reply.events) res.write(event);
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.#server === null ? resolve() : this.#server.close(() => resolve())));
  }
}
