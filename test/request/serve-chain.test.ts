import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { SwitchyardError } from '../../src/errors.js';
import { type Principal, type Reservation, scopesOf } from '../../src/governance/index.js';
import type { Generation, GenerationCandidate } from '../../src/live/index.js';
import type { Operation } from '../../src/providers/index.js';
import { type AttemptRequest, composeAttempt, withBreaker, withCredentialCheck } from '../../src/request/attempt.js';
import type { Exchange } from '../../src/request/exchange.js';
import { operations } from '../../src/request/operations.js';
import { policyOf } from '../../src/request/policy.js';
import type { ChainRequest } from '../../src/request/serve-chain.js';
import type { Services } from '../../src/request/services.js';
import type { BreakerOptions, BreakerRegistry, BreakerTransition } from '../../src/resilience/index.js';
import {
  always,
  breakersFor,
  CommittedDouble,
  chainOf,
  chainRequest,
  exchangeFor,
  keyringFor,
  LONG_CHAIN,
  modelRequest,
  overlayWithoutCredentials,
  pools,
  type ResponseDouble,
  reserveFor,
  ScriptedUpstream,
  type Served,
  type Step,
  serve,
  servicesFor,
  staticGeneration,
  watchReturns,
} from './chain-fixture.js';

// The failover loop (serveChain) with the real wraps (credential check, breaker) and the
// real breaker registry, services and governance store, against a scripted upstream in
// the relay's place. Each test is one or more requests through the chain, checked by what
// the upstream saw, the request's record (the Exchange), the breakers and the store.

const gen = staticGeneration();
const m = chainOf(gen, 'm');
const [p0, p1, p2, p3] = m as [GenerationCandidate, GenerationCandidate, GenerationCandidate, GenerationCandidate];
const ACME: Principal = { keyId: 'k1', team: 'acme' };

after(() => pools.destroyAll());

interface World {
  readonly gen: Generation;
  readonly breakers: BreakerRegistry;
  readonly clock: { nowMs: number };
  readonly svc: Services;
  readonly transitions: BreakerTransition[];
}

/** The services one or more requests share: what the composition root builds once. */
function world(g: Generation = gen, options?: BreakerOptions): World {
  const { breakers, clock } = breakersFor(g, options);
  const transitions: BreakerTransition[] = [];
  breakers.observe((t) => transitions.push(t));
  return { gen: g, breakers, clock, svc: servicesFor(g, breakers), transitions };
}

interface RequestOptions {
  readonly model?: string;
  readonly candidates?: readonly GenerationCandidate[];
  readonly principal?: Principal;
  readonly operation?: Operation;
  readonly protocol?: 'openai' | 'anthropic';
  readonly stream?: boolean;
  readonly deadlineAt?: number | null;
  /** Take a real reservation for the caller first (team acme's key). */
  readonly reserve?: boolean;
  readonly usage?: ChainRequest['usage'];
  readonly onCommit?: ChainRequest['onCommit'];
}

interface OneRequest {
  readonly x: Exchange;
  readonly res: ResponseDouble;
  readonly upstream: ScriptedUpstream;
  readonly watched: ReturnType<typeof watchReturns>;
  readonly chain: ChainRequest;
  readonly reservation: Reservation | null;
}

/**
 * One request on the chain, with the attempt the request path composes for its operation:
 * behind the credential check and the breaker when the operation is guarded, the credential
 * check alone when not.
 */
function request(w: World, script: (a: AttemptRequest, n: number) => Step, o: RequestOptions = {}): OneRequest {
  const operation = o.operation ?? 'chat';
  const principal = o.principal ?? (o.reserve === true ? ACME : { keyId: null, team: null });
  const upstream = new ScriptedUpstream(script);
  const wraps = operations[operation].guarded ? [withCredentialCheck, withBreaker(w.breakers)] : [withCredentialCheck];
  const watched = watchReturns(composeAttempt(upstream.attempt, ...wraps));
  const { x, res } = exchangeFor(w.gen, principal, { operation });
  const model = o.model ?? 'm';
  const req = modelRequest(w.gen, model, { operation, protocol: o.protocol, stream: o.stream, principal });
  const candidates = o.candidates ?? chainOf(w.gen, model);
  const reservation = o.reserve === true ? reserveFor(x, w.svc, req, candidates) : null;
  const chain = chainRequest({
    svc: w.svc,
    x,
    request: req,
    candidates,
    attempt: watched.attempt,
    reservation,
    deadlineAt: o.deadlineAt,
    usage: o.usage,
    onCommit: o.onCommit,
  });
  return { x, res, upstream, watched, chain, reservation };
}

/** Opens a candidate's breaker (one failure, with ONE_STRIKE). */
function open(w: World, ...cs: GenerationCandidate[]): void {
  for (const c of cs) w.breakers.recordFailure(c.identity, false, undefined, 'status_5xx');
  for (const c of cs) assert.equal(w.breakers.stateOf(c.identity), 'open');
}

/** Opens a breaker, then lets its window pass: the next admission is its probe. */
function halfOpen(w: World, c: GenerationCandidate): void {
  open(w, c);
  w.clock.nowMs += 1000;
  assert.equal(w.breakers.stateOf(c.identity), 'half_open');
}

function codeOf(served: Served): string {
  assert.ok(served.err instanceof SwitchyardError, `expected a SwitchyardError, got ${String(served.err)}`);
  return served.err.code;
}

async function booked(w: World): Promise<{ reservedMicroUsd: number; spentMicroUsd: number; tokensThisMinute: number }> {
  const [team] = await w.svc.governance.status(scopesOf(policyOf(keyringFor(w.gen)), ACME), Date.now());
  assert.ok(team !== undefined);
  return {
    reservedMicroUsd: team.spendThisMonthMicroUsd.reservedMicroUsd,
    spentMicroUsd: team.spendThisMonthMicroUsd.used,
    tokensThisMinute: team.tokensThisMinute.used,
  };
}

/** Turns of the event loop, for "nothing else happened meanwhile". */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

const COMMIT: Step = { kind: 'committed', relayed: { usage: { inputTokens: 100, outputTokens: 50 } } };

describe('serveChain: the first candidate commits', { timeout: 30_000 }, () => {
  it('its response ends the request: no failure, x.candidate is it, the usage from its end is billed, done(null) once', async () => {
    const w = world();
    const r = request(w, always(COMMIT), { reserve: true });
    assert.ok((await booked(w)).reservedMicroUsd > 0, 'the pre-check reserved the worst case');
    const served = await serve(r.chain);
    assert.equal(served.err, null);
    assert.equal(served.doneCalls, 1);
    assert.deepEqual(r.upstream.providers, ['p0']);
    assert.deepEqual(r.x.failures, []);
    assert.equal(r.x.candidate, p0);
    assert.equal(r.x.outcome, 'complete');
    assert.deepEqual(r.x.usage, { inputTokens: 100, outputTokens: 50 });
    assert.equal(r.x.headersAt, r.upstream.calls[0]?.committed?.headersAt);
    assert.equal(typeof r.x.firstByteAt, 'number');
    // 100 input tokens at $1/Mtok and 50 output at $2/Mtok: 200 micro-USD, booked once.
    assert.equal(r.x.costMicroUsd, 200);
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 200, tokensThisMinute: 150 });
    assert.equal(w.breakers.view(p0.identity)?.consecutiveFailures, 0);
  });

  it('onCommit hears the committed response and its candidate before the body ends, and usage given to the chain is billed instead of the response’s', async () => {
    const w = world();
    const seen: string[] = [];
    const r = request(w, always(COMMIT), {
      usage: { inputTokens: 0, outputTokens: 0 },
      onCommit: (committed, c) => seen.push(`${committed.status} ${c.stableId} finished=${r.x.usage !== null}`),
    });
    const served = await serve(r.chain);
    assert.equal(served.err, null);
    assert.deepEqual(seen, ['200 p0/up-m finished=false']);
    assert.deepEqual(r.x.usage, { inputTokens: 0, outputTokens: 0 });
    assert.equal(r.x.costMicroUsd, 0);
  });
});

describe('serveChain: failover before commit', { timeout: 30_000 }, () => {
  it('failures move on in order, each recorded with its provider, candidate, reason and detail, and counted as a fallback', async () => {
    const w = world();
    const script = (_a: AttemptRequest, n: number): Step =>
      n === 0
        ? { kind: 'failed', reason: 'status_5xx', detail: 'upstream 503', timing: 'late' }
        : n === 1
          ? { kind: 'failed', reason: 'timeout', detail: 'no headers within 5000 ms', timing: 'early' }
          : COMMIT;
    const r = request(w, script);
    const served = await serve(r.chain);
    assert.equal(served.err, null);
    assert.deepEqual(r.upstream.providers, ['p0', 'p1', 'p2']);
    assert.deepEqual(r.x.failures, [
      { provider: 'p0', candidate: 'p0/up-m', reason: 'status_5xx', detail: 'upstream 503' },
      { provider: 'p1', candidate: 'p1/up-m', reason: 'timeout', detail: 'no headers within 5000 ms' },
    ]);
    assert.equal(r.x.candidate, p2);
    const fallbacks = (await w.svc.metrics.fallbacks.get()).values.map((v) => [v.labels.provider, v.labels.reason, v.value]);
    assert.deepEqual(fallbacks, [
      ['p0', 'status_5xx', 1],
      ['p1', 'timeout', 1],
    ]);
  });

  const exhausted: ReadonlyArray<{
    readonly name: string;
    readonly reasons: readonly Step[];
    readonly code: string;
    readonly status: number;
  }> = [
    {
      name: 'a mix of failures is upstream_error (502)',
      reasons: [
        { kind: 'failed', reason: 'status_5xx' },
        { kind: 'failed', reason: 'timeout', timing: 'early' },
        { kind: 'failed', reason: 'status_429' },
        { kind: 'failed', reason: 'connect_error', timing: 'early' },
      ],
      code: 'upstream_error',
      status: 502,
    },
    {
      name: 'all timed out is upstream_timeout (504)',
      reasons: [{ kind: 'failed', reason: 'timeout' }],
      code: 'upstream_timeout',
      status: 504,
    },
    {
      name: 'all 429s is upstream_rate_limited (429)',
      reasons: [{ kind: 'failed', reason: 'status_429', timing: 'early' }],
      code: 'upstream_rate_limited',
      status: 429,
    },
    { name: 'all 5xx is upstream_error (502)', reasons: [{ kind: 'failed', reason: 'status_5xx' }], code: 'upstream_error', status: 502 },
  ];
  for (const t of exhausted) {
    it(`an exhausted chain ends with one error: ${t.name}, naming every provider`, async () => {
      const w = world();
      const r = request(w, (_a, n) => t.reasons[n % t.reasons.length] as Step, { reserve: true });
      const served = await serve(r.chain);
      assert.equal(codeOf(served), t.code);
      assert.equal((served.err as SwitchyardError).status, t.status);
      assert.equal(served.doneCalls, 1);
      assert.deepEqual(r.upstream.providers, ['p0', 'p1', 'p2', 'p3']);
      assert.equal(r.x.failures.length, 4);
      assert.match((served.err as Error).message, /^all 4 candidate\(s\) for model "m" failed \(p0: .*; p1: .*; p2: .*; p3: .*\)$/);
      assert.equal(r.x.candidate, null);
      assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0, tokensThisMinute: 0 }, 'nothing was served: released');
    });
  }

  it('candidates whose credential cannot be read fail over without an upstream call; a chain of them ends credential_unavailable (503)', async () => {
    const overlay = await overlayWithoutCredentials();
    const w = world(overlay);
    const r = request(w, always(COMMIT));
    const served = await serve(r.chain);
    assert.equal(codeOf(served), 'credential_unavailable');
    assert.equal((served.err as SwitchyardError).status, 503);
    assert.equal(r.upstream.calls.length, 0, 'nothing was sent');
    const chain = chainOf(overlay, 'm');
    assert.deepEqual(
      r.x.failures,
      chain.map((c) => ({
        provider: c.provider.name,
        candidate: c.stableId,
        reason: 'credential_unavailable',
        detail: c.credentialProblem,
      })),
    );
    for (const c of chain)
      assert.equal(w.breakers.view(c.identity)?.consecutiveFailures, 0, 'a missing secret says nothing of the provider');
  });

  it('a chain with no candidate at all ends upstream_unavailable without calling anyone', async () => {
    const w = world();
    const r = request(w, always(COMMIT), { candidates: [] });
    assert.equal(codeOf(await serve(r.chain)), 'upstream_unavailable');
    assert.equal(r.upstream.calls.length, 0);
  });
});

describe('serveChain: results reported early (as soon as the attempt returned)', { timeout: 60_000 }, () => {
  const long = chainOf(gen, 'long');
  assert.equal(long.length, LONG_CHAIN);

  it(`a chain of ${LONG_CHAIN} candidates all failing at once completes without deepening the stack, each result after its attempt returned`, async () => {
    // A threshold no chain reaches: every candidate of the one provider is tried.
    const w = world(gen, { failureThreshold: 1_000_000, openBaseMs: 1000, openMaxMs: 30_000 });
    const r = request(w, always({ kind: 'failed', reason: 'connect_error', timing: 'early' }), { model: 'long' });
    const served = await serve(r.chain);
    assert.equal(codeOf(served), 'upstream_error');
    assert.equal(r.upstream.calls.length, LONG_CHAIN);
    assert.equal(r.x.failures.length, LONG_CHAIN);
    assert.equal(r.watched.results, LONG_CHAIN);
    assert.equal(r.watched.beforeReturn, 0, 'a result came while an attempt function was still on the stack');
  });

  it(`a chain of ${LONG_CHAIN} candidates all skipped by an open breaker is then tried whole, each skip and failure after its attempt returned`, async () => {
    const w = world();
    open(w, long[0] as GenerationCandidate);
    const r = request(w, always({ kind: 'failed', reason: 'status_5xx', timing: 'early' }), { model: 'long' });
    const served = await serve(r.chain);
    assert.equal(codeOf(served), 'upstream_error');
    assert.equal(r.watched.results, 2 * LONG_CHAIN, 'every candidate skipped once, then tried once');
    assert.equal(r.watched.beforeReturn, 0, 'a result came while an attempt function was still on the stack');
    assert.equal(r.upstream.calls.length, LONG_CHAIN);
    assert.ok(
      r.upstream.calls.every((c) => c.a.pass === 1),
      'every upstream call was on the second pass',
    );
    assert.deepEqual(
      r.upstream.calls.slice(0, 3).map((c) => c.candidate.stableId),
      long.slice(0, 3).map((c) => c.stableId),
    );
  });
});

describe('serveChain: results reported late', { timeout: 30_000 }, () => {
  it('results a turn of the event loop later are taken in order, one attempt at a time', async () => {
    const w = world();
    const r = request(w, (_a, n) => (n < 2 ? { kind: 'failed', reason: 'status_5xx', timing: 'late' } : { ...COMMIT, timing: 'late' }));
    const served = await serve(r.chain);
    assert.equal(served.err, null);
    assert.deepEqual(r.upstream.log, ['start p0', 'report p0 failed', 'start p1', 'report p1 failed', 'start p2', 'report p2 committed']);
    assert.equal(r.upstream.maxOpen, 1);
  });

  it('no second attempt starts while the first has not reported, however long it takes', async () => {
    const w = world();
    const r = request(w, (_a, n) => (n === 0 ? { kind: 'held' } : COMMIT));
    const served = serve(r.chain);
    await turns(20);
    assert.deepEqual(r.upstream.log, ['start p0']);
    r.upstream.calls[0]?.report({ kind: 'failed', reason: 'timeout', detail: 'no headers' });
    assert.equal((await served).err, null);
    assert.deepEqual(r.upstream.providers, ['p0', 'p1']);
    assert.equal(r.upstream.maxOpen, 1);
  });
});

describe('serveChain: breakers', { timeout: 30_000 }, () => {
  it('an open breaker skips its candidate on the first pass; a skip is not a failure', async () => {
    const w = world();
    open(w, p0);
    const r = request(w, always(COMMIT));
    assert.equal((await serve(r.chain)).err, null);
    assert.deepEqual(r.upstream.providers, ['p1']);
    assert.equal(r.upstream.calls[0]?.a.pass, 0);
    assert.deepEqual(r.x.failures, []);
    assert.equal(r.x.candidate, p1);
    assert.equal(w.breakers.stateOf(p0.identity), 'open');
  });

  it('when every breaker is open the chain is tried anyway, in order, on the second pass', async () => {
    const w = world();
    open(w, p0, p1, p2, p3);
    const r = request(w, (_a, n) => (n === 0 ? { kind: 'failed', reason: 'status_5xx', timing: 'early' } : COMMIT));
    assert.equal((await serve(r.chain)).err, null);
    assert.deepEqual(r.upstream.providers, ['p0', 'p1']);
    assert.deepEqual(
      r.upstream.calls.map((c) => c.a.pass),
      [1, 1],
    );
    assert.equal(r.x.candidate, p1);
    assert.equal(w.breakers.stateOf(p1.identity), 'closed', 'the success closed it');
    assert.equal(w.transitions.at(-1)?.reason, 'request_succeeded');
  });

  it('the second pass is only for a chain whose every candidate was skipped: once one was tried and failed, the open ones stay skipped', async () => {
    const w = world();
    open(w, p0, p1);
    const r = request(w, always({ kind: 'failed', reason: 'status_5xx' }));
    assert.equal(codeOf(await serve(r.chain)), 'upstream_error');
    assert.deepEqual(r.upstream.providers, ['p2', 'p3']);
  });

  it('a half-open breaker lets exactly one probe through: a second request meanwhile skips it, and the probe’s success closes it', async () => {
    const w = world();
    halfOpen(w, p0);
    const first = request(w, (_a, n) => (n === 0 ? { kind: 'held' } : COMMIT));
    const firstServed = serve(first.chain);
    await turns(2);
    assert.deepEqual(first.upstream.providers, ['p0'], 'the first request probes p0');

    const second = request(w, always(COMMIT));
    assert.equal((await serve(second.chain)).err, null);
    assert.deepEqual(second.upstream.providers, ['p1'], 'the probe is taken: p0 is skipped');

    const probe = first.upstream.calls[0];
    assert.ok(probe !== undefined);
    const committed = new CommittedDouble(200);
    probe.report(committed);
    committed.finish();
    assert.equal((await firstServed).err, null);
    assert.equal(w.breakers.stateOf(p0.identity), 'closed');
    assert.equal(w.transitions.at(-1)?.reason, 'probe_succeeded');
  });

  it('a probe whose client left is released: the next request probes the same provider', async () => {
    const w = world();
    halfOpen(w, p0);
    const left = request(w, always({ kind: 'aborted' }));
    assert.equal((await serve(left.chain)).err, null);
    assert.deepEqual(left.upstream.providers, ['p0']);
    assert.equal(w.breakers.stateOf(p0.identity), 'half_open', 'a client leaving is no verdict on the provider');

    const next = request(w, always(COMMIT));
    assert.equal((await serve(next.chain)).err, null);
    assert.deepEqual(next.upstream.providers, ['p0'], 'p0 was probed again, not skipped');
    assert.equal(next.upstream.calls[0]?.a.pass, 0);
    assert.equal(w.breakers.stateOf(p0.identity), 'closed');
  });

  it('a probe whose request cannot be sent (the attempt throws before sending) is released, and the chain ends with that refusal', async () => {
    const w = world();
    halfOpen(w, p0);
    const refusal = new SwitchyardError('invalid_request', 'tools cannot be written for this provider (field tools)', 'tools');
    const refused = request(w, always({ kind: 'throw', error: refusal }), { reserve: true });
    const served = await serve(refused.chain);
    assert.equal(served.err, refusal);
    assert.equal(served.doneCalls, 1);
    assert.deepEqual(refused.upstream.log, ['refuse p0'], 'no other candidate is tried for a request that is wrong');
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0, tokensThisMinute: 0 });

    const next = request(w, always(COMMIT));
    assert.equal((await serve(next.chain)).err, null);
    assert.deepEqual(next.upstream.providers, ['p0'], 'p0 was probed again, not skipped');
  });

  it('a committed stream later cut records a breaker failure (stream_cut), and is billed on what was seen', async () => {
    const w = world();
    const r = request(w, always({ kind: 'committed', relayed: { outcome: 'partial', usage: null, events: 9 } }), { stream: true });
    assert.equal((await serve(r.chain)).err, null);
    assert.equal(r.x.outcome, 'partial');
    assert.equal(r.x.candidate, p0);
    assert.deepEqual(w.transitions.at(-1), {
      identity: p0.identity,
      from: 'closed',
      to: 'open',
      reason: 'failure_threshold',
      cause: 'stream_cut',
      consecutiveFailures: 1,
      openForMs: 1000,
    });
    assert.equal(r.x.usageEstimated, true);
    assert.deepEqual(r.x.usage, { inputTokens: Math.ceil(r.chain.request.raw.length / 4), outputTokens: 8 });
  });

  it('a committed response that ends complete leaves the breaker as the commit left it', async () => {
    const w = world();
    const r = request(w, always(COMMIT), { stream: true });
    assert.equal((await serve(r.chain)).err, null);
    assert.equal(w.breakers.view(p0.identity)?.consecutiveFailures, 0);
    assert.deepEqual(w.transitions, []);
  });
});

describe('serveChain: a client that leaves', { timeout: 30_000 }, () => {
  it('an aborted attempt ends the chain without trying the next candidate, the outcome is aborted, and the reservation is given back', async () => {
    const w = world();
    const r = request(w, always({ kind: 'aborted' }), { reserve: true });
    assert.ok((await booked(w)).reservedMicroUsd > 0);
    const served = await serve(r.chain);
    assert.equal(served.err, null);
    assert.equal(served.doneCalls, 1);
    assert.deepEqual(r.upstream.providers, ['p0']);
    assert.equal(r.x.outcome, 'aborted');
    assert.equal(r.x.status, 499);
    assert.equal(r.x.costMicroUsd, null, 'nothing was billed');
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0, tokensThisMinute: 0 });
    assert.equal(w.breakers.view(p0.identity)?.consecutiveFailures, 0, 'the provider did nothing wrong');
  });

  it('a client that leaves after a failover keeps the failure on record and still gives the reservation back', async () => {
    const w = world();
    const r = request(w, (_a, n) => (n === 0 ? { kind: 'failed', reason: 'status_5xx', timing: 'early' } : { kind: 'aborted' }), {
      reserve: true,
    });
    assert.equal((await serve(r.chain)).err, null);
    assert.deepEqual(r.upstream.providers, ['p0', 'p1']);
    assert.deepEqual(
      r.x.failures.map((f) => f.provider),
      ['p0'],
    );
    assert.equal(r.x.outcome, 'aborted');
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0, tokensThisMinute: 0 });
  });
});

describe('serveChain: the drain and the deadline', { timeout: 30_000 }, () => {
  it('the drain stopping the attempt in flight ends the request shutting_down, and no next attempt starts', async () => {
    const w = world();
    const r = request(w, (_a, n) => (n === 0 ? { kind: 'held' } : COMMIT), { reserve: true });
    const served = serve(r.chain);
    await turns(2);
    // Where the relay leaves its stop while it runs: the drain's interrupt ends the attempt.
    const call = r.upstream.calls[0];
    assert.ok(call !== undefined);
    r.x.running.stopAttempt = (why) => call.report({ kind: 'failed', reason: 'timeout', detail: `stopped: ${why}` });
    r.x.running.interrupt('the drain timed out');
    const done = await served;
    assert.equal(codeOf(done), 'shutting_down');
    assert.match((done.err as Error).message, /the drain timed out/);
    assert.deepEqual(r.upstream.providers, ['p0']);
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0, tokensThisMinute: 0 });
  });

  it('a request stopped before its chain begins tries no candidate', async () => {
    const w = world();
    const r = request(w, always(COMMIT));
    r.x.running.interrupt('draining');
    assert.equal(codeOf(await serve(r.chain)), 'shutting_down');
    assert.equal(r.upstream.calls.length, 0);
  });

  it('stopped while its last candidate fails, the request ends shutting_down rather than with the chain’s failure', async () => {
    const w = world();
    const last = [p0];
    const r = request(w, always({ kind: 'held' }), { candidates: last });
    const served = serve(r.chain);
    await turns(2);
    r.x.running.interrupt('draining');
    r.upstream.calls[0]?.report({ kind: 'failed', reason: 'status_5xx', detail: 'upstream 502' });
    assert.equal(codeOf(await served), 'shutting_down');
  });

  it('a deadline already passed tries no candidate: upstream_timeout', async () => {
    const w = world();
    const r = request(w, always(COMMIT), { deadlineAt: performance.now() - 5 });
    const served = await serve(r.chain);
    assert.equal(codeOf(served), 'upstream_timeout');
    assert.match((served.err as Error).message, /deadline_ms for model "m" passed after 0 of 4 candidate\(s\)$/);
    assert.equal(r.upstream.calls.length, 0);
  });

  it('a deadline that passes during an attempt ends the chain after it: upstream_timeout naming what was tried', async () => {
    const w = world();
    const deadlineAt = performance.now() + 50;
    const r = request(w, (_a, n) => (n === 0 ? { kind: 'held' } : COMMIT), { deadlineAt, reserve: true });
    const served = serve(r.chain);
    // The upstream answers only once the deadline has passed, whatever the timers do.
    while (performance.now() < deadlineAt) await new Promise((resolve) => setTimeout(resolve, 5));
    r.upstream.calls[0]?.report({ kind: 'failed', reason: 'status_5xx', detail: 'upstream 500' });
    const done = await served;
    assert.equal(codeOf(done), 'upstream_timeout');
    assert.match((done.err as Error).message, /passed after 1 of 4 candidate\(s\) \(p0: upstream 500\)$/);
    assert.deepEqual(r.upstream.providers, ['p0']);
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0, tokensThisMinute: 0 });
  });
});
