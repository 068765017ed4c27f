import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, metricValue, scrapeMetrics } from '../support/observe.js';

// Retries of one candidate (providers.<name>.retry), through a real gateway process and the
// real mock provider: a transient failure is tried again on the same provider before the
// chain moves on; each retried failure is in the fallback list and counted; a refused
// credential is not retried; a retry-after is waited for when the deadline leaves room.

let east: MockProvider;
let west: MockProvider;
let gw: GatewayProcess;

/** When the mock received each chat completion, epoch ms, oldest first. */
function chatTimes(mock: MockProvider): number[] {
  return mock
    .stats()
    .recent.filter((r) => r.path === '/v1/chat/completions')
    .map((r) => r.at);
}

describe('retries of one candidate', () => {
  before(async () => {
    [east, west] = await Promise.all([startMockProvider({ name: 'east' }), startMockProvider({ name: 'west' })]);
    const config = baseConfig(
      { east: east.baseUrl, west: west.baseUrl },
      {
        solo: { candidates: [{ provider: 'east' }] },
        'ew-model': { candidates: [{ provider: 'east' }, { provider: 'west' }] },
        'short-deadline': { deadline_ms: 500, candidates: [{ provider: 'east' }, { provider: 'west' }] },
        'short-solo': { deadline_ms: 500, candidates: [{ provider: 'east' }] },
      },
      // Breakers are tested elsewhere; here every try must reach the provider.
      { resilience: { breaker: { failure_threshold: 1000 } } },
    );
    const providers = config.providers as Record<string, Record<string, unknown>>;
    providers.east!.retry = { attempts: 2, backoff_ms: 10, max_backoff_ms: 2000 };
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

  it('a provider that fails twice with 500 is tried a third time and answers 200', async () => {
    east.addFault({ mode: 'status', status: 500, count: 2 });
    const before = await scrapeMetrics(gw.url);
    const requestId = `retry-ok-${Date.now()}`;
    const r = await postChat(gw.url, chatBody('solo'), { 'x-request-id': requestId });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'east');
    assert.equal(r.headers.get('x-switchyard-fallback'), 'east,east', 'each retried failure is in the fallback list');
    assert.equal(chatCount(east), 3);
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.deepEqual(line.fallback, ['east:status_5xx', 'east:status_5xx'], JSON.stringify(line));
    const after = await scrapeMetrics(gw.url);
    const retries = (text: string): number =>
      metricValue(text, 'switchyard_upstream_retries_total', { provider: 'east', reason: 'status_5xx' }) ?? 0;
    assert.equal(retries(after) - retries(before), 2);
  });

  it('a provider that fails three times gives the client its own error after two retries', async () => {
    east.addFault({ mode: 'status', status: 500, count: 3 });
    const r = await postChat(gw.url, chatBody('solo'));
    assert.equal(r.status, 502, r.text);
    const body = r.json<{ error: { code: string; message: string } }>();
    assert.equal(body.error.code, 'upstream_error');
    assert.match(body.error.message, /provider "east" answered 500/);
    assert.equal(chatCount(east), 3, 'the first try and two retries');
  });

  it('retries before moving on: the next candidate answers only once the retries are spent', async () => {
    east.addFault({ mode: 'status', status: 503, count: 3 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'west');
    assert.equal(r.headers.get('x-switchyard-fallback'), 'east,east,east');
    assert.equal(chatCount(east), 3);
    assert.equal(chatCount(west), 1);
  });

  it('a 401 is not retried', async () => {
    east.addFault({ mode: 'status', status: 401, count: 3 });
    const r = await postChat(gw.url, chatBody('solo'));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json<{ error: { code: string } }>().error.code, 'upstream_auth_failed');
    assert.equal(chatCount(east), 1);
  });

  it('a 400 is not retried: it is the answer', async () => {
    east.addFault({ mode: 'status', status: 400, count: 3 });
    const r = await postChat(gw.url, chatBody('solo'));
    assert.equal(r.status, 400, r.text);
    assert.equal(chatCount(east), 1);
  });

  it("a 429's retry-after is waited for before the retry when the deadline allows", { timeout: 15_000 }, async () => {
    east.addFault({ mode: 'status', status: 429, headers: { 'retry-after': '1' }, count: 1 });
    const r = await postChat(gw.url, chatBody('solo'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-fallback'), 'east');
    const [first, second] = chatTimes(east);
    assert.ok(first !== undefined && second !== undefined, 'east was asked twice');
    assert.ok(second - first >= 900, `the retry came ${second - first} ms after the 429, not after its retry-after`);
  });

  it('a retry-after longer than the deadline leaves moves on to the next candidate at once', async () => {
    east.addFault({ mode: 'status', status: 429, headers: { 'retry-after': '1' }, count: 1 });
    const r = await postChat(gw.url, chatBody('short-deadline'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'west');
    assert.equal(chatCount(east), 1, 'no retry of east');
  });

  it('with no candidate left, a retry-after the deadline cannot wait for reaches the client as the 429 with its retry-after', async () => {
    east.addFault({ mode: 'status', status: 429, headers: { 'retry-after': '1' }, count: 1 });
    const r = await postChat(gw.url, chatBody('short-solo'));
    assert.equal(r.status, 429, r.text);
    assert.equal(r.headers.get('retry-after'), '1');
    assert.equal(r.json<{ error: { code: string } }>().error.code, 'upstream_rate_limited');
    assert.equal(chatCount(east), 1);
  });

  it('a provider without retry is not retried', async () => {
    west.addFault({ mode: 'status', status: 500, count: 1 });
    east.addFault({ mode: 'status', status: 500, count: 3 });
    const r = await postChat(gw.url, chatBody('ew-model'));
    assert.equal(r.status, 502, r.text);
    assert.equal(chatCount(west), 1);
  });
});
