import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { adminStatus } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { type HostileMode, type HostileUpstream, startHostileUpstream } from '../support/hostile-upstream.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// The hostile-upstream hardening (ADR 0013): an upstream that misbehaves, in front of a
// healthy one. Each case states what the client sees, whether the request failed over, and
// what the access line says.

const resources = fileResources('switchyard-hostile-');
const TIMEOUT_MS = 300;

let east: MockProvider;
let hostile: HostileUpstream;
let gw: GatewayProcess;

before(async () => {
  east = await resources.startMock({ name: 'east' });
  hostile = await startHostileUpstream('hang_before_headers');
  resources.addUpstream(() => hostile.close());
  const config = baseConfig(
    { hostile: hostile.baseUrl, east: east.baseUrl },
    { m: { policy: 'ordered', candidates: [{ provider: 'hostile' }, { provider: 'east' }] } },
    // Every request must reach the hostile upstream first: no breaker in the way.
    { resilience: { breaker: { failure_threshold: 1000 } } },
  );
  (config.providers as Record<string, { timeout_ms: number }>).hostile!.timeout_ms = TIMEOUT_MS;
  gw = await resources.startGw(config);
});

async function served(mode: HostileMode) {
  hostile.mode = mode;
  const requestId = `hostile-${mode}-${Date.now()}`;
  const reply = await postChat(gw.url, chatBody('m'), { 'x-request-id': requestId });
  const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
  return { reply, line };
}

describe('a hostile upstream before a healthy one', () => {
  const failsOver: Array<[HostileMode, string, string]> = [
    ['hang_before_headers', 'timeout', 'never answers: timed out after timeout_ms'],
    // A regression: the client got an empty reply logged as partial, though nothing had reached it.
    ['hang_after_headers', 'timeout', 'sends headers, then goes silent (non-streamed)'],
    ['trickle_body', 'timeout', 'trickles its body slower than timeout_ms'],
    ['close_mid_body', 'connect_error', 'closes the connection mid-body'],
  ];
  for (const [mode, reason, what] of failsOver) {
    it(`an upstream that ${what} fails over before the first byte: the client gets the next candidate's 200`, async () => {
      const { reply, line } = await served(mode);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.headers.get('x-switchyard-provider'), 'east');
      assert.equal(reply.headers.get('x-switchyard-fallback'), 'hostile');
      assert.equal(reply.json().object, 'chat.completion');
      assert.deepEqual(line.fallback, [`hostile:${reason}`]);
      assert.equal(line.status, 200);
      assert.equal(line.partial, false);
    });
  }

  it('a 200 whose body is not JSON is relayed as it came (a proxy does not rewrite bodies); no usage is read from it', async () => {
    const { reply, line } = await served('invalid_json');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('x-switchyard-provider'), 'hostile');
    assert.equal(reply.text, '{"id": "chatcmpl-broken", "choices": [');
    assert.equal(line.input_tokens, undefined);
  });

  it('a body past the 1 MiB buffering bound is relayed as it comes, whole', async () => {
    const { reply, line } = await served('huge_body');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('x-switchyard-provider'), 'hostile');
    assert.ok(reply.text.length > 8 * 1024 * 1024, `got ${reply.text.length} bytes`);
    assert.equal(reply.json().object, 'chat.completion');
    assert.equal(line.partial, false);
  });

  it('after all of it the gateway still answers at once', async () => {
    const health = await fetch(`${gw.url}/healthz`, { signal: AbortSignal.timeout(1000) });
    assert.equal(health.status, 200);
  });
});

describe('time limits on upstreams', () => {
  let trickle: HostileUpstream;
  let endless: HostileUpstream;
  let hanging: HostileUpstream;
  let limited: HostileUpstream;
  let timed: GatewayProcess;

  before(async () => {
    trickle = await startHostileUpstream('trickle_body', { trickleMs: 50 });
    endless = await startHostileUpstream('endless_sse');
    hanging = await startHostileUpstream('hang_before_headers');
    limited = await startHostileUpstream('rate_limited');
    for (const u of [trickle, endless, hanging, limited]) resources.addUpstream(() => u.close());
    const config = baseConfig(
      { trickle: trickle.baseUrl, endless: endless.baseUrl, hanging: hanging.baseUrl, limited: limited.baseUrl, east: east.baseUrl },
      {
        trickled: { policy: 'ordered', candidates: [{ provider: 'trickle' }, { provider: 'east' }] },
        endless: { candidates: [{ provider: 'endless' }] },
        deadlined: { policy: 'ordered', deadline_ms: 400, candidates: [{ provider: 'hanging' }, { provider: 'east' }] },
        limited: { policy: 'ordered', candidates: [{ provider: 'limited' }, { provider: 'east' }] },
      },
      { resilience: { breaker: { failure_threshold: 1000 } } },
    );
    const providers = config.providers as Record<string, Record<string, unknown>>;
    // Never silent for 300 ms, so only request_timeout_ms can stop it.
    providers.trickle = { ...providers.trickle, timeout_ms: 300, request_timeout_ms: 600 };
    providers.endless = { ...providers.endless, timeout_ms: 300, stream_max_ms: 500 };
    providers.hanging = { ...providers.hanging, timeout_ms: 5000 };
    timed = await resources.startGw(config);
  });

  it('a body that trickles steadily fails over at request_timeout_ms, before anything reached the client', async () => {
    const requestId = `trickle-${Date.now()}`;
    const reply = await postChat(timed.url, chatBody('trickled'), { 'x-request-id': requestId });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.headers.get('x-switchyard-provider'), 'east');
    assert.equal(reply.headers.get('x-switchyard-fallback'), 'trickle');
    const line = await timed.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.deepEqual(line.fallback, ['trickle:timeout']);
  });

  it('a stream that never ends is ended at stream_max_ms with the SSE error event, and logged partial', async () => {
    const requestId = `endless-${Date.now()}`;
    const res = await fetch(`${timed.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': requestId },
      body: chatBody('endless', { stream: true }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    const events = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => e.slice(6));
    const last = JSON.parse(events.at(-1) as string) as { error: { code: string; message: string } };
    assert.equal(last.error.code, 'stream_interrupted');
    assert.match(last.error.message, /stream_max_ms \(500 ms\)/);
    const line = await timed.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.equal(line.status, 'partial');
  });

  it("a route's deadline_ms bounds every attempt together: 504 upstream_timeout, and the next candidate is not started after it", async () => {
    east.reset();
    const reply = await postChat(timed.url, chatBody('deadlined'));
    assert.equal(reply.status, 504, reply.text);
    const body = reply.json<{ error: { code: string; message: string } }>();
    assert.equal(body.error.code, 'upstream_timeout');
    assert.match(body.error.message, /deadline_ms for model "deadlined" passed after 1 of 2 candidate/);
    assert.equal(east.stats().recent.length, 0, 'east was not called after the deadline');
  });

  it("an upstream 429 with retry-after opens that provider's breaker at once, for at least that long", async () => {
    const first = await postChat(timed.url, chatBody('limited'));
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get('x-switchyard-fallback'), 'limited');
    const status = await adminStatus(timed.adminUrl!);
    const breaker = status.body.providers.find((p) => p.name === 'limited')?.breaker as { state: string; openUntilMs: number } | null;
    assert.equal(breaker?.state, 'open', JSON.stringify(breaker));
    assert.ok(breaker.openUntilMs - Date.now() > 25_000, `open for about 30 s: ${JSON.stringify(breaker)}`);
    const calls = limited.requests;
    const second = await postChat(timed.url, chatBody('limited'));
    assert.equal(second.headers.get('x-switchyard-provider'), 'east');
    assert.equal(limited.requests, calls, 'the limited provider is skipped while its breaker is open');
  });
});
