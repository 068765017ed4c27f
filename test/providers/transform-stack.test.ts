import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  type AnswerTransform,
  anthropicMetering,
  composeTransforms,
  type PlainAnswer,
  type ProviderPool,
  type Relayed,
  type RelayResult,
  type RelayTransformAsync,
  relay,
  responsesMetering,
  type TokenUsage,
  transformBody,
  translation,
  withoutUsageEvent,
} from '../../src/providers/index.js';
import type { RawHandler } from '../../src/providers/provider-pool.js';

// The transform stack (transform-stack.ts) through the relay, against a scripted upstream
// and a real client connection: an empty stack keeps the pass-through's bytes, and a
// transform of the stack sees whole events (or a whole body) in the client's protocol,
// whatever the upstream spoke, for the OpenAI chat, Anthropic and Responses dialects.

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const JSON_TYPE = [b('content-type'), b('application/json')];
const SSE_TYPE = [b('content-type'), b('text/event-stream')];

/** A pool that answers every call with `chunks`, a turn after dispatch (as undici does). */
function upstream(headers: Buffer[], chunks: readonly Buffer[]): ProviderPool {
  const dispatch = (_call: unknown, h: RawHandler): void => {
    h.onConnect((err) => h.onError(err ?? new Error('aborted')));
    setImmediate(() => {
      h.onHeaders(200, headers, () => undefined, 'OK');
      for (const c of chunks) h.onData(c);
      h.onComplete(null);
    });
  };
  return { dispatch } as unknown as ProviderPool;
}

/** `text` cut at every `size` bytes: events split across chunks, as a socket delivers them. */
function cut(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

interface Seen {
  readonly status: number;
  readonly rawHeaders: string[];
  readonly body: Buffer;
  readonly trailers: NodeJS.Dict<string>;
  readonly relayed: Relayed | null;
}

let server: Server;
let next: { pool: ProviderPool; transform: RelayTransformAsync | undefined } | null = null;
let outcome: Promise<Relayed | null> | null = null;

before(async () => {
  server = createServer((_req, res) => {
    const { pool, transform } = next as NonNullable<typeof next>;
    outcome = new Promise((resolve) => {
      relay(
        {
          res,
          pool,
          providerName: 'east',
          call: { method: 'POST', path: '/chat/completions', headers: {}, body: null, timeoutMs: 5000 },
          clientHeaders: { attribution: ['x-switchyard-provider', 'east'], own: ['x-switchyard-request-id', 'r1'] },
          ...(transform === undefined ? {} : { transform }),
        },
        (result: RelayResult) => {
          if (result.kind !== 'committed') {
            res.writeHead(599).end();
            resolve(null);
          } else result.onFinished(resolve);
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

after(() => {
  server.closeAllConnections();
  server.close();
});

async function through(pool: ProviderPool, transform: RelayTransformAsync | undefined): Promise<Seen> {
  next = { pool, transform };
  const { port } = server.address() as AddressInfo;
  const seen = await new Promise<Omit<Seen, 'relayed'>>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks), trailers: res.trailers }),
      );
    });
    req.on('error', reject);
    req.end();
  });
  return { ...seen, relayed: await (outcome as NonNullable<typeof outcome>) };
}

/**
 * A transform that edits one word in every event it sees, and keeps what it was given, to
 * check each call held whole events only (every one ends with its empty line).
 */
function editing(from: string, to: string): { transform: AnswerTransform; seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    transform: {
      events(events) {
        const text = events.toString();
        seen.push(text);
        return text.replaceAll(from, to);
      },
      body(_status, body) {
        const text = body.toString();
        seen.push(text);
        return text.replaceAll(from, to);
      },
    },
  };
}

/** The events of an SSE text, each as its lines' `event:` name (or '') and parsed `data:` JSON (or the raw data). */
function eventsOf(text: string): Array<{ event: string; data: unknown }> {
  return text
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => {
      const lines = e.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? '';
      const raw = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? '';
      let data: unknown = raw;
      try {
        data = JSON.parse(raw);
      } catch {}
      return { event, data };
    });
}

/** Every piece a transform was given is whole events: it ends with the empty line that ends its last event. */
function assertWholeEvents(seen: readonly string[]): void {
  assert.ok(seen.length > 0, 'the transform saw the stream');
  for (const piece of seen) assert.ok(piece.endsWith('\n\n'), `a part of an event reached the transform: ${JSON.stringify(piece)}`);
}

const openaiChunk = (delta: Record<string, unknown>, finish: string | null = null, usage: unknown = null): string =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: usage === null ? [{ index: 0, delta, finish_reason: finish }] : [], usage })}\n\n`;

const OPENAI_STREAM =
  openaiChunk({ role: 'assistant', content: '' }) +
  openaiChunk({ content: 'hello ' }) +
  openaiChunk({ content: 'world' }) +
  openaiChunk({}, 'stop') +
  openaiChunk({}, null, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }) +
  'data: [DONE]\n\n';

const anthropicEvent = (payload: Record<string, unknown>): string =>
  `event: ${payload.type as string}\ndata: ${JSON.stringify(payload)}\n\n`;

const ANTHROPIC_STREAM =
  anthropicEvent({
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'up',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 5, output_tokens: 1 },
    },
  }) +
  anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
  anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hello ' } }) +
  anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'world' } }) +
  anthropicEvent({ type: 'content_block_stop', index: 0 }) +
  anthropicEvent({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 6 } }) +
  anthropicEvent({ type: 'message_stop' });

const responsesEvent = (type: string, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

const RESPONSES_STREAM =
  responsesEvent('response.created', { sequence_number: 0, response: { id: 'resp_1', status: 'in_progress', usage: null } }) +
  responsesEvent('response.output_text.delta', { sequence_number: 1, item_id: 'msg_1', delta: 'hello ' }) +
  responsesEvent('response.output_text.delta', { sequence_number: 2, item_id: 'msg_1', delta: 'world' }) +
  responsesEvent('response.completed', {
    sequence_number: 3,
    response: { id: 'resp_1', status: 'completed', usage: { input_tokens: 8, output_tokens: 2, total_tokens: 10 } },
  });

/** The text the client's stream carries, read in its dialect. */
function openaiText(body: Buffer): string {
  return eventsOf(body.toString())
    .map((e) => (e.data as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? '')
    .join('');
}
function anthropicText(body: Buffer): string {
  return eventsOf(body.toString())
    .map((e) => (e.data as { delta?: { text?: string } }).delta?.text ?? '')
    .join('');
}

describe('composeTransforms: one function over the translation and the stack', () => {
  it('an empty stack is the translation itself: none stays none (the pass-through), a translation stays that object', () => {
    assert.equal(composeTransforms(undefined, []), undefined);
    assert.equal(composeTransforms(undefined), undefined);
    const t = anthropicMetering();
    assert.equal(composeTransforms(t, []), t);
  });

  it('a stack that only adds headers over no translation has no body part: the relay keeps its pass-through for the bytes', () => {
    const cost: AnswerTransform = { usageHeaders: () => ({ 'x-cost': '1' }), trailers: 'x-cost' };
    const t = composeTransforms(undefined, [cost]) as RelayTransformAsync;
    for (const part of ['plain', 'chunk', 'end', 'fail', 'usage'] as const) assert.equal(t[part], undefined, part);
    assert.equal(t.trailers, 'x-cost');
  });

  it('the stack runs in order, after the translation, and the headers of every transform are merged', async () => {
    const order: string[] = [];
    const step = (name: string): AnswerTransform => ({
      body: (_s, body) => {
        order.push(name);
        return `${body.toString()}${name}`;
      },
      usageHeaders: () => ({ [`x-${name}`]: name }),
    });
    const t = composeTransforms(undefined, [step('a'), step('b')]) as RelayTransformAsync;
    const answer = (await t.plain?.(200, b('{"usage":{"prompt_tokens":1,"completion_tokens":2}}'))) as PlainAnswer | undefined;
    assert.deepEqual(order, ['a', 'b']);
    assert.equal(answer?.body, '{"usage":{"prompt_tokens":1,"completion_tokens":2}}ab');
    assert.deepEqual(answer?.usage, { inputTokens: 1, outputTokens: 2 }, 'billed on what the upstream reported');
    assert.deepEqual(t.usageHeaders?.(null), { 'x-a': 'a', 'x-b': 'b' });
    assert.equal(transformBody([step('c')], 200, 'x'), 'xc', 'the same stack applies to a body the relay does not carry');
  });
});

describe('an empty stack keeps the pass-through byte for byte', { timeout: 5000 }, () => {
  it('a same-protocol stream: the client gets the upstream’s bytes, odd framing included, and its usage is billed', async () => {
    // CRLF line ends, a comment line, an event without its last empty line: passed as they came.
    const odd = `: keep-alive\r\n\r\n${OPENAI_STREAM.replaceAll('\n\n', '\r\n\r\n')}data: {"tail":1}`;
    const seen = await through(upstream(SSE_TYPE, cut(odd, 7)), composeTransforms(undefined, []));
    assert.equal(seen.body.toString(), odd);
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 3, outputTokens: 4 });
  });

  it('a same-protocol plain answer: the upstream’s bytes, its content type and length', async () => {
    const body = '{ "id":"c1",  "choices":[], "usage":{"prompt_tokens":3,"completion_tokens":4} }\n';
    const seen = await through(upstream(JSON_TYPE, cut(body, 11)), composeTransforms(undefined, []));
    assert.equal(seen.body.toString(), body);
    assert.equal(seen.rawHeaders[seen.rawHeaders.indexOf('content-type') + 1], 'application/json');
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 3, outputTokens: 4 });
  });
});

describe('a transform sees whole events in the client’s protocol', { timeout: 5000 }, () => {
  it('OpenAI chat, same protocol: events edited, whole, and the usage still billed from the upstream’s', async () => {
    const { transform, seen } = editing('hello', 'HELLO');
    const out = await through(upstream(SSE_TYPE, cut(OPENAI_STREAM, 5)), composeTransforms(undefined, [transform]));
    assertWholeEvents(seen);
    assert.equal(openaiText(out.body), 'HELLO world');
    assert.equal(out.body.toString(), OPENAI_STREAM.replace('hello', 'HELLO'));
    assert.deepEqual(out.relayed?.usage, { inputTokens: 3, outputTokens: 4 });
  });

  it('OpenAI chat, usage event taken out for the client: the transform sees what the client gets', async () => {
    const { transform, seen } = editing('world', 'WORLD');
    const out = await through(upstream(SSE_TYPE, cut(OPENAI_STREAM, 9)), composeTransforms(withoutUsageEvent(), [transform]));
    assertWholeEvents(seen);
    assert.ok(!seen.join('').includes('"usage":{'), 'the usage-only event was taken out before the stack');
    assert.equal(openaiText(out.body), 'hello WORLD');
    assert.deepEqual(out.relayed?.usage, { inputTokens: 3, outputTokens: 4 });
  });

  it('OpenAI chat client, Anthropic upstream: the transform sees OpenAI chunks, not Anthropic events', async () => {
    const { transform, seen } = editing('hello', 'HELLO');
    const out = await through(
      upstream(SSE_TYPE, cut(ANTHROPIC_STREAM, 13)),
      composeTransforms(translation('anthropic', 'openai', false), [transform]),
    );
    assertWholeEvents(seen);
    const events = eventsOf(seen.join(''));
    assert.ok(
      events.every((e) => e.event === '' && (e.data === '[DONE]' || (e.data as { object?: string }).object === 'chat.completion.chunk')),
    );
    assert.equal(openaiText(out.body), 'HELLO world');
    assert.deepEqual(out.relayed?.usage, { inputTokens: 5, outputTokens: 6 });
  });

  it('Anthropic, same protocol (metered as it passes): events edited, whole, the usage read from the upstream’s', async () => {
    const { transform, seen } = editing('world', 'WORLD');
    const out = await through(upstream(SSE_TYPE, cut(ANTHROPIC_STREAM, 6)), composeTransforms(anthropicMetering(), [transform]));
    assertWholeEvents(seen);
    assert.equal(out.body.toString(), ANTHROPIC_STREAM.replace('world', 'WORLD'));
    assert.equal(anthropicText(out.body), 'hello WORLD');
    assert.deepEqual(out.relayed?.usage, { inputTokens: 5, outputTokens: 6 });
  });

  it('Anthropic client, OpenAI upstream: the transform sees Anthropic events, the translation’s last ones included', async () => {
    const { transform, seen } = editing('hello', 'HELLO');
    const out = await through(
      upstream(SSE_TYPE, cut(OPENAI_STREAM, 8)),
      composeTransforms(translation('openai', 'anthropic', false), [transform]),
    );
    assertWholeEvents(seen);
    const names = eventsOf(seen.join('')).map((e) => e.event);
    assert.ok(names.includes('message_start') && names.includes('content_block_delta') && names.at(-1) === 'message_stop', names.join());
    assert.equal(anthropicText(out.body), 'HELLO world');
    assert.deepEqual(out.relayed?.usage, { inputTokens: 3, outputTokens: 4 });
  });

  it('Responses: events edited, whole; the response id and the usage still read from the upstream’s', async () => {
    const ids: string[] = [];
    const { transform, seen } = editing('hello', 'HELLO');
    const out = await through(
      upstream(SSE_TYPE, cut(RESPONSES_STREAM, 10)),
      composeTransforms(
        responsesMetering((id) => ids.push(id)),
        [transform],
      ),
    );
    assertWholeEvents(seen);
    assert.equal(out.body.toString(), RESPONSES_STREAM.replace('hello', 'HELLO'));
    assert.deepEqual(ids, ['resp_1']);
    assert.deepEqual(out.relayed?.usage, { inputTokens: 8, outputTokens: 2 });
  });

  it('a plain answer, translated: the transform sees the client’s body whole, and the cost header still comes from the usage', async () => {
    const body = JSON.stringify({
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'up',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hello world' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
    const { transform, seen } = editing('hello', 'HELLO');
    const cost: AnswerTransform = { usageHeaders: (u: TokenUsage | null) => (u === null ? null : { 'x-cost': String(u.outputTokens) }) };
    const out = await through(
      upstream(JSON_TYPE, cut(body, 20)),
      composeTransforms(translation('openai', 'anthropic', false), [transform, cost]),
    );
    assert.equal(seen.length, 1);
    assert.equal((JSON.parse(seen[0] as string) as { type: string }).type, 'message', 'the Anthropic body, not the OpenAI one');
    assert.equal((JSON.parse(out.body.toString()) as { content: Array<{ text: string }> }).content[0]?.text, 'HELLO world');
    assert.equal(out.rawHeaders[out.rawHeaders.indexOf('x-cost') + 1], '4');
    assert.equal(out.rawHeaders[out.rawHeaders.indexOf('content-length') + 1], String(out.body.length));
  });
});
