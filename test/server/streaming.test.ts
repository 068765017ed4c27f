import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody } from '../support/http.js';
import { connectionRefused, metricValue, SseReader, scrapeMetrics, sseData, waitUntil } from '../support/observe.js';

// SSE pass-through through a real gateway process. `slow` streams 20 content chunks 100 ms
// apart (the provider config sends the mock's x-mock-chunks / x-mock-chunk-delay-ms headers),
// so there is a long window in which the upstream is demonstrably still sending.

const slowChunks = 20;

interface Chunk {
  id: string;
  object: string;
  choices: Array<{ index: number; delta: { role?: string; content?: string }; finish_reason: string | null }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

let plain: MockProvider;
let slow: MockProvider;
let gw: GatewayProcess;

function providersFor(): Record<string, unknown> {
  const config = baseConfig({ plain: plain.baseUrl, slow: slow.baseUrl }, {});
  const providers = config.providers as Record<string, Record<string, unknown>>;
  providers.slow!.headers = { 'x-mock-chunks': String(slowChunks), 'x-mock-chunk-delay-ms': '100' };
  return providers;
}

function configFor(): Record<string, unknown> {
  return {
    ...baseConfig(
      {},
      {
        'plain-model': { candidates: [{ provider: 'plain' }] },
        'slow-model': { candidates: [{ provider: 'slow' }] },
      },
    ),
    providers: providersFor(),
  };
}

function streamRequest(
  url: string,
  model: string,
  options: { signal?: AbortSignal; requestId?: string; extra?: Record<string, unknown> } = {},
): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(options.requestId ? { 'x-request-id': options.requestId } : {}) },
    body: chatBody(model, { stream: true, ...options.extra }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

function parseChunks(data: readonly string[]): Chunk[] {
  return data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Chunk);
}

function contentChunks(chunks: readonly Chunk[]): Chunk[] {
  return chunks.filter(
    (c) => typeof c.choices[0]?.delta.content === 'string' && c.choices[0]!.delta.content !== '' && c.choices[0]!.delta.role === undefined,
  );
}

describe('streaming', () => {
  before(async () => {
    [plain, slow] = await Promise.all([startMockProvider({ name: 'plain' }), startMockProvider({ name: 'slow' })]);
    gw = await startGatewayProcess(configFor());
  });

  after(async () => {
    await gw?.stop();
    await Promise.all([plain?.close(), slow?.close()]);
  });

  beforeEach(() => {
    plain.reset();
    slow.reset();
  });

  it('the first event reaches the client while the upstream is still sending', async () => {
    const res = await streamRequest(gw.url, 'slow-model');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(res.headers.get('x-switchyard-provider'), 'slow');
    const reader = new SseReader(res);

    const first = await reader.next();
    assert.ok(first !== null && first !== '[DONE]', `a data event: ${String(first)}`);
    assert.equal(parseChunks([first])[0]!.choices[0]!.delta.role, 'assistant');
    // If the gateway buffered the upstream response, the first read would hold all of it.
    assert.equal(reader.ended, false, 'the response has not ended');
    assert.ok(!reader.text.includes('[DONE]'), 'no [DONE] yet');
    const received = contentChunks(parseChunks(sseData(reader.text))).length;
    assert.ok(received < slowChunks, `only ${received} of ${slowChunks} content chunks have arrived`);
    assert.equal(slow.stats().aborted, 0);

    // A content chunk next, still with the end of the stream to come.
    const second = await reader.next();
    assert.ok(second !== null && second !== '[DONE]');
    assert.equal(typeof parseChunks([second])[0]!.choices[0]!.delta.content, 'string');
    assert.ok(!reader.text.includes('[DONE]'), 'no [DONE] after the first content chunk');

    const rest = await reader.rest();
    assert.equal(reader.error, undefined);
    assert.equal(rest[rest.length - 1], '[DONE]');
    assert.equal(contentChunks(parseChunks([first, second, ...rest])).length, slowChunks);
  });

  it('SSE events arrive in order ending with [DONE], and the usage chunk passes through with include_usage', async () => {
    const requestId = 'usage-stream';
    const res = await streamRequest(gw.url, 'plain-model', { requestId, extra: { stream_options: { include_usage: true } } });
    assert.equal(res.status, 200);
    const reader = new SseReader(res);
    const data = await reader.rest();
    assert.equal(reader.error, undefined);
    assert.equal(data[data.length - 1], '[DONE]');
    assert.equal(data.filter((d) => d === '[DONE]').length, 1);

    const chunks = parseChunks(data);
    assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'one completion id');
    for (const c of chunks) assert.equal(c.object, 'chat.completion.chunk');
    // role first, then content, then the finish chunk, then usage (no choices), then [DONE].
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    const usageChunk = chunks[chunks.length - 1]!;
    const finish = chunks[chunks.length - 2]!;
    assert.equal(finish.choices[0]!.finish_reason, 'stop');
    assert.deepEqual(usageChunk.choices, []);
    assert.ok(usageChunk.usage !== null && usageChunk.usage !== undefined, 'usage chunk present');
    assert.ok(usageChunk.usage.prompt_tokens > 0);
    assert.ok(usageChunk.usage.completion_tokens > 0);
    assert.equal(usageChunk.usage.total_tokens, usageChunk.usage.prompt_tokens + usageChunk.usage.completion_tokens);
    for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null, 'usage is null before the last chunk');
    assert.equal(contentChunks(chunks).length, 5, 'the mock default of 5 content chunks');

    // The stream is the one the mock sent: same events, same order.
    assert.equal(plain.stats().total, 1);

    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.equal(line.status, 200, JSON.stringify(line));
    assert.equal(line.input_tokens, usageChunk.usage.prompt_tokens, 'the gateway read the usage from the relayed stream');
    assert.equal(line.output_tokens, usageChunk.usage.completion_tokens);
    const text = await scrapeMetrics(gw.url);
    assert.ok(
      (metricValue(text, 'switchyard_time_to_first_token_seconds_count', { model: 'plain-model', provider: 'plain' }) ?? 0) >= 1,
      'time to first token is observed for streams',
    );
  });

  it('a client abort mid-stream reaches the upstream', async () => {
    const abort = new AbortController();
    const requestId = 'abort-mid-stream';
    const res = await streamRequest(gw.url, 'slow-model', { signal: abort.signal, requestId });
    assert.equal(res.status, 200);
    const reader = new SseReader(res);
    const first = await reader.next();
    assert.ok(first !== null && first !== '[DONE]');
    assert.equal(slow.stats().aborted, 0);

    abort.abort();
    await reader.cancel();
    await waitUntil(() => slow.stats().aborted === 1, 'the mock sees its connection close before the stream ended');
    assert.equal(slow.stats().total, 1);
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.equal(line.status, 499, JSON.stringify(line));
  });

  it('a stream cut by the upstream ends with a stream_interrupted error event and is logged and counted as partial', async () => {
    const requestId = 'cut-stream-after-2';
    plain.addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
    const res = await streamRequest(gw.url, 'plain-model', { requestId });
    assert.equal(res.status, 200, 'the status line went out before the cut');
    const reader = new SseReader(res);
    const data = await reader.rest();
    assert.equal(reader.error, undefined, 'the gateway ends the stream cleanly with an error event');
    assert.ok(!data.includes('[DONE]'), `no [DONE] after a cut: ${reader.text}`);

    const last = JSON.parse(data[data.length - 1]!) as { error?: { code?: string; message?: string; type?: string } };
    assert.equal(last.error?.code, 'stream_interrupted', reader.text);
    assert.equal(typeof last.error?.message, 'string');
    const before = parseChunks(data.slice(0, -1));
    assert.equal(before[0]!.choices[0]!.delta.role, 'assistant');
    assert.equal(contentChunks(before).length, 2, 'the two chunks sent before the cut arrived, in order');

    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.equal(line.status, 'partial', JSON.stringify(line));
    const text = await scrapeMetrics(gw.url);
    assert.equal(metricValue(text, 'switchyard_requests_total', { model: 'plain-model', provider: 'plain', status: 'partial' }), 1, text);
  });

  it('SIGTERM lets an in-flight stream finish, refuses new connections, then exits 0', async () => {
    const draining = await startGatewayProcess(configFor());
    try {
      const res = await streamRequest(draining.url, 'slow-model');
      assert.equal(res.status, 200);
      const reader = new SseReader(res);
      assert.ok((await reader.next()) !== null);

      draining.child.kill('SIGTERM');
      await draining.waitForLog((l) => l.msg === 'shutting down');
      await waitUntil(() => connectionRefused(draining.url), 'new connections are refused');
      assert.equal(reader.ended, false, 'the stream is still in flight when the listener has closed');
      assert.ok(!reader.text.includes('[DONE]'));

      const rest = await reader.rest();
      assert.equal(reader.error, undefined);
      assert.equal(rest[rest.length - 1], '[DONE]', 'the stream completed fully');
      assert.equal(contentChunks(parseChunks(sseData(reader.text))).length, slowChunks);
      assert.equal(await draining.exited, 0);
    } finally {
      await draining.stop();
    }
  });
});
