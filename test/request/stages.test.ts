import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { SwitchyardError } from '../../src/errors.js';
import { type Principal, scopesOf } from '../../src/governance/index.js';
import type { GenerationCandidate } from '../../src/live/index.js';
import type { Operation } from '../../src/providers/index.js';
import { type AttemptRequest, composeAttempt, withBreaker, withCredentialCheck } from '../../src/request/attempt.js';
import { cacheStage } from '../../src/request/cache/stage.js';
import { guardInput } from '../../src/request/guardrails/input-stage.js';
import { operations } from '../../src/request/operations.js';
import { policyOf } from '../../src/request/policy.js';
import { Unserved } from '../../src/request/serve-chain.js';
import { preCheckAndChain } from '../../src/request/serve-model.js';
import { composeStages, type RoutedRequest, type Serve, type Stage } from '../../src/request/stage.js';
import { stages } from '../../src/request/stages.js';
import { estimateUnserved } from '../../src/request/token-count.js';
import type { BreakerRegistry, BreakerTransition } from '../../src/resilience/index.js';
import {
  always,
  breakersFor,
  chainOf,
  exchangeFor,
  keyringFor,
  modelRequest,
  pools,
  type ResponseDouble,
  ScriptedUpstream,
  type Step,
  servicesFor,
  staticGeneration,
} from './chain-fixture.js';

// The request stages (stage.ts, stages.ts): the order they run in, a stage that answers
// (nothing after it runs: no pre-check, no reservation, no upstream call), a stage that
// observes or replaces what the chain gives back, and the callback discipline they keep.
// Run over the real pre-check and chain (serve-model.ts, serve-chain.ts), with the real
// services and governance store, against the chain tests' scripted upstream.

const gen = staticGeneration();
const [p0, p1, p2, p3] = chainOf(gen, 'm') as [GenerationCandidate, GenerationCandidate, GenerationCandidate, GenerationCandidate];
const ACME: Principal = { keyId: 'k1', team: 'acme' };

after(() => pools.destroyAll());

interface World {
  readonly breakers: BreakerRegistry;
  readonly svc: ReturnType<typeof servicesFor>;
  readonly transitions: BreakerTransition[];
}

function world(): World {
  const { breakers } = breakersFor(gen);
  const transitions: BreakerTransition[] = [];
  breakers.observe((t) => transitions.push(t));
  return { breakers, svc: servicesFor(gen, breakers), transitions };
}

interface Routed {
  readonly r: RoutedRequest;
  readonly res: ResponseDouble;
  readonly upstream: ScriptedUpstream;
}

/** One request as routing hands it to the stages: route `m`'s candidates, the attempt its operation is tried with. */
function routed(
  w: World,
  script: (a: AttemptRequest, n: number) => Step,
  o: { operation?: Operation; principal?: Principal; candidates?: readonly GenerationCandidate[] } = {},
): Routed {
  const operation = o.operation ?? 'chat';
  const principal = o.principal ?? { keyId: null, team: null };
  const upstream = new ScriptedUpstream(script);
  const wraps = operations[operation].guarded ? [withCredentialCheck, withBreaker(w.breakers)] : [withCredentialCheck];
  const { x, res } = exchangeFor(gen, principal, { operation });
  const request = modelRequest(gen, 'm', { operation, protocol: operation === 'count_tokens' ? 'anthropic' : 'openai', principal });
  x.asked(request);
  const candidates = o.candidates ?? chainOf(gen, 'm');
  const unserved =
    candidates.length === 0
      ? new SwitchyardError('invalid_request', 'model "m" is served by no provider of this operation', 'model')
      : null;
  const attempt = composeAttempt(upstream.attempt, ...wraps);
  return { r: { x, request, svc: w.svc, candidates, unserved, attempt, onCommit: null }, res, upstream };
}

interface Outcome {
  readonly err: unknown;
  readonly doneCalls: number;
  /** Whether `done` ran before the serve function returned. */
  readonly beforeReturn: boolean;
}

/** Runs `serve` to its done, then a few turns more to see a second done, if any. */
function run(serve: Serve, r: RoutedRequest): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    let doneCalls = 0;
    let returned = false;
    let beforeReturn = false;
    try {
      serve(r, (err) => {
        doneCalls += 1;
        if (!returned) beforeReturn = true;
        if (doneCalls > 1) return;
        setImmediate(() => setTimeout(() => setImmediate(() => resolve({ err, doneCalls, beforeReturn })), 0));
      });
    } catch (err) {
      reject(err);
    }
    returned = true;
  });
}

async function booked(w: World): Promise<{ reservedMicroUsd: number; spentMicroUsd: number }> {
  const [team] = await w.svc.governance.status(scopesOf(policyOf(keyringFor(gen)), ACME), Date.now());
  assert.ok(team !== undefined);
  return { reservedMicroUsd: team.spendThisMonthMicroUsd.reservedMicroUsd, spentMicroUsd: team.spendThisMonthMicroUsd.used };
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

const COMMIT: Step = { kind: 'committed', relayed: { usage: { inputTokens: 100, outputTokens: 50 } } };

/** A stage that logs its name on the way in and on the way out, and passes the request on. */
const logged =
  (log: string[], name: string): Stage =>
  (next) =>
  (r, done) => {
    log.push(`${name} in`);
    next(r, (err) => {
      log.push(`${name} out`);
      done(err);
    });
  };

/** A stage that answers every request itself, at once. */
const answering: Stage = () => (r, done) => {
  r.x.res.writeHead(200, { 'content-type': 'application/json' });
  r.x.res.end('{"cached":true}');
  done(null);
};

describe('request stages: the contract', { timeout: 30_000 }, () => {
  it('stages run in table order around the pre-check and the chain, the first outermost: in first, out last', async () => {
    const w = world();
    const log: string[] = [];
    const core: Serve = (r, done) => {
      log.push('chain');
      preCheckAndChain(r, done);
    };
    const serve = composeStages(core, [logged(log, 'a'), logged(log, 'b'), logged(log, 'c')]);
    const { r, upstream } = routed(w, always(COMMIT));
    const out = await run(serve, r);
    assert.equal(out.err, null);
    assert.equal(out.doneCalls, 1);
    assert.deepEqual(log, ['a in', 'b in', 'c in', 'chain', 'c out', 'b out', 'a out']);
    assert.deepEqual(upstream.providers, ['p0']);
  });

  it('with no stages the pipeline is the pre-check and the chain itself', () => {
    assert.equal(composeStages(preCheckAndChain, []), preCheckAndChain);
  });

  it('a stage that answers short-circuits what follows it: no later stage, no pre-check reservation, no upstream call', async () => {
    const w = world();
    const log: string[] = [];
    const serve = composeStages(preCheckAndChain, [logged(log, 'a'), answering, logged(log, 'b')]);
    const { r, res, upstream } = routed(w, always(COMMIT), { principal: ACME });
    const out = await run(serve, r);
    assert.equal(out.err, null);
    assert.equal(out.doneCalls, 1);
    assert.deepEqual(log, ['a in', 'a out']);
    assert.equal(upstream.calls.length, 0);
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, '{"cached":true}');
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0 });
    assert.equal(r.x.usage, null, 'nothing was metered');
  });

  it('the same request through a stage that passes it on is pre-checked: the reservation is held while the upstream answers', async () => {
    const w = world();
    const log: string[] = [];
    const serve = composeStages(preCheckAndChain, [logged(log, 'a')]);
    const { r, upstream } = routed(w, always({ kind: 'held' }), { principal: ACME });
    const out = run(serve, r);
    await turns(2);
    assert.ok((await booked(w)).reservedMicroUsd > 0, 'the pre-check reserved the worst case');
    const call = upstream.calls[0];
    assert.ok(call !== undefined);
    call.report({ kind: 'aborted' });
    assert.equal((await out).err, null);
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0 });
  });

  it('a stage observes what comes back: the committed answer as done(null), after the relayed response ended and was billed', async () => {
    const w = world();
    const seen: Array<{ err: unknown; outcome: string | null; spent: number }> = [];
    const observing: Stage = (next) => (r, done) =>
      next(r, (err) => {
        seen.push({ err, outcome: r.x.outcome, spent: r.x.usage?.outputTokens ?? -1 });
        done(err);
      });
    const serve = composeStages(preCheckAndChain, [observing]);
    const { r } = routed(w, always(COMMIT), { principal: ACME });
    const out = await run(serve, r);
    assert.equal(out.err, null);
    assert.deepEqual(seen, [{ err: null, outcome: 'complete', spent: 50 }]);
    assert.ok((await booked(w)).spentMicroUsd > 0, 'settled before the stage heard of it');
  });

  it('a stage observes a chain that ran out of candidates as Unserved (a SwitchyardError), and may answer in its place', async () => {
    const w = world();
    let observed: unknown = null;
    const fallback: Stage = (next) => (r, done) =>
      next(r, (err) => {
        observed = err;
        if (!(err instanceof Unserved)) return done(err);
        r.x.res.writeHead(200);
        r.x.res.end('fallback');
        done(null);
      });
    const serve = composeStages(preCheckAndChain, [fallback]);
    const { r, res, upstream } = routed(w, always({ kind: 'failed', reason: 'status_5xx' }));
    const out = await run(serve, r);
    assert.equal(out.err, null);
    assert.ok(observed instanceof Unserved);
    assert.ok(observed instanceof SwitchyardError);
    assert.equal(observed.code, 'upstream_error');
    assert.deepEqual(upstream.providers, ['p0', 'p1', 'p2', 'p3']);
    assert.equal(res.body, 'fallback');
    assert.equal(r.x.failures.length, 4, 'the failures stay on the record');
  });

  it('without a stage that answers, Unserved reaches the client as the chain’s error', async () => {
    const w = world();
    const serve = composeStages(preCheckAndChain, [logged([], 'a')]);
    const { r } = routed(w, always({ kind: 'failed', reason: 'timeout' }));
    const out = await run(serve, r);
    assert.ok(out.err instanceof SwitchyardError);
    assert.equal(out.err.code, 'upstream_timeout');
  });

  it('a stage’s callback never fires before it returns, even when it answers at once', async () => {
    const w = world();
    const { r } = routed(w, always(COMMIT));
    const out = await run(composeStages(preCheckAndChain, [answering]), r);
    assert.equal(out.err, null);
    assert.equal(out.doneCalls, 1);
    assert.equal(out.beforeReturn, false);
  });

  it('a refusal thrown by what follows a stage (no candidate serves the operation) reaches the stage’s callback, after next returned', async () => {
    const w = world();
    let nextReturned = false;
    let heardBeforeReturn: boolean | null = null;
    let heard: unknown = null;
    const watching: Stage = (next) => (r, done) => {
      next(r, (err) => {
        heardBeforeReturn = !nextReturned;
        heard = err;
        done(err);
      });
      nextReturned = true;
    };
    const { r, upstream } = routed(w, always(COMMIT), { candidates: [] });
    const out = await run(composeStages(preCheckAndChain, [watching]), r);
    assert.equal(heardBeforeReturn, false);
    assert.equal(heard, r.unserved);
    assert.equal(out.err, r.unserved);
    assert.equal(out.beforeReturn, false);
    assert.equal(upstream.calls.length, 0);
  });

  it('with no stage, a route whose candidates serve no such operation is refused by a throw before any pre-check', async () => {
    const w = world();
    const { r } = routed(w, always(COMMIT), { candidates: [], principal: ACME });
    assert.throws(
      () => preCheckAndChain(r, () => assert.fail('no callback after a throw')),
      (err) => err === r.unserved,
    );
    assert.deepEqual(await booked(w), { reservedMicroUsd: 0, spentMicroUsd: 0 });
  });
});

describe('request stages: count_tokens', { timeout: 30_000 }, () => {
  const spec = operations.count_tokens;
  const serve = composeStages(preCheckAndChain, stages.count_tokens);

  it('is free, outside the breaker, and has its own answer for a route nobody served (its estimate stage)', () => {
    assert.equal(spec.metered, false);
    assert.equal(spec.guarded, false);
    assert.deepEqual(stages.count_tokens, [estimateUnserved]);
    // The other endpoints run the input guardrails, then the response cache (a route without either passes straight through).
    for (const op of ['chat', 'embeddings', 'completions', 'responses'] as const) assert.deepEqual(stages[op], [guardInput, cacheStage]);
  });

  it('when every candidate fails, the operation’s own estimate is written and done(null); no breaker hears of it', async () => {
    const w = world();
    const { r, res, upstream } = routed(w, always({ kind: 'failed', reason: 'status_5xx' }), { operation: 'count_tokens' });
    const served = await run(serve, r);
    assert.equal(served.err, null);
    assert.equal(served.doneCalls, 1);
    assert.deepEqual(upstream.providers, ['p0', 'p1', 'p2', 'p3']);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers.get('x-switchyard-estimated'), 'true');
    // "hello there" in o200k: two tokens (the message's text; its framing is not counted).
    assert.deepEqual(JSON.parse(res.body), { input_tokens: 2 });
    for (const c of [p0, p1, p2, p3]) assert.equal(w.breakers.view(c.identity)?.consecutiveFailures, 0);
    assert.deepEqual(w.transitions, []);
  });

  it('when every candidate fails and the client is gone, nothing is written: the chain’s error instead', async () => {
    const w = world();
    const { r, res } = routed(w, always({ kind: 'failed', reason: 'status_5xx' }), { operation: 'count_tokens' });
    res.destroyed = true;
    const served = await run(serve, r);
    assert.ok(served.err instanceof SwitchyardError);
    assert.equal(served.err.code, 'upstream_error');
    assert.equal(res.body, '');
  });

  it('a route with no candidate that counts is estimated at once: the chain is not tried', async () => {
    const w = world();
    const { r, res, upstream } = routed(w, always(COMMIT), { operation: 'count_tokens', candidates: [] });
    const served = await run(serve, r);
    assert.equal(served.err, null);
    assert.equal(served.beforeReturn, false);
    assert.equal(upstream.calls.length, 0);
    assert.equal(res.headers.get('x-switchyard-estimated'), 'true');
    assert.deepEqual(JSON.parse(res.body), { input_tokens: 2 });
  });

  it('the chain’s other endings pass through untouched: a committed count is the provider’s', async () => {
    const w = world();
    const { r, res, upstream } = routed(w, always(COMMIT), { operation: 'count_tokens' });
    const served = await run(serve, r);
    assert.equal(served.err, null);
    assert.deepEqual(upstream.providers, ['p0']);
    assert.equal(res.headers.get('x-switchyard-estimated'), undefined);
  });
});
