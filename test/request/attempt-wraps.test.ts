import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SwitchyardError } from '../../src/errors.js';
import type { Generation, GenerationCandidate } from '../../src/live/index.js';
import {
  type Attempt,
  type AttemptRequest,
  type AttemptResult,
  composeAttempt,
  type Wrap,
  withBreaker,
  withCredentialCheck,
} from '../../src/request/attempt.js';
import { withTracing } from '../../src/request/attempt-tracing.js';
import type { BreakerOptions, BreakerRegistry, BreakerTransition } from '../../src/resilience/index.js';
import { type Span, Tracing } from '../../src/telemetry/index.js';
import { Collector, type OtlpSpan } from '../support/otlp.js';
import {
  always,
  breakersFor,
  chainOf,
  exchangeFor,
  modelRequest,
  overlayWithoutCredentials,
  pools,
  ScriptedUpstream,
  type Step,
  staticGeneration,
} from './chain-fixture.js';

// Each wrap of an attempt on its own, over a scripted upstream, with the real breaker
// registry. Every result is checked to arrive once, and after the attempt function
// returned: the wraps' own answers (a skip, a missing credential) included.

const gen = staticGeneration();
const [p0, p1] = chainOf(gen, 'm') as [GenerationCandidate, GenerationCandidate];
let overlay: Generation;

before(async () => {
  overlay = await overlayWithoutCredentials();
});
after(() => pools.destroyAll());

function attemptRequest(c: GenerationCandidate, pass: 0 | 1 = 0, g: Generation = gen, span?: Span): AttemptRequest {
  const { x } = exchangeFor(g, undefined, { span });
  const request = modelRequest(g, 'm');
  return {
    admitted: { x, request, limitHeaders: null, deadlineAt: null, fallbackOn: null, outputCap: null, onResponseId: null },
    candidate: c,
    pass,
    trace: null,
  };
}

interface Reported {
  readonly r: AttemptResult;
  /** Whether the attempt function had returned when its callback ran. */
  readonly afterReturn: boolean;
}

/** Runs one attempt; resolves with its one result, a few turns after it came (to see a second, if any). */
function attemptOnce(attempt: Attempt, a: AttemptRequest): Promise<Reported> {
  return new Promise((resolve, reject) => {
    let returned = false;
    let calls = 0;
    attempt(a, (r) => {
      calls += 1;
      if (calls > 1) return;
      const afterReturn = returned;
      setImmediate(() =>
        setTimeout(() => (calls === 1 ? resolve({ r, afterReturn }) : reject(new Error(`the callback ran ${calls} times`))), 0),
      );
    });
    returned = true;
  });
}

function registry(options?: BreakerOptions): { breakers: BreakerRegistry; clock: { nowMs: number }; transitions: BreakerTransition[] } {
  const { breakers, clock } = breakersFor(gen, options);
  const transitions: BreakerTransition[] = [];
  breakers.observe((t) => transitions.push(t));
  return { breakers, clock, transitions };
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

const FAIL_5XX: Step = { kind: 'failed', reason: 'status_5xx', detail: 'upstream 503', timing: 'early' };

describe('withCredentialCheck', { timeout: 30_000 }, () => {
  it('a candidate whose credential cannot be read fails with credential_unavailable and its problem, after the attempt returned, and nothing is sent', async () => {
    const c = chainOf(overlay, 'm')[0] as GenerationCandidate;
    assert.ok(c.credentialProblem !== null);
    const upstream = new ScriptedUpstream(always(FAIL_5XX));
    const { r, afterReturn } = await attemptOnce(withCredentialCheck(upstream.attempt), attemptRequest(c, 0, overlay));
    assert.equal(afterReturn, true, 'the callback ran before the attempt returned');
    assert.deepEqual(r, { kind: 'failed', reason: 'credential_unavailable', detail: c.credentialProblem });
    assert.equal(upstream.calls.length, 0);
  });

  it('a candidate with its credential goes upstream with the same request, and its result comes back as it was', async () => {
    const upstream = new ScriptedUpstream(always({ kind: 'committed' }));
    const a = attemptRequest(p0);
    const { r, afterReturn } = await attemptOnce(withCredentialCheck(upstream.attempt), a);
    assert.equal(afterReturn, true);
    assert.equal(upstream.calls[0]?.a, a);
    assert.equal(r, upstream.calls[0]?.committed);
  });
});

describe('withBreaker', { timeout: 30_000 }, () => {
  it('an open breaker skips its candidate after the attempt returned, without calling upstream', async () => {
    const { breakers } = registry();
    breakers.recordFailure(p0.identity, false);
    const upstream = new ScriptedUpstream(always(FAIL_5XX));
    const { r, afterReturn } = await attemptOnce(withBreaker(breakers)(upstream.attempt), attemptRequest(p0));
    assert.equal(afterReturn, true, 'the skip came before the attempt returned');
    assert.deepEqual(r, { kind: 'skipped' });
    assert.equal(upstream.calls.length, 0);
  });

  it('each failure is recorded with its reason; failure_threshold of them in a row open the breaker', async () => {
    const { breakers, transitions } = registry({ failureThreshold: 2, openBaseMs: 1000, openMaxMs: 30_000 });
    const upstream = new ScriptedUpstream(always({ kind: 'failed', reason: 'timeout' }));
    const attempt = withBreaker(breakers)(upstream.attempt);
    assert.equal((await attemptOnce(attempt, attemptRequest(p0))).r.kind, 'failed');
    assert.equal(breakers.stateOf(p0.identity), 'closed');
    await attemptOnce(attempt, attemptRequest(p0));
    assert.equal(breakers.stateOf(p0.identity), 'open');
    assert.deepEqual(
      transitions.map((t) => [t.reason, t.cause, t.consecutiveFailures]),
      [['failure_threshold', 'timeout', 2]],
    );
  });

  it('a 429 that says when to come back opens the breaker for that long, capped at open_max_ms', async () => {
    const { breakers, clock } = registry();
    const hold = (c: GenerationCandidate, retryAfterMs: number) =>
      attemptOnce(
        withBreaker(breakers)(new ScriptedUpstream(always({ kind: 'failed', reason: 'status_429', retryAfterMs })).attempt),
        attemptRequest(c),
      );
    await hold(p0, 5000);
    assert.equal(breakers.view(p0.identity)?.openUntilMs, clock.nowMs + 5000);
    await hold(p1, 600_000);
    assert.equal(breakers.view(p1.identity)?.openUntilMs, clock.nowMs + 30_000);
  });

  it('a half-open breaker gives its probe to one attempt: another meanwhile is skipped, and the probe’s failure reopens it for twice as long', async () => {
    const { breakers, clock, transitions } = registry();
    breakers.recordFailure(p0.identity, false);
    clock.nowMs += 1000;
    const upstream = new ScriptedUpstream(always({ kind: 'held' }));
    const attempt = withBreaker(breakers)(upstream.attempt);
    const probe = attemptOnce(attempt, attemptRequest(p0));
    const other = await attemptOnce(attempt, attemptRequest(p0));
    assert.deepEqual(other.r, { kind: 'skipped' });
    assert.equal(upstream.calls.length, 1, 'only the probe went upstream');
    upstream.calls[0]?.report({ kind: 'failed', reason: 'connect_error', detail: 'ECONNREFUSED' });
    assert.equal((await probe).r.kind, 'failed');
    assert.deepEqual(
      transitions.slice(-1).map((t) => [t.from, t.to, t.reason, t.cause, t.openForMs]),
      [['half_open', 'open', 'probe_failed', 'connect_error', 2000]],
    );
  });

  it('a probe that commits closes the breaker at the commit, before its body ends', async () => {
    const { breakers, clock } = registry();
    breakers.recordFailure(p0.identity, false);
    clock.nowMs += 1000;
    const upstream = new ScriptedUpstream(always({ kind: 'committed', relayed: 'held' }));
    const { r } = await attemptOnce(withBreaker(breakers)(upstream.attempt), attemptRequest(p0));
    assert.equal(r.kind, 'committed');
    assert.equal(breakers.stateOf(p0.identity), 'closed', 'a long stream must not hold the probe');
    upstream.calls[0]?.committed?.finish();
    assert.equal(breakers.stateOf(p0.identity), 'closed');
  });

  it('a committed response cut after it began counts as a failure (stream_cut); one that ends complete does not', async () => {
    const { breakers, transitions } = registry({ failureThreshold: 5, openBaseMs: 1000, openMaxMs: 30_000 });
    const upstream = new ScriptedUpstream(always({ kind: 'committed', relayed: 'held' }));
    const attempt = withBreaker(breakers)(upstream.attempt);
    await attemptOnce(attempt, attemptRequest(p0));
    upstream.calls[0]?.committed?.finish({ outcome: 'complete' });
    assert.equal(breakers.view(p0.identity)?.consecutiveFailures, 0);
    await attemptOnce(attempt, attemptRequest(p0));
    upstream.calls[1]?.committed?.finish({ outcome: 'partial', usage: null });
    assert.equal(breakers.view(p0.identity)?.consecutiveFailures, 1);
    assert.deepEqual(transitions, []);
  });

  it('streams cut while others are still running add up: failure_threshold of them open the breaker', async () => {
    const { breakers, transitions } = registry({ failureThreshold: 3, openBaseMs: 1000, openMaxMs: 30_000 });
    const upstream = new ScriptedUpstream(always({ kind: 'committed', relayed: 'held' }));
    const attempt = withBreaker(breakers)(upstream.attempt);
    for (let i = 0; i < 3; i++) await attemptOnce(attempt, attemptRequest(p0));
    for (const call of upstream.calls) call.committed?.finish({ outcome: 'partial', usage: null });
    assert.equal(breakers.stateOf(p0.identity), 'open');
    assert.deepEqual(
      transitions.map((t) => [t.reason, t.cause]),
      [['failure_threshold', 'stream_cut']],
    );
  });

  it('streams cut one after another open the breaker too: failure_threshold requests in a row, each cut after it began', async () => {
    const { breakers } = registry({ failureThreshold: 3, openBaseMs: 1000, openMaxMs: 30_000 });
    const upstream = new ScriptedUpstream(always({ kind: 'committed', relayed: { outcome: 'partial', usage: null } }));
    const attempt = withBreaker(breakers)(upstream.attempt);
    for (let i = 0; i < 3; i++) await attemptOnce(attempt, attemptRequest(p0));
    assert.equal(upstream.calls.length, 3);
    assert.equal(breakers.view(p0.identity)?.consecutiveFailures, 3);
    assert.equal(breakers.stateOf(p0.identity), 'open');
  });

  it('a response that ends whole clears the failures before it; one whose stream is cut adds to them', async () => {
    const { breakers } = registry({ failureThreshold: 5, openBaseMs: 1000, openMaxMs: 30_000 });
    breakers.recordFailure(p0.identity, false);
    breakers.recordFailure(p0.identity, false);
    const whole = withBreaker(breakers)(
      new ScriptedUpstream(always({ kind: 'committed', relayed: { outcome: 'complete', usage: null } })).attempt,
    );
    await attemptOnce(whole, attemptRequest(p0));
    assert.equal(breakers.view(p0.identity)?.consecutiveFailures ?? 0, 0);
    const cut = withBreaker(breakers)(
      new ScriptedUpstream(always({ kind: 'committed', relayed: { outcome: 'partial', usage: null } })).attempt,
    );
    await attemptOnce(cut, attemptRequest(p0));
    await attemptOnce(cut, attemptRequest(p0));
    assert.equal(breakers.view(p0.identity)?.consecutiveFailures, 2, 'each cut stream counts, none is forgiven at its start');
  });

  it('a probe whose client left is released for the next attempt, and is no verdict on the provider', async () => {
    const { breakers, clock, transitions } = registry();
    breakers.recordFailure(p0.identity, false);
    clock.nowMs += 1000;
    const upstream = new ScriptedUpstream((_a, n) => (n === 0 ? { kind: 'aborted' } : { kind: 'committed' }));
    const attempt = withBreaker(breakers)(upstream.attempt);
    assert.deepEqual((await attemptOnce(attempt, attemptRequest(p0))).r, { kind: 'aborted' });
    assert.equal(breakers.stateOf(p0.identity), 'half_open');
    assert.equal(breakers.view(p0.identity)?.consecutiveFailures, 1);
    const next = await attemptOnce(attempt, attemptRequest(p0));
    assert.equal(next.r.kind, 'committed', 'the next attempt was let through as the probe');
    assert.equal(transitions.at(-1)?.reason, 'probe_succeeded');
  });

  it('a probe whose request cannot be sent is released and its error rethrown; its callback never runs', async () => {
    const { breakers, clock } = registry();
    breakers.recordFailure(p0.identity, false);
    clock.nowMs += 1000;
    const refusal = new SwitchyardError('invalid_request', 'cannot be written for this provider (field tools)', 'tools');
    const upstream = new ScriptedUpstream((_a, n) => (n === 0 ? { kind: 'throw', error: refusal } : { kind: 'committed' }));
    const attempt = withBreaker(breakers)(upstream.attempt);
    let called = 0;
    assert.throws(
      () => attempt(attemptRequest(p0), () => called++),
      (err) => err === refusal,
    );
    await turns(3);
    assert.equal(called, 0);
    assert.equal(breakers.stateOf(p0.identity), 'half_open');
    assert.equal((await attemptOnce(attempt, attemptRequest(p0))).r.kind, 'committed', 'the next attempt was the probe');
  });

  it('on the second pass the breaker is not asked: an open breaker’s candidate is tried, and its failure leaves the open window as it was', async () => {
    const { breakers } = registry();
    breakers.recordFailure(p0.identity, false);
    const before = breakers.view(p0.identity)?.openUntilMs;
    const upstream = new ScriptedUpstream(always(FAIL_5XX));
    const { r, afterReturn } = await attemptOnce(withBreaker(breakers)(upstream.attempt), attemptRequest(p0, 1));
    assert.equal(afterReturn, true);
    assert.equal(r.kind, 'failed');
    assert.equal(upstream.calls.length, 1);
    assert.equal(breakers.stateOf(p0.identity), 'open');
    assert.equal(breakers.view(p0.identity)?.openUntilMs, before);
  });

  it('a result for one candidate touches only its own breaker', async () => {
    const { breakers } = registry();
    await attemptOnce(withBreaker(breakers)(new ScriptedUpstream(always(FAIL_5XX)).attempt), attemptRequest(p0));
    assert.equal(breakers.stateOf(p0.identity), 'open');
    assert.equal(breakers.stateOf(p1.identity), 'closed');
  });
});

describe('composeAttempt', { timeout: 30_000 }, () => {
  it('the first wrap is the outermost: it sees the request first and the result last', async () => {
    const seen: string[] = [];
    const named =
      (name: string): Wrap =>
      (next) =>
      (a, done) => {
        seen.push(`${name} in`);
        next(a, (r) => {
          seen.push(`${name} out`);
          done(r);
        });
      };
    const upstream = new ScriptedUpstream(always(FAIL_5XX));
    await attemptOnce(composeAttempt(upstream.attempt, named('outer'), named('inner')), attemptRequest(p0));
    assert.deepEqual(seen, ['outer in', 'inner in', 'inner out', 'outer out']);
  });

  it('composed as the request path does (credential check outside the breaker), a missing credential neither takes a half-open probe nor counts against the provider', async () => {
    const c = chainOf(overlay, 'm')[0] as GenerationCandidate;
    const { breakers, clock } = breakersFor(overlay);
    breakers.recordFailure(c.identity, false);
    clock.nowMs += 1000;
    const upstream = new ScriptedUpstream(always(FAIL_5XX));
    const attempt = composeAttempt(upstream.attempt, withCredentialCheck, withBreaker(breakers));
    const { r, afterReturn } = await attemptOnce(attempt, attemptRequest(c, 0, overlay));
    assert.equal(afterReturn, true);
    assert.equal(r.kind === 'failed' && r.reason, 'credential_unavailable');
    assert.equal(breakers.view(c.identity)?.consecutiveFailures, 1, 'the missing secret was not counted');
    assert.equal(breakers.admit(c.identity), 'probe', 'the probe is still there for a request that can use it');
  });
});

describe('withTracing', { timeout: 30_000 }, () => {
  it('without a request span the attempt passes through untouched: no trace context is made up', async () => {
    const tracing = await Tracing.start({
      endpoint: 'http://127.0.0.1:9/v1/traces',
      headers: {},
      serviceName: 'wraps',
      serviceVersion: 'test',
      instance: 'test',
      sampleRatio: 1,
    });
    try {
      const upstream = new ScriptedUpstream(always(FAIL_5XX));
      const a = attemptRequest(p0);
      const { afterReturn } = await attemptOnce(withTracing(tracing)(upstream.attempt), a);
      assert.equal(afterReturn, true);
      assert.equal(upstream.calls[0]?.a, a);
      assert.equal(upstream.calls[0]?.a.trace, null);
    } finally {
      await tracing.shutdown();
    }
  });

  it('with a request span, each upstream attempt gets a client span that carries its traceparent upstream and ends with the attempt’s outcome', async () => {
    const collector = new Collector();
    const endpoint = await collector.listen();
    const spans = collector.spans;
    try {
      const tracing = await Tracing.start({
        endpoint,
        headers: {},
        serviceName: 'wraps',
        serviceVersion: 'test',
        instance: 'test',
        sampleRatio: 1,
      });
      const upstream = new ScriptedUpstream((_a, n) =>
        n === 0 ? FAIL_5XX : n === 1 ? { kind: 'aborted' } : { kind: 'committed', relayed: { usage: { inputTokens: 3, outputTokens: 4 } } },
      );
      const attempt = withTracing(tracing)(upstream.attempt);
      const span = tracing.startServer('POST', '/v1/chat/completions', '/v1/chat/completions', {});
      const a = attemptRequest(p0, 0, gen, span);
      for (let i = 0; i < 3; i++) assert.equal((await attemptOnce(attempt, a)).afterReturn, true);
      await turns(2);
      span.end();
      await tracing.shutdown();

      const server = spans.find((s) => s.name === 'POST /v1/chat/completions');
      assert.ok(server !== undefined, `spans: ${spans.map((s) => s.name).join(', ')}`);
      const clients = spans.filter((s) => s.parentSpanId === server.spanId);
      assert.equal(clients.length, 3);
      const attr = (s: OtlpSpan, key: string) => {
        const v = s.attributes.find((at) => at.key === key)?.value;
        return v === undefined ? undefined : (v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)));
      };
      // error.type, the response status, the output tokens: failed, client left, committed.
      const expected = [
        ['status_5xx', undefined, undefined],
        ['client_closed', undefined, undefined],
        [undefined, 200, 4],
      ];
      for (const [i, call] of upstream.calls.entries()) {
        const parent = call.a.trace?.traceparent;
        assert.ok(parent !== undefined, `attempt ${i} was sent without a traceparent`);
        const spanId = parent.split('-')[2];
        const span = clients.find((s) => s.spanId === spanId);
        assert.ok(span !== undefined, `attempt ${i}'s traceparent names no client span`);
        assert.equal(span.name, 'chat up-m');
        assert.equal(attr(span, 'switchyard.provider'), 'p0');
        const outcome = [attr(span, 'error.type'), attr(span, 'http.response.status_code'), attr(span, 'gen_ai.usage.output_tokens')];
        assert.deepEqual(outcome, expected[i], `attempt ${i}'s span`);
      }
    } finally {
      await new Promise((r) => collector.server.close(r));
    }
  });
});
