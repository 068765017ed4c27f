import type { Socket } from 'node:net';
import { requestStarted } from '../audit/index.js';
import type { MaybePromise, Principal, Reservation } from '../governance/index.js';
import * as governance from '../governance/index.js';
import type { GenerationCandidate } from '../live/index.js';
import type { Exchange } from './exchange.js';
import { policyOf } from './policy.js';
import type { Services } from './services.js';

// The governance steps of DESIGN.md's request path, in the order the chat handler calls
// them: authenticate (from the headers, before any body is read), pre-check (after
// routing, before any upstream call), then settle or release (after the response, exactly
// once per reservation). Each reads the generation the request captured, never the
// holder again, so a request is admitted, limited and billed under one generation.

export type { Principal };

/**
 * The caller, from the request's headers alone, or the refusal (401 `unauthorized`,
 * `key_expired`). A generation without keys is an open gateway: every caller is anonymous.
 */
export function authenticate(x: Exchange, svc: Services): Principal {
  const gen = x.gen;
  if (gen === null) throw new Error('authenticate before the generation was captured');
  const keys = policyOf(gen).keys;
  const auth = governance.authenticate(keys, x.req.headers, Date.now(), keys.open ? undefined : keyMemoOf(x.req.socket));
  if (!auth.ok) {
    auditStarted(x, svc, auth.refusal.code);
    throw governance.refusalError(auth.refusal);
  }
  x.principal = auth.principal;
  return auth.principal;
}

/** Each connection's last resolved key (governance.KeyMemo): a keep-alive client hashes its key once. */
const keyMemos = new WeakMap<Socket, governance.KeyMemo>();

function keyMemoOf(socket: Socket): governance.KeyMemo {
  let memo = keyMemos.get(socket);
  if (memo === undefined) {
    memo = new governance.KeyMemo();
    keyMemos.set(socket, memo);
  }
  return memo;
}

/** The audit record of a request's admission: after the pre-check, or at the refusal (with its reason). */
function auditStarted(x: Exchange, svc: Services, refusedWith: string | null): void {
  if (svc.audit === null) return;
  svc.audit.append(
    requestStarted({
      requestId: x.requestId,
      keyId: x.principal?.keyId ?? null,
      team: x.principal?.team ?? null,
      model: x.model ?? null,
      generation: x.gen?.number ?? null,
      revision: x.gen?.overlay?.revision ?? null,
      decision: refusedWith === null ? 'admitted' : 'refused',
      reason: refusedWith,
    }),
  );
}

/** What the pre-check needs of the parsed request. */
export interface Asked {
  readonly model: string;
  readonly bodyBytes: number;
  readonly maxTokens: number | null;
}

/** No gateway limit applies (an open gateway): the upstream's own rate-limit headers pass. */
const NO_LIMIT_HEADERS: readonly string[] = Object.freeze([]);

/**
 * Admits the request against its team's then its key's limits before any upstream call,
 * reserving the worst-case cost at the dearest price among the chain's candidates, or
 * throws the refusal (403, 429, 402, 503) with `retry-after` and `x-ratelimit-*`. Returns
 * the chain to try: under `pricing.on_missing: block`, candidates without a price are
 * left out. The chain comes back at once when the store answered at once (the memory
 * store, or nothing to count); a promise of it only when the store is remote.
 */
export function preCheck(
  x: Exchange,
  svc: Services,
  asked: Asked,
  chain: readonly GenerationCandidate[],
): MaybePromise<readonly GenerationCandidate[]> {
  const gen = x.gen;
  const principal = x.principal;
  if (gen === null || principal === null) throw new Error('pre-check before authentication');
  const policy = policyOf(gen);
  if (principal.team === null && policy.onMissingPrice !== 'block') {
    // The open gateway's anonymous caller: nothing to count, reserve or refuse by price.
    admit(x, svc, null, NO_LIMIT_HEADERS);
    return chain;
  }
  const targets = chain.map((c) => ({ provider: c.provider.name, model: c.upstreamModel }));
  const demand = { model: asked.model, bodyBytes: asked.bodyBytes, maxTokens: asked.maxTokens, targets, pricing: gen.pricing };
  const admission = governance.preCheck(svc.governance, policy, principal, demand, Date.now());
  const admitted = (a: governance.Admission): readonly GenerationCandidate[] => {
    if (!a.ok) {
      auditStarted(x, svc, a.refusal.code);
      throw governance.refusalError(a.refusal);
    }
    const flat = governance.pushRateLimitHeaders(a.rateLimit, []);
    if (a.budgetWarnings.length > 0) {
      flat.push('x-switchyard-budget-warning', a.budgetWarnings.map((s) => `${s.kind}:${s.id}`).join(','));
      for (const s of a.budgetWarnings) if (s.kind === 'team') svc.metrics.budgetExceeded.inc({ team: s.id });
    }
    admit(x, svc, a.reservation, flat);
    if (policy.onMissingPrice !== 'block' || a.unpriced.length === 0) return chain;
    return chain.filter((c) => !a.unpriced.some((u) => u.provider === c.provider.name && u.model === c.upstreamModel));
  };
  return admission instanceof Promise ? admission.then(admitted) : admitted(admission);
}

function admit(x: Exchange, svc: Services, reservation: Reservation | null, limitHeaders: readonly string[]): void {
  x.reservation = reservation;
  x.admitted = true;
  x.limitHeaders = limitHeaders;
  auditStarted(x, svc, null);
}

/**
 * Bills what the response used at the pricing table of the generation that routed it
 * (integer micro-USD, rounded once) and trues up the caller's counters; or, when nothing
 * was served, gives the reservation back. Called exactly once per request. Returns a
 * promise only when the store's answer is one (a remote store).
 */
export function settle(x: Exchange, svc: Services): void | Promise<void> {
  const reservation: Reservation | null = x.reservation;
  x.reservation = null;
  const gen = x.gen;
  const c = x.candidate;
  const now = Date.now();
  if (gen === null || c === null || (x.outcome === 'aborted' && x.headersAt === null)) {
    return governance.release(svc.governance, reservation, now);
  }
  if (x.usage === null && x.stream && x.outcome !== 'complete') {
    // A stream cut midway, or left by its client, before its usage arrived: bill what was
    // seen (the input estimate, about one token per relayed event), not the worst case.
    x.usage = governance.seenUsage(x.bodyBytes, x.events);
    x.usageEstimated = true;
  }
  const settled = governance.settle(
    svc.governance,
    reservation,
    { provider: c.provider.name, model: c.upstreamModel },
    x.usage,
    gen.pricing,
    now,
  );
  if (settled instanceof Promise) return settled.then((s) => billed(x, svc, s));
  billed(x, svc, settled);
}

function billed(x: Exchange, svc: Services, settled: governance.Settlement): void {
  x.costMicroUsd = settled.costMicroUsd;
  x.pricingMissing = settled.pricingMissing;
  if (settled.pricingMissing) svc.metrics.pricingMissing.inc();
  const principal = x.principal;
  if (principal?.team != null && settled.costMicroUsd !== null && settled.costMicroUsd > 0) {
    svc.metrics.spendUsd.series(principal.team, principal.keyId ?? '').inc(settled.costMicroUsd / 1e6);
  }
}

export const COST_HEADER = 'x-switchyard-cost-usd';

/** `x-switchyard-cost-usd` for a response whose usage is known when its headers go out. */
export function costHeaders(x: Exchange, c: GenerationCandidate): (usage: governance.Usage | null) => Record<string, string> | null {
  return (usage) => {
    if (usage === null || x.gen === null) return null;
    const cost = governance.costMicroUsd(x.gen.pricing, c.provider.name, c.upstreamModel, usage);
    return cost === null ? null : { [COST_HEADER]: (cost / 1e6).toFixed(6) };
  };
}
