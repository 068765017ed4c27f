import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import OpenAI from 'openai';
import type { MockFault, MockProvider, MockStats } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

interface Chunk {
  object: string;
  model: string;
  choices: { index: number; delta: { role?: string; content?: string }; finish_reason: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

let mock: MockProvider;
let origin: string;

function chat(body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${mock.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

async function postFault(fault: unknown): Promise<Response> {
  return fetch(`${origin}/__mock/faults`, { method: 'POST', body: JSON.stringify(fault) });
}

async function addFault(fault: MockFault): Promise<void> {
  const res = await postFault(fault);
  assert.equal(res.status, 200, await res.text());
}

async function httpStats(): Promise<MockStats> {
  return (await (await fetch(`${origin}/__mock/stats`)).json()) as MockStats;
}

/** Polls until `ok` holds; ordering assertions wait on state, never on elapsed time. */
async function waitFor(ok: (stats: MockStats) => boolean): Promise<MockStats> {
  for (let i = 0; i < 500; i++) {
    const stats = mock.stats();
    if (ok(stats)) return stats;
    await delay(10);
  }
  throw new Error(`condition not reached; stats: ${JSON.stringify(mock.stats())}`);
}

/** Splits an SSE body into its data payloads; `[DONE]` stays a string. */
function events(text: string): (Chunk | '[DONE]')[] {
  return text
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      assert.ok(block.startsWith('data: '), `not a data event: ${block}`);
      const data = block.slice('data: '.length);
      return data === '[DONE]' ? '[DONE]' : (JSON.parse(data) as Chunk);
    });
}

function chunks(list: (Chunk | '[DONE]')[]): Chunk[] {
  return list.filter((e): e is Chunk => e !== '[DONE]');
}

/** Reads a body until it ends or fails, returning what arrived and whether it failed. */
async function readUntilEnd(res: Response): Promise<{ text: string; failed: boolean }> {
  assert.ok(res.body);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, failed: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, failed: true };
  }
}

describe('mock provider', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east', port: 0 });
    origin = mock.baseUrl.slice(0, -'/v1'.length);
  });
  after(() => mock.close());
  beforeEach(() => mock.reset());

  it('listens on 127.0.0.1 and exposes an OpenAI base URL', () => {
    assert.equal(mock.name, 'east');
    assert.ok(mock.port > 0);
    assert.equal(mock.baseUrl, `http://127.0.0.1:${mock.port}/v1`);
  });

  it('a chat completion echoes the model and estimates prompt tokens as characters / 4', async () => {
    const messages = [
      { role: 'system', content: 'x'.repeat(40) },
      { role: 'user', content: [{ type: 'text', text: 'y'.repeat(8) }] },
    ];
    const res = await chat({ model: 'llama-3-8b', messages });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-mock-provider'), 'east');
    const body = (await res.json()) as Record<string, any>;
    assert.match(body.id, /^chatcmpl-/);
    assert.equal(body.object, 'chat.completion');
    assert.equal(typeof body.created, 'number');
    assert.equal(body.model, 'llama-3-8b');
    assert.deepEqual(body.choices[0].message, { role: 'assistant', content: 'Hello from east.', refusal: null });
    assert.equal(body.choices[0].finish_reason, 'stop');
    assert.equal(body.usage.prompt_tokens, 12);
    assert.ok(body.usage.completion_tokens > 0);
    assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);
  });

  it('prompt_tokens is at least 1 when there is no message text', async () => {
    const body = (await (await chat({ model: 'm', messages: [] })).json()) as Record<string, any>;
    assert.equal(body.usage.prompt_tokens, 1);
  });

  it('invalid JSON or a missing model answers 400 with an OpenAI error', async () => {
    for (const bad of ['{not json', JSON.stringify({ messages: [] }), '[]']) {
      const res = await chat(bad);
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('x-mock-provider'), 'east');
      const body = (await res.json()) as { error: Record<string, unknown> };
      assert.equal(body.error.type, 'invalid_request_error');
      assert.equal(body.error.code, null);
      assert.equal(typeof body.error.message, 'string');
    }
  });

  it('a stream sends role, content chunks, stop, usage, then [DONE], in that order', async () => {
    const res = await chat({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [] });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(res.headers.get('x-mock-provider'), 'east');
    const list = events(await res.text());
    assert.equal(list.length, 1 + 5 + 1 + 1 + 1);
    assert.equal(list.at(-1), '[DONE]');
    const [role, ...rest] = chunks(list);
    assert.ok(role);
    assert.equal(role.object, 'chat.completion.chunk');
    assert.equal(role.model, 'gpt-4o');
    assert.equal(role.choices[0]?.delta.role, 'assistant');
    const content = rest.slice(0, 5);
    assert.equal(content.map((c) => c.choices[0]?.delta.content).join(''), 'Hello from east.');
    assert.ok(content.every((c) => c.choices[0]?.finish_reason === null));
    const [stop, usage] = rest.slice(5);
    assert.equal(stop?.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(usage?.choices, []);
    assert.equal(usage?.usage?.prompt_tokens, 1);
    assert.equal(usage?.usage?.total_tokens, 1 + (usage?.usage?.completion_tokens ?? NaN));
  });

  it('without include_usage a stream has no usage chunk, and x-mock-chunks sets the chunk count', async () => {
    const res = await chat({ model: 'm', stream: true }, { 'x-mock-chunks': '2' });
    const list = chunks(events(await res.text()));
    assert.equal(list.length, 1 + 2 + 1);
    assert.equal(list.at(-1)?.choices[0]?.finish_reason, 'stop');
    assert.ok(list.every((c) => c.choices.length === 1 && c.usage === undefined));
  });

  it('a stream larger than the socket buffers completes, waiting for drain as it goes', async () => {
    const res = await chat({ model: 'm', stream: true }, { 'x-mock-chunks': '20000' });
    const list = events(await res.text());
    assert.equal(list.length, 1 + 20000 + 1 + 1);
    assert.equal(list.at(-1), '[DONE]');
  });

  it('with a chunk delay the first chunk arrives before the stream has ended', async () => {
    const res = await chat({ model: 'm', stream: true }, { 'x-mock-chunk-delay-ms': '50', 'x-mock-chunks': '3' });
    assert.ok(res.body);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    const firstText = decoder.decode(first.value, { stream: true });
    assert.match(firstText, /"role":"assistant"/);
    assert.doesNotMatch(firstText, /\[DONE\]|"finish_reason":"stop"/);
    let reads = 1;
    let text = firstText;
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      reads += 1;
      text += decoder.decode(r.value, { stream: true });
    }
    assert.ok(reads > 2, `expected the stream in several reads, got ${reads}`);
    assert.equal(events(text).at(-1), '[DONE]');
  });

  it('/v1/models lists a few models owned by the provider', async () => {
    const res = await fetch(`${mock.baseUrl}/models`);
    assert.equal(res.headers.get('x-mock-provider'), 'east');
    const body = (await res.json()) as { object: string; data: Record<string, unknown>[] };
    assert.equal(body.object, 'list');
    assert.ok(body.data.some((m) => m.id === 'gpt-4o-mini'));
    assert.ok(body.data.every((m) => m.object === 'model' && m.owned_by === 'east' && typeof m.created === 'number'));
  });

  it('unknown paths answer 404 and wrong methods 405, both as JSON errors', async () => {
    const missing = await fetch(`${mock.baseUrl}/audio/speech`, { method: 'POST', body: '{}' });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('x-mock-provider'), 'east');
    assert.ok(((await missing.json()) as { error: unknown }).error);
    const wrong = await fetch(`${mock.baseUrl}/chat/completions`);
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'POST');
    assert.ok(((await wrong.json()) as { error: unknown }).error);
  });

  it('stats count requests by method and path and keep raw bodies and headers, newest last', async () => {
    const raw = '{ "model" : "m",\n  "messages": [ ] }';
    await (await chat(raw, { authorization: 'Bearer sk-test', 'x-trace': 't1' })).text();
    await (await fetch(`${mock.baseUrl}/models?limit=1`)).text();
    await (await chat({ model: 'm' })).text();
    const stats = await httpStats();
    assert.equal(stats.name, 'east');
    assert.equal(stats.total, 3);
    assert.deepEqual(stats.requests, { 'POST /v1/chat/completions': 2, 'GET /v1/models': 1 });
    assert.equal(stats.aborted, 0);
    assert.deepEqual(
      stats.recent.map((r) => `${r.method} ${r.path}`),
      ['POST /v1/chat/completions', 'GET /v1/models', 'POST /v1/chat/completions'],
    );
    const first = stats.recent[0];
    assert.equal(first?.body, raw);
    assert.equal(first?.headers.authorization, 'Bearer sk-test');
    assert.equal(first?.headers['x-trace'], 't1');
    assert.equal(typeof first?.at, 'number');
    assert.deepEqual(mock.stats().requests, stats.requests, 'stats() and /__mock/stats agree');
  });

  it('recent keeps only the last 50 requests', async () => {
    for (let i = 0; i < 55; i++) await (await chat({ model: `m${i}` })).text();
    const stats = mock.stats();
    assert.equal(stats.total, 55);
    assert.equal(stats.recent.length, 50);
    assert.equal(JSON.parse(stats.recent[0]?.body ?? '').model, 'm5');
    assert.equal(JSON.parse(stats.recent[49]?.body ?? '').model, 'm54');
  });

  it('POST /__mock/reset clears stats and queued faults', async () => {
    await (await chat({ model: 'm' })).text();
    await addFault({ mode: 'status', status: 500 });
    const res = await fetch(`${origin}/__mock/reset`, { method: 'POST' });
    assert.deepEqual(await res.json(), { ok: true });
    assert.equal(mock.stats().total, 0);
    assert.equal((await chat({ model: 'm' })).status, 200);
  });

  it('a status fault answers the next N requests with that status, then recovers', async () => {
    await addFault({ mode: 'status', status: 503, count: 2 });
    for (let i = 0; i < 2; i++) {
      const res = await chat({ model: 'm' });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('x-mock-provider'), 'east');
      const body = (await res.json()) as { error: Record<string, unknown> };
      assert.equal(body.error.type, 'server_error');
    }
    assert.equal((await chat({ model: 'm' })).status, 200);
  });

  it('a status fault answers with its custom JSON body', async () => {
    await addFault({ mode: 'status', status: 429, count: 1, body: { error: { message: 'slow down' } } });
    const res = await chat({ model: 'm' });
    assert.equal(res.status, 429);
    assert.deepEqual(await res.json(), { error: { message: 'slow down' } });
  });

  it('a status fault sends its headers with the answer, names lower-cased', async () => {
    await addFault({ mode: 'status', status: 429, count: 1, headers: { 'Retry-After': '1', 'x-ratelimit-remaining-requests': '0' } });
    const res = await chat({ model: 'm' });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.equal(res.headers.get('x-ratelimit-remaining-requests'), '0');
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('x-mock-provider'), 'east');
    await res.text();
    assert.equal((await chat({ model: 'm' })).headers.get('retry-after'), null, 'only the fault’s answer carries them');
  });

  it('a fault without a count applies until DELETE /__mock/faults clears it', async () => {
    await addFault({ mode: 'status', status: 500 });
    for (let i = 0; i < 3; i++) assert.equal((await chat({ model: 'm' })).status, 500);
    const res = await fetch(`${origin}/__mock/faults`, { method: 'DELETE' });
    assert.deepEqual(await res.json(), { ok: true });
    assert.equal((await chat({ model: 'm' })).status, 200);
  });

  it('queued faults apply in order, each request taking the first with count left', async () => {
    await addFault({ mode: 'status', status: 500, count: 1 });
    await addFault({ mode: 'status', status: 429, count: 2 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await chat({ model: 'm' })).status);
    assert.deepEqual(statuses, [500, 429, 429, 200]);
  });

  it('faults touch model requests, never the model list', async () => {
    await addFault({ mode: 'status', status: 500, count: 1 });
    assert.equal((await fetch(`${mock.baseUrl}/models`)).status, 200);
    assert.equal((await chat({ model: 'm' })).status, 500);
  });

  it('a latency fault delays the answer, so a later request finishes first', async () => {
    await addFault({ mode: 'latency', latency_ms: 400, count: 1 });
    const order: string[] = [];
    const slow = chat({ model: 'slow' }).then(async (res) => {
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { model: string }).model, 'slow');
      order.push('slow');
    });
    await waitFor((s) => s.recent.length === 1);
    const fast = await chat({ model: 'fast' });
    assert.equal(fast.status, 200);
    order.push('fast');
    await slow;
    assert.deepEqual(order, ['fast', 'slow']);
  });

  it('a close fault drops the connection without answering and is not a client abort', async () => {
    await addFault({ mode: 'close', count: 1 });
    await assert.rejects(chat({ model: 'm' }), TypeError);
    assert.equal((await chat({ model: 'm' })).status, 200);
    const stats = await httpStats();
    assert.equal(stats.total, 2);
    assert.equal(stats.aborted, 0);
  });

  it('a cut_stream fault sends the headers and K content chunks, then drops the connection', async () => {
    await addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
    const res = await chat({ model: 'm', stream: true }, { 'x-mock-chunks': '5' });
    assert.equal(res.status, 200);
    const { text, failed } = await readUntilEnd(res);
    assert.ok(failed, 'the stream should end in an error');
    const list = chunks(events(text));
    assert.equal(list.length, 1 + 2);
    assert.equal(list[0]?.choices[0]?.delta.role, 'assistant');
    assert.ok(list.slice(1).every((c) => typeof c.choices[0]?.delta.content === 'string'));
    assert.equal(mock.stats().aborted, 0);
  });

  it('a cut_stream fault truncates a non-streaming body', async () => {
    await addFault({ mode: 'cut_stream', count: 1 });
    const res = await chat({ model: 'm' });
    assert.equal(res.status, 200);
    await assert.rejects(res.text());
  });

  it('a hang fault never answers, and the client giving up shows in aborted', async () => {
    await addFault({ mode: 'hang', count: 1 });
    const controller = new AbortController();
    const pending = chat({ model: 'm' }, {}, controller.signal);
    await waitFor((s) => s.recent.length === 1);
    controller.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    const stats = await waitFor((s) => s.aborted === 1);
    assert.equal(stats.total, 1);
  });

  it('a client leaving mid-stream stops the stream and counts as aborted', async () => {
    const controller = new AbortController();
    const res = await chat({ model: 'm', stream: true }, { 'x-mock-chunk-delay-ms': '20', 'x-mock-chunks': '1000' }, controller.signal);
    assert.ok(res.body);
    await res.body.getReader().read();
    controller.abort();
    await waitFor((s) => s.aborted === 1);
  });

  it('bad fault bodies answer 400 naming the problem and queue nothing', async () => {
    const cases: [unknown, RegExp][] = [
      [{ mode: 'explode' }, /mode must be one of/],
      [{ mode: 'status', count: 0 }, /count/],
      [{ mode: 'status', status: 99 }, /status/],
      [{ mode: 'status', body: 'nope' }, /body/],
      [{ mode: 'latency' }, /latency_ms is required/],
      [{ mode: 'latency', latency_ms: -1 }, /latency_ms/],
      [{ mode: 'status', after_chunks: 1 }, /after_chunks only applies to mode cut_stream/],
      [{ mode: 'cut_stream', after_chunks: 1.5 }, /after_chunks/],
      [{ mode: 'hang', latencyMs: 5 }, /latencyMs is not a known field/],
      [{ mode: 'latency', latency_ms: 1, headers: { a: 'b' } }, /headers only applies to mode status/],
      [{ mode: 'status', headers: ['retry-after'] }, /headers must be a JSON object/],
      [{ mode: 'status', headers: { 'retry-after': 1 } }, /headers\.retry-after must be a string/],
      [{ mode: 'status', headers: { 'bad name': 'x' } }, /not a valid header name/],
      [{ mode: 'status', headers: { 'x-a': 'line\nbreak' } }, /printable ASCII/],
      [{ mode: 'status', headers: { 'x-a': 'x'.repeat(1025) } }, /at most 1024 characters/],
      [{ mode: 'status', headers: { 'Content-Length': '5' } }, /set by the mock itself/],
      [{ mode: 'status', headers: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`x-h${i}`, 'v'])) }, /at most 16 headers/],
      [[{ mode: 'hang' }, { mode: 'nope' }], /^\[1\]/],
      ['just a string', /JSON object/],
    ];
    for (const [body, message] of cases) {
      const res = await postFault(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      const error = ((await res.json()) as { error: { message: string; type: string } }).error;
      assert.equal(error.type, 'invalid_request_error');
      assert.match(error.message, message);
    }
    const notJson = await fetch(`${origin}/__mock/faults`, { method: 'POST', body: '{' });
    assert.equal(notJson.status, 400);
    assert.equal((await chat({ model: 'm' })).status, 200, 'nothing was queued');
  });

  it('addFault() queues a fault in process and rejects a bad one with a TypeError', async () => {
    assert.throws(() => mock.addFault({ mode: 'latency' }), TypeError);
    mock.addFault({ mode: 'status', status: 502, count: 1 });
    assert.equal((await chat({ model: 'm' })).status, 502);
  });

  it('the openai SDK reads both a completion and a stream', async () => {
    const client = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-mock', maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(completion.choices[0]?.message.content, 'Hello from east.');
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let totalTokens = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      totalTokens = chunk.usage?.total_tokens ?? totalTokens;
    }
    assert.equal(text, 'Hello from east.');
    assert.ok(totalTokens > 0);
    assert.equal(mock.stats().recent[0]?.headers.authorization, 'Bearer sk-mock');
  });
});

describe('mock provider shutdown', () => {
  it('close() ends a hanging request and idle keep-alive connections, then resolves', async () => {
    const lone = await startMockProvider({ name: 'west' });
    await (await fetch(`${lone.baseUrl}/models`)).text();
    lone.addFault({ mode: 'hang' });
    const pending = fetch(`${lone.baseUrl}/chat/completions`, { method: 'POST', body: '{"model":"m"}' });
    for (let i = 0; i < 500 && lone.stats().recent.length < 2; i++) await delay(10);
    await lone.close();
    await assert.rejects(pending, TypeError);
    await lone.close();
  });

  it('a provider started with latencyMs still answers, and streamChunks sets the default chunk count', async () => {
    const slow = await startMockProvider({ name: 'slow', latencyMs: 5, streamChunks: 2 });
    try {
      const res = await fetch(`${slow.baseUrl}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', stream: true }),
      });
      assert.equal(res.headers.get('x-mock-provider'), 'slow');
      assert.equal(chunks(events(await res.text())).length, 1 + 2 + 1);
    } finally {
      await slow.close();
    }
  });
});
