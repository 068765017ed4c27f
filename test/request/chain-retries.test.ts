import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { SwitchyardError } from '../../src/errors.js';
import type { Generation, GenerationCandidate } from '../../src/live/index.js';
import { type AttemptRequest, composeAttempt, withBreaker, withCredentialCheck } from '../../src/request/attempt.js';
import type { BreakerOptions } from '../../src/resilience/index.js';
import {
  breakersFor,
  chainOf,
  chainRequest,
  exchangeFor,
  modelRequest,
  pools,
  ScriptedUpstream,
  type Step,
  serve,
  servicesFor,
  staticGeneration,
} from './chain-fixture.js';

// Retries of one candidate (its provider's `retry`) in the real failover loop and wraps,
// against a scripted upstream: a retried failure still counts for the breaker, a breaker it
// opened ends the retries, and the wait between tries ends with the request: a client that
// leaves, the drain.

after(() => pools.destroyAll());

// The wait's timer is unref'd (in the gateway the listener keeps the process up): here a
// timer of the test's own keeps the event loop running while a request waits.
const keepAlive = setInterval(() => undefined, 1000);
after(() => clearInterval(keepAlive));

const PATIENT: BreakerOptions = { failureThreshold: 100, openBaseMs: 1000, openMaxMs: 30_000 };
const COMMIT: Step = { kind: 'committed' };
const TIMEOUT: Step = { kind: 'failed', reason: 'timeout', detail: 'no headers', timing: 'early' };

function setup(gen: Generation, script: (a: AttemptRequest, n: number) => Step, options: BreakerOptions = PATIENT) {
  const { breakers } = breakersFor(gen, options);
  const svc = servicesFor(gen, breakers);
  const upstream = new ScriptedUpstream(script);
  const { x, res } = exchangeFor(gen);
  const chain = chainRequest({
    svc,
    x,
    request: modelRequest(gen, 'm'),
    candidates: chainOf(gen, 'm'),
    attempt: composeAttempt(upstream.attempt, withCredentialCheck, withBreaker(breakers)),
  });
  return { breakers, svc, upstream, x, res, chain, p0: chainOf(gen, 'm')[0] as GenerationCandidate };
}

describe('serveChain: retries of one candidate', { timeout: 30_000 }, () => {
  it('a provider with retry is tried again before the next candidate, each failure on record and counted by the breaker', async () => {
    const gen = staticGeneration({ retry: { attempts: 2, backoff_ms: 0, max_backoff_ms: 0 } });
    const t = setup(gen, (_a, n) => (n < 3 ? TIMEOUT : COMMIT));
    const served = await serve(t.chain);
    assert.equal(served.err, null);
    assert.deepEqual(t.upstream.providers, ['p0', 'p0', 'p0', 'p1']);
    assert.deepEqual(
      t.x.failures.map((f) => `${f.provider}:${f.reason}`),
      ['p0:timeout', 'p0:timeout', 'p0:timeout'],
    );
    assert.equal(t.breakers.view(t.p0.identity)?.consecutiveFailures, 3, 'every try went through the breaker');
  });

  it('a retry that succeeds commits on the same candidate', async () => {
    const gen = staticGeneration({ retry: { attempts: 3, backoff_ms: 1, max_backoff_ms: 5 } });
    const t = setup(gen, (_a, n) => (n === 0 ? TIMEOUT : COMMIT));
    assert.equal((await serve(t.chain)).err, null);
    assert.deepEqual(t.upstream.providers, ['p0', 'p0']);
    assert.equal(t.x.candidate, t.p0);
  });

  it('a failure that opens the breaker ends the retries: the chain moves on at once', async () => {
    const gen = staticGeneration({ retry: { attempts: 5, backoff_ms: 0, max_backoff_ms: 0 } });
    const t = setup(gen, (_a, n) => (n === 0 ? TIMEOUT : COMMIT), { failureThreshold: 1, openBaseMs: 1000, openMaxMs: 30_000 });
    assert.equal((await serve(t.chain)).err, null);
    assert.deepEqual(t.upstream.providers, ['p0', 'p1']);
  });

  it('a wait that would pass the route deadline is not started: the chain moves on', async () => {
    const gen = staticGeneration({ retry: { attempts: 2, backoff_ms: 60_000, max_backoff_ms: 60_000 } });
    const t = setup(gen, (_a, n) => (n === 0 ? TIMEOUT : COMMIT));
    const chain = { ...t.chain, deadlineAt: performance.now() + 10_000 };
    // The fixture's random source is 0.5: the wait would be 30 s, past the 10 s left.
    assert.equal((await serve(chain)).err, null);
    assert.deepEqual(t.upstream.providers, ['p0', 'p1']);
  });

  it('a client that leaves during the wait ends the request at once: no retry, no next candidate', async () => {
    const gen = staticGeneration({ retry: { attempts: 2, backoff_ms: 60_000, max_backoff_ms: 60_000 } });
    const t = setup(gen, (_a, n) => (n === 0 ? TIMEOUT : COMMIT));
    const served = serve(t.chain);
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(t.upstream.providers, ['p0'], 'waiting before the retry');
    // What the listener does when the client's connection closes.
    t.res.destroyed = true;
    t.x.running.clientClosed?.();
    const done = await served;
    assert.equal(done.err, null);
    assert.equal(t.x.outcome, 'aborted');
    assert.deepEqual(t.upstream.providers, ['p0']);
    assert.equal(t.x.running.clientClosed, null, 'the wait left the slot');
  });

  it('the drain stopping a request during the wait ends it shutting_down at once', async () => {
    const gen = staticGeneration({ retry: { attempts: 2, backoff_ms: 60_000, max_backoff_ms: 60_000 } });
    const t = setup(gen, (_a, n) => (n === 0 ? TIMEOUT : COMMIT));
    const served = serve(t.chain);
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    t.x.running.interrupt('the drain timed out');
    const done = await served;
    assert.ok(done.err instanceof SwitchyardError);
    assert.equal(done.err.code, 'shutting_down');
    assert.deepEqual(t.upstream.providers, ['p0']);
    assert.equal(t.x.running.stopAttempt, null);
  });

  it('a provider without retry fails over at once, as before', async () => {
    const gen = staticGeneration();
    const t = setup(gen, (_a, n) => (n === 0 ? TIMEOUT : COMMIT));
    assert.equal((await serve(t.chain)).err, null);
    assert.deepEqual(t.upstream.providers, ['p0', 'p1']);
  });
});
