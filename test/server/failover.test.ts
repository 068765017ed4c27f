import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import type { Reply } from '../support/http.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, closedPort, metricValue, scrapeMetrics } from '../support/observe.js';

// Failover before the first byte, through a real gateway process: each failure kind on the
// first candidate moves the request to the next one; when every candidate fails, the client
// gets one OpenAI-shaped error whose status reflects what failed.

const timeoutMs = 300;

let east: MockProvider;
let west: MockProvider;
let gw: GatewayProcess;

function assertServed(r: Reply, provider: string, fallback: string): void {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-switchyard-provider'), provider);
  assert.equal(r.headers.get('x-switchyard-fallback'), fallback);
  assert.equal(r.json().object, 'chat.completion');
}

function assertAllFailed(r: Reply, status: number, code: string, failed: readonly string[] = ['east', 'west']): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.headers.get('x-switchyard-provider'), null, 'an error names no provider');
  assert.equal(r.headers.get('x-switchyard-model'), null);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  const body = r.json<{ error: { message: unknown; type: unknown; code: unknown } }>();
  assert.equal(typeof body.error, 'object');
  assert.equal(typeof body.error.message, 'string');
  for (const p of failed) assert.match(body.error.message as string, new RegExp(`\\b${p}\\b`), 'the message says which providers failed');
  assert.equal(typeof body.error.type, 'string');
  assert.equal(body.error.code, code);
}

describe('failover', () => {
  before(async () => {
    [east, west] = await Promise.all([startMockProvider({ name: 'east' }), startMockProvider({ name: 'west' })]);
    const deadPort = await closedPort();
    const config = baseConfig(
      { east: east.baseUrl, west: west.baseUrl, dead: `http://127.0.0.1:${deadPort}/v1` },
      {
        'ew-model': { policy: 'ordered', candidates: [{ provider: 'east' }, { provider: 'west' }] },
        'dead-first': { policy: 'ordered', candidates: [{ provider: 'dead' }, { provider: 'west' }] },
      },
      // Breakers are tested elsewhere; here every request must reach every candidate.
      { resilience: { breaker: { failure_threshold: 1000 } } },
    );
    const providers = config.providers as Record<string, { timeout_ms: number }>;
    providers.east!.timeout_ms = timeoutMs;
    providers.west!.timeout_ms = timeoutMs;
    gw = await startGatewayProcess(config);
  });

  after(async () => {
    await gw?.stop();
    await Promise.all([east?.close(), west?.close()]);
  });

  beforeEach(() => {
    east.reset();
    west.reset();
  });

  it('a 500 from the first candidate fails over to the next', async () => {
    east.addFault({ mode: 'status', status: 500, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertServed(r, 'west', 'east');
    assert.equal(chatCount(east), 1);
    assert.equal(chatCount(west), 1);
  });

  it('a 429 from the first candidate fails over to the next', async () => {
    east.addFault({ mode: 'status', status: 429, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertServed(r, 'west', 'east');
    assert.equal(chatCount(east), 1);
  });

  it('a refused connection fails over to the next candidate', async () => {
    const r = await postChat(gw.url, chatBody('dead-first'));
    assertServed(r, 'west', 'dead');
    assert.equal(chatCount(west), 1);
  });

  it('a connection closed by the first candidate before answering fails over to the next', async () => {
    east.addFault({ mode: 'close', count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertServed(r, 'west', 'east');
  });

  it('a plain response cut mid-body fails over to the next candidate: nothing had reached the client yet', async () => {
    east.addFault({ mode: 'cut_stream', after_chunks: 0, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertServed(r, 'west', 'east');
    assert.equal(chatCount(east), 1, 'east was tried and cut its body');
    const body = r.json<{ choices: unknown[] }>();
    assert.ok(Array.isArray(body.choices), 'the client got a whole answer from west');
  });

  it('a plain response larger than the buffering bound (1 MiB) is relayed intact, usage read from its tail', async () => {
    const content = 'x'.repeat(1_500_000);
    const answer = {
      id: 'big',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 11, completion_tokens: 22, total_tokens: 33 },
    };
    east.addFault({ mode: 'status', status: 200, body: answer, count: 1 });
    const requestId = `big-${Date.now()}`;
    const r = await postChat(gw.url, chatBody('ew-model'), { 'x-request-id': requestId });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-switchyard-provider'), 'east');
    assert.deepEqual(r.json(), answer);
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.equal(line.input_tokens, 11);
    assert.equal(line.output_tokens, 22);
  });

  it('a timeout (no response within timeout_ms) fails over to the next candidate', async () => {
    east.addFault({ mode: 'latency', latency_ms: timeoutMs * 10, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertServed(r, 'west', 'east');
    assert.equal(chatCount(east), 1);
    assert.equal(chatCount(west), 1);
  });

  it('when every candidate answers 500 the client gets 502 in the OpenAI error shape', async () => {
    east.addFault({ mode: 'status', status: 500, count: 1 });
    west.addFault({ mode: 'status', status: 503, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertAllFailed(r, 502, 'upstream_error');
    assert.equal(chatCount(east), 1);
    assert.equal(chatCount(west), 1, 'both candidates were tried');
  });

  it('when every candidate times out the client gets 504 in the OpenAI error shape', async () => {
    east.addFault({ mode: 'latency', latency_ms: timeoutMs * 10, count: 1 });
    west.addFault({ mode: 'latency', latency_ms: timeoutMs * 10, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertAllFailed(r, 504, 'upstream_timeout');
    assert.equal(chatCount(east), 1);
    assert.equal(chatCount(west), 1, 'both candidates were tried');
  });

  it('when every candidate answers 429 the client gets 429 in the OpenAI error shape', async () => {
    east.addFault({ mode: 'status', status: 429, count: 1 });
    west.addFault({ mode: 'status', status: 429, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertAllFailed(r, 429, 'upstream_rate_limited');
  });

  it('a 400 from the upstream is passed through without failover', async () => {
    const upstreamError = { error: { message: 'bad temperature', type: 'invalid_request_error', param: 'temperature', code: 'bad_param' } };
    east.addFault({ mode: 'status', status: 400, body: upstreamError, count: 1 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json(), upstreamError, 'the upstream error body reaches the client as is');
    assert.equal(r.headers.get('x-switchyard-provider'), 'east');
    assert.equal(r.headers.get('x-switchyard-fallback'), null);
    assert.equal(chatCount(east), 1);
    assert.equal(chatCount(west), 0, 'no failover on a client error');
  });

  it('/metrics counts fallbacks by provider and reason', async () => {
    // Runs after the tests above; provoke one of each again so this test stands on its own.
    east.addFault({ mode: 'status', status: 500, count: 1 });
    assertServed(await postChat(gw.url, chatBody('ew-model')), 'west', 'east');
    east.addFault({ mode: 'status', status: 429, count: 1 });
    assertServed(await postChat(gw.url, chatBody('ew-model')), 'west', 'east');
    east.addFault({ mode: 'latency', latency_ms: timeoutMs * 10, count: 1 });
    assertServed(await postChat(gw.url, chatBody('ew-model')), 'west', 'east');
    assertServed(await postChat(gw.url, chatBody('dead-first')), 'west', 'dead');

    const text = await scrapeMetrics(gw.url);
    const fallbacks = (labels: Record<string, string>): number => metricValue(text, 'switchyard_fallbacks_total', labels) ?? 0;
    assert.ok(fallbacks({ provider: 'east', reason: 'status_5xx' }) >= 1, text);
    assert.ok(fallbacks({ provider: 'east', reason: 'status_429' }) >= 1, text);
    assert.ok(fallbacks({ provider: 'east', reason: 'timeout' }) >= 1, text);
    assert.ok(fallbacks({ provider: 'dead', reason: 'connect_error' }) >= 1, text);
  });
});
