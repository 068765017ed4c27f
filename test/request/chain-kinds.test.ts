import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, metricValue, scrapeMetrics, waitUntil } from '../support/observe.js';

// One failover loop serves every call kind: a model request and a tools/call go through the
// same chain and the same breaker wrap, so the same failures open a breaker after the same
// count, skip the same way while it is open, and close it with one probe after the window.
// Through a real gateway process, with two model mocks and two MCP mocks; whether a call
// reached an upstream is read from that mock's own count.

const THRESHOLD = 2;
const OPEN_MS = 600;
const ACCEPT = 'application/json, text/event-stream';

let east: MockProvider;
let west: MockProvider;
let alpha: MockProvider;
let bravo: MockProvider;
let gw: GatewayProcess;
let session: string | undefined;

async function breakerState(provider: string): Promise<number | undefined> {
  return metricValue(await scrapeMetrics(gw.url), 'switchyard_breaker_state', { provider });
}

async function mcpPost(body: unknown): Promise<{ status: number; json: Record<string, unknown>; sessionId: string | null }> {
  const res = await fetch(new URL('/mcp', gw.url), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      ...(session === undefined ? {} : { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }),
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, sessionId: res.headers.get('mcp-session-id') };
}

/** A new session: a session binds a tool to the server that last served it, which would hide the breaker. */
async function initialize(): Promise<void> {
  session = undefined;
  const init = await mcpPost({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'chain-kinds', version: '1' } },
  });
  assert.equal(init.status, 200);
  session = init.sessionId ?? undefined;
}

let nextId = 10;
/** A tools/call of the retry-safe `slow` tool, in a session of its own; the text of its answer. */
async function callSlow(): Promise<string> {
  await initialize();
  const r = await mcpPost({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'slow', arguments: { ms: 1 } } });
  assert.equal(r.status, 200);
  const result = r.json.result as { content: Array<{ text: string }> } | undefined;
  assert.ok(result !== undefined, JSON.stringify(r.json));
  return result.content.map((c) => c.text).join('');
}

function slowCalls(mock: MockProvider): number {
  return mock.mcpStats().calls.slow ?? 0;
}

before(async () => {
  [east, west, alpha, bravo] = await Promise.all([
    startMockProvider({ name: 'east' }),
    startMockProvider({ name: 'west' }),
    startMockProvider({ name: 'alpha', protocol: 'mcp', mcpResponse: 'json' }),
    startMockProvider({ name: 'bravo', protocol: 'mcp', mcpResponse: 'json' }),
  ]);
  gw = await startGatewayProcess({
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    providers: {
      east: { type: 'openai', base_url: east.baseUrl, timeout_ms: 5000 },
      west: { type: 'openai', base_url: west.baseUrl, timeout_ms: 5000 },
      alpha: { type: 'mcp', base_url: `${alpha.origin}/mcp`, timeout_ms: 1500 },
      bravo: { type: 'mcp', base_url: `${bravo.origin}/mcp`, timeout_ms: 1500 },
    },
    routing: {
      routes: { 'ew-model': { policy: 'ordered', candidates: [{ provider: 'east' }, { provider: 'west' }] } },
      tools: { slow: { retry_safe: true, candidates: [{ provider: 'alpha' }, { provider: 'bravo' }] } },
    },
    resilience: { breaker: { failure_threshold: THRESHOLD, open_base_ms: OPEN_MS, open_max_ms: OPEN_MS * 4 } },
    mcp: { catalog_recheck_ms: 0 },
  });
  await waitUntil(() => gw.logs().filter((l) => l.msg === 'MCP server catalog listed').length >= 2, 'both catalogs are listed');
});

after(async () => {
  await gw?.stop();
  await Promise.all([east, west, alpha, bravo].map((m) => m?.close()));
});

describe('one chain for every call kind', () => {
  it('opens a tool server s breaker after the same failures as a model provider s, skips it while open, and closes it with one probe', async () => {
    // The same fault on both kinds' first candidate, THRESHOLD times: each call fails over to the second.
    east.addFault({ mode: 'status', status: 503, count: THRESHOLD });
    alpha.addFault({ mode: 'status', status: 503, count: THRESHOLD });
    for (let i = 0; i < THRESHOLD; i++) {
      const r = await postChat(gw.url, chatBody('ew-model'));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-switchyard-provider'), 'west');
      assert.equal(await callSlow(), 'slept 1');
    }
    assert.equal(slowCalls(bravo), THRESHOLD, 'bravo served every call alpha failed');
    assert.equal(await breakerState('east'), 1, 'east is open');
    assert.equal(await breakerState('alpha'), 1, 'alpha is open, as east is');
    const opened = gw.logs().filter((l) => l.msg === 'breaker' && l.state === 'open');
    const why = (provider: string) => opened.find((l) => l.provider === provider);
    assert.equal(why('alpha')?.reason, why('east')?.reason, 'both opened for the same reason');
    assert.equal(why('alpha')?.cause, 'status_5xx');
    assert.equal(why('east')?.cause, 'status_5xx');

    // While open, neither first candidate is sent anything.
    const eastBefore = chatCount(east);
    const alphaBefore = slowCalls(alpha);
    assert.equal((await postChat(gw.url, chatBody('ew-model'))).headers.get('x-switchyard-provider'), 'west');
    assert.equal(await callSlow(), 'slept 1');
    assert.equal(chatCount(east), eastBefore, 'east saw nothing while open');
    assert.equal(slowCalls(alpha), alphaBefore, 'alpha saw nothing while open');

    // After the window, one probe each goes through, succeeds, and closes both.
    await waitUntil(async () => (await breakerState('east')) === 2 && (await breakerState('alpha')) === 2, 'both are half-open');
    assert.equal((await postChat(gw.url, chatBody('ew-model'))).headers.get('x-switchyard-provider'), 'east');
    assert.equal(await callSlow(), 'slept 1');
    assert.equal(slowCalls(alpha), alphaBefore + 1, 'the probe reached alpha');
    assert.equal(await breakerState('east'), 0);
    assert.equal(await breakerState('alpha'), 0, 'the probe closed alpha, as it closed east');
  });
});
