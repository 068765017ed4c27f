import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import type { Reply } from '../support/http.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, metricValue, scrapeMetrics, waitUntil } from '../support/observe.js';

// Circuit breakers through a real gateway process, policy ordered over [east, west].
// Whether a request reached a provider is read from that mock's own count, so "skipped"
// means the upstream really saw nothing.

async function breakerState(gw: GatewayProcess, provider: string): Promise<number | undefined> {
  return metricValue(await scrapeMetrics(gw.url), 'switchyard_breaker_state', { provider });
}

function assertServed(r: Reply, provider: string): void {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-switchyard-provider'), provider, r.text);
}

interface Setup {
  east: MockProvider;
  west: MockProvider;
  gw: GatewayProcess;
}

const opened: Array<{ close(): Promise<unknown> }> = [];

async function setup(breaker: Record<string, number> = {}): Promise<Setup> {
  const [east, west] = await Promise.all([startMockProvider({ name: 'east' }), startMockProvider({ name: 'west' })]);
  opened.push(east, west);
  const gw = await startGatewayProcess(
    baseConfig(
      { east: east.baseUrl, west: west.baseUrl },
      { 'ew-model': { policy: 'ordered', candidates: [{ provider: 'east' }, { provider: 'west' }] } },
      { resilience: { breaker } },
    ),
  );
  opened.push({ close: () => gw.stop() });
  return { east, west, gw };
}

after(async () => {
  await Promise.all(opened.map((o) => o.close()));
});

/** Five requests whose east attempt answers 500: each is served by west after failing east. */
async function failEastFiveTimes({ east, gw }: Setup): Promise<void> {
  east.addFault({ mode: 'status', status: 500, count: 5 });
  for (let i = 0; i < 5; i++) {
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertServed(r, 'west');
    assert.equal(r.headers.get('x-switchyard-fallback'), 'east', `request ${i + 1} tried east first`);
  }
}

describe('circuit breaker', () => {
  it('opens after 5 consecutive failures, lets exactly one half-open probe through, and closes when it succeeds', async () => {
    const s = await setup();
    const { east, west, gw } = s;
    assert.equal(await breakerState(gw, 'east'), 0, 'closed at start');

    await failEastFiveTimes(s);
    assert.equal(chatCount(east), 5);
    assert.equal(chatCount(west), 5);

    assert.equal(await breakerState(gw, 'east'), 1, 'open after the fifth failure');

    // Open (default window 1 s): the sixth request goes straight to west, east sees nothing.
    const sixth = await postChat(gw.url, chatBody('ew-model'));
    assertServed(sixth, 'west');
    assert.equal(chatCount(east), 5, 'east received no request while its breaker was open');
    assert.equal(chatCount(west), 6);
    assert.equal(await breakerState(gw, 'west'), 0);

    // After the window the breaker reports half-open; wait for it by polling.
    await waitUntil(async () => (await breakerState(gw, 'east')) === 2, 'east is half-open');
    assert.equal(chatCount(east), 5, 'waiting sent nothing to east');

    // Several requests at once while the probe is slow: exactly one reaches east.
    east.addFault({ mode: 'latency', latency_ms: 1500, count: 1 });
    const westBefore = chatCount(west);
    const replies = await Promise.all(Array.from({ length: 5 }, () => postChat(gw.url, chatBody('ew-model'))));
    const servedBy = replies.map((r) => {
      assert.equal(r.status, 200, r.text);
      return r.headers.get('x-switchyard-provider');
    });
    assert.equal(chatCount(east), 6, `exactly one probe reached east; served by ${servedBy.join(',')}`);
    assert.equal(servedBy.filter((p) => p === 'east').length, 1, `the probe answered: ${servedBy.join(',')}`);
    assert.equal(servedBy.filter((p) => p === 'west').length, 4);
    assert.equal(chatCount(west), westBefore + 4);

    // The successful probe closed the breaker: east serves again.
    assert.equal(await breakerState(gw, 'east'), 0);
    for (let i = 0; i < 3; i++) assertServed(await postChat(gw.url, chatBody('ew-model')), 'east');
    assert.equal(chatCount(east), 9);
  });

  it('logs the breaker opening, going half-open and closing, with the provider and the reason', async () => {
    const s = await setup();
    const { gw } = s;
    await failEastFiveTimes(s);
    const opened = await gw.waitForLog((l) => l.msg === 'breaker' && l.state === 'open');
    assert.equal(opened.level, 'warn');
    assert.equal(opened.provider, 'east');
    assert.equal(opened.previous_state, 'closed');
    assert.equal(opened.reason, 'failure_threshold');
    assert.equal(opened.cause, 'status_5xx');
    assert.equal(opened.consecutive_failures, 5);
    assert.equal(opened.open_for_ms, 1000);
    assert.match(String(opened.identity), /^openai http:\/\/127\.0\.0\.1:\d+\/v1$/);

    // After the window the next request goes to east as the probe, and succeeds.
    await waitUntil(async () => (await breakerState(gw, 'east')) === 2, 'east is half-open');
    assertServed(await postChat(gw.url, chatBody('ew-model')), 'east');
    const halfOpen = await gw.waitForLog((l) => l.msg === 'breaker' && l.state === 'half_open');
    assert.deepEqual([halfOpen.level, halfOpen.provider, halfOpen.reason], ['info', 'east', 'window_elapsed']);
    const closed = await gw.waitForLog((l) => l.msg === 'breaker' && l.state === 'closed');
    assert.deepEqual(
      [closed.level, closed.provider, closed.previous_state, closed.reason],
      ['info', 'east', 'half_open', 'probe_succeeded'],
    );
    const lines = gw.logs().filter((l) => l.msg === 'breaker');
    assert.deepEqual(
      lines.map((l) => `${l.provider}:${l.state}`),
      ['east:open', 'east:half_open', 'east:closed'],
      'one line per change, none for west',
    );
  });

  it('only consecutive failures count: a success in between keeps the breaker closed', async () => {
    const { east, gw } = await setup();
    // 4 failures, a success, 4 failures: never 5 in a row.
    east.addFault({ mode: 'status', status: 500, count: 4 });
    for (let i = 0; i < 4; i++) assertServed(await postChat(gw.url, chatBody('ew-model')), 'west');
    assertServed(await postChat(gw.url, chatBody('ew-model')), 'east');
    east.addFault({ mode: 'status', status: 500, count: 4 });
    for (let i = 0; i < 4; i++) assertServed(await postChat(gw.url, chatBody('ew-model')), 'west');
    assert.equal(await breakerState(gw, 'east'), 0, 'still closed');
    assertServed(await postChat(gw.url, chatBody('ew-model')), 'east');
    assert.equal(chatCount(east), 10, 'every request tried east first');
  });

  it('a failed half-open probe opens the breaker again', async () => {
    const s = await setup();
    const { east, west, gw } = s;
    await failEastFiveTimes(s);
    await waitUntil(async () => (await breakerState(gw, 'east')) === 2, 'east is half-open');

    east.addFault({ mode: 'status', status: 503, count: 1 });
    const probe = await postChat(gw.url, chatBody('ew-model'));
    assertServed(probe, 'west');
    assert.equal(probe.headers.get('x-switchyard-fallback'), 'east', 'the probe went to east and failed');
    assert.equal(chatCount(east), 6);
    assert.equal(await breakerState(gw, 'east'), 1, 'open again');

    // The next window is longer (2 s); within it east is skipped.
    const next = await postChat(gw.url, chatBody('ew-model'));
    assertServed(next, 'west');
    assert.equal(chatCount(east), 6, 'east is skipped again');
    assert.equal(chatCount(west), 7);
  });

  it("when every candidate's breaker is open the chain is still tried in order, not failed fast", async () => {
    // A long window so both breakers stay open for the whole test.
    const s = await setup({ open_base_ms: 60_000 });
    const { east, west, gw } = s;
    east.addFault({ mode: 'status', status: 500 });
    west.addFault({ mode: 'status', status: 500 });
    for (let i = 0; i < 5; i++) {
      const r = await postChat(gw.url, chatBody('ew-model'));
      assert.equal(r.status, 502, r.text);
    }
    assert.equal(chatCount(east), 5);
    assert.equal(chatCount(west), 5);
    assert.equal(await breakerState(gw, 'east'), 1);
    assert.equal(await breakerState(gw, 'west'), 1);

    // Both open and both still failing: each is tried once, in order, and the client sees
    // the upstream failure (502), not a fail-fast 503.
    const both = await postChat(gw.url, chatBody('ew-model'));
    assert.equal(both.status, 502, both.text);
    assert.equal(both.json().error.code, 'upstream_error');
    assert.equal(chatCount(east), 6, 'east was tried although its breaker is open');
    assert.equal(chatCount(west), 6, 'west was tried although its breaker is open');

    // Both open, east still failing, west recovered: the request tries east, then west.
    west.clearFaults();
    const r = await postChat(gw.url, chatBody('ew-model'));
    assertServed(r, 'west');
    assert.equal(r.headers.get('x-switchyard-fallback'), 'east', 'east was tried first, in chain order');
    assert.equal(chatCount(east), 7);
    assert.equal(chatCount(west), 7);
  });
});
