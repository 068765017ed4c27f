import type { Socket } from 'node:net';
import { requestStarted } from '../audit/index.js';
import { SwitchyardError } from '../errors.js';
import type { MaybePromise, Reservation } from '../governance/index.js';
import * as governance from '../governance/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import { credentialRequired, signedInCaller } from './caller-token.js';
import type { Caller, Exchange, ModelRequest } from './exchange.js';
import { operations } from './operations.js';
import { policyOf } from './policy.js';
import type { Services } from './services.js';

// The governance steps of the request path, in the order a model request takes them:
// capture the generation and the keyring, and authenticate (from the headers, before any
// body is read), pre-check (after routing, before any upstream call), then settle or release
// (after the response, exactly once per reservation). Each reads the pair the request
// captured, never the holders again, so a request is admitted, limited and billed under one
// generation and one keyring.

/**
 * The one place a model request captures its generation and keyring (one pair, read
 * together in one synchronous step, so no swap falls between them) and is authenticated:
 * the caller, from the request's headers alone (an API key, or the verdict on its JWT,
 * judged before the endpoint ran), or the refusal (401 `unauthorized`, `key_expired`; 403
 * for a token whose claims name no team; 503 while its issuer's keys are missing). A
 * keyring without keys and no `auth.jwt` is an open gateway: every caller is anonymous.
 * `resource` is the MCP resource a token may name as its audience (on /mcp only).
 */
export function admitCaller(x: Exchange, svc: Services, resource: string | null = null): Caller {
  const gen = svc.holder.current();
  const keyring = svc.keyring.current();
  x.captured(gen, keyring);
  const policy = policyOf(keyring);
  let principal: governance.Principal;
  try {
    principal = x.token !== null ? signedInCaller(svc, x.token, policy, resource) : keyCaller(x, svc, policy, resource);
  } catch (err) {
    auditStarted(x, svc, gen, err instanceof SwitchyardError ? err.code : 'unauthorized');
    throw err;
  }
  x.authenticated(principal);
  return { gen, keyring, principal };
}

/**
 * admitCaller for the JSON-RPC endpoints (/mcp, /a2a), whose answers are written in many
 * places: the topology that serves the call is stamped on the response once, here, as the
 * model path's attribution headers carry it. (Not on the model path: there the attribution
 * is one flat list written with the head, which a header set earlier would slow.)
 */
export function admitSideCaller(x: Exchange, svc: Services, resource: string | null = null): Caller {
  const caller = admitCaller(x, svc, resource);
  x.res.setHeader('x-switchyard-topology', caller.gen.digest);
  return caller;
}

/**
 * A caller by its API key (or none). With issuers configured, a gateway without keys is no
 * longer open: under `auth.jwt.mode: strict` every call needs a token or a key; under
 * `optional` a call with neither is judged as the keys alone would judge it.
 */
function keyCaller(x: Exchange, svc: Services, policy: governance.GovernancePolicy, resource: string | null): governance.Principal {
  const keys = policy.keys;
  const jwt = svc.auth.config;
  if (jwt !== null) {
    const presented = governance.presentedKey(x.req.headers);
    if (presented === null && (jwt.mode === 'strict' || !keys.open)) throw credentialRequired(resource, !keys.open);
    if (presented !== null && keys.open && jwt.mode === 'strict')
      throw new SwitchyardError(
        'unauthorized',
        'invalid credential: not a token from a trusted issuer, and the gateway has no API keys',
        null,
        {
          'www-authenticate': 'Bearer error="invalid_token"',
        },
      );
  }
  const auth = governance.authenticate(keys, x.req.headers, Date.now(), keys.open ? undefined : keyMemoOf(x.req.socket));
  if (!auth.ok) throw governance.refusalError(auth.refusal);
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
function auditStarted(x: Exchange, svc: Services, gen: Generation, refusedWith: string | null): void {
  if (svc.audit === null) return;
  svc.audit.append(
    requestStarted({
      requestId: x.requestId,
      keyId: x.principal?.keyId ?? null,
      team: x.principal?.team ?? null,
      model: x.model ?? null,
      generation: gen.number,
      keyring: x.keyring?.number ?? null,
      revision: gen.overlay?.revision ?? null,
      decision: refusedWith === null ? 'admitted' : 'refused',
      reason: refusedWith,
    }),
  );
}

/** What the pre-check needs of the parsed request beyond the request itself. */
export interface Asked {
  readonly bodyBytes: number;
  readonly maxTokens: number | null;
}

/** What the pre-check admitted: the chain to try, and what the request holds until it is settled. */
export interface Admitted {
  readonly candidates: readonly GenerationCandidate[];
  /** The reservation that settle or release takes, exactly once; null when nothing is counted. */
  readonly reservation: Reservation | null;
  /** `x-ratelimit-*` and the budget warning for the response, as names and values in turn; null = none. */
  readonly limitHeaders: readonly string[] | null;
  /** The output cap to send upstream (`governance.cap_output`), or null to send none. */
  readonly outputCap: number | null;
}

/** No gateway limit applies (an open gateway): the upstream's own rate-limit headers pass. */
const NO_LIMIT_HEADERS: readonly string[] = Object.freeze([]);

/**
 * Admits the request against its team's then its key's limits before any upstream call,
 * reserving the worst-case cost at the dearest price among the chain's candidates, or
 * throws the refusal (403, 429, 402, 503) with `retry-after` and `x-ratelimit-*`. Under
 * `pricing.on_missing: block`, candidates without a price are left out of the chain it
 * admits. The answer comes at once when the store answered at once (the memory store, or
 * nothing to count); a promise of it only when the store is remote.
 */
export function preCheck(
  x: Exchange,
  svc: Services,
  request: ModelRequest,
  asked: Asked,
  chain: readonly GenerationCandidate[],
): MaybePromise<Admitted> {
  const { gen, keyring, principal } = request;
  const policy = policyOf(keyring);
  if (principal.team === null && policy.onMissingPrice !== 'block') {
    // The open gateway's anonymous caller: nothing to count, reserve or refuse by price.
    return admit(x, svc, gen, { candidates: chain, reservation: null, limitHeaders: NO_LIMIT_HEADERS, outputCap: null });
  }
  const targets = chain.map(targetOf);
  const demand = { model: request.model, bodyBytes: asked.bodyBytes, maxTokens: asked.maxTokens, targets, pricing: gen.pricing };
  const admission = governance.preCheck(svc.governance, policy, principal, demand, governance.governanceNow());
  // No closure for the store that answers at once: this runs on every governed request.
  if (!(admission instanceof Promise)) return admittedBy(x, svc, gen, policy, chain, admission);
  return admission.then((a) => admittedBy(x, svc, gen, policy, chain, a));
}

/** A candidate as pricing names it, built once per candidate of a generation. */
function targetOf(c: GenerationCandidate): governance.PricedTarget {
  let t = targets.get(c);
  if (t === undefined) {
    t = { provider: c.provider.name, model: c.upstreamModel };
    targets.set(c, t);
  }
  return t;
}

const targets = new WeakMap<GenerationCandidate, governance.PricedTarget>();

/** The pre-check's answer as the chain takes it: the refusal thrown, or the chain, reservation, headers and cap. */
function admittedBy(
  x: Exchange,
  svc: Services,
  gen: Generation,
  policy: governance.GovernancePolicy,
  chain: readonly GenerationCandidate[],
  a: governance.Admission,
): Admitted {
  if (!a.ok) {
    auditStarted(x, svc, gen, a.refusal.code);
    throw governance.refusalError(a.refusal);
  }
  const flat = governance.pushRateLimitHeaders(a.rateLimit, []);
  if (a.budgetWarnings.length > 0) {
    flat.push('x-switchyard-budget-warning', a.budgetWarnings.map((s) => `${s.kind}:${s.id}`).join(','));
    for (const s of a.budgetWarnings) if (s.kind === 'team') svc.metrics.budgetExceeded.inc({ team: s.id });
  }
  const candidates =
    policy.onMissingPrice !== 'block' || a.unpriced.length === 0
      ? chain
      : chain.filter((c) => !a.unpriced.some((u) => u.provider === c.provider.name && u.model === c.upstreamModel));
  return admit(x, svc, gen, { candidates, reservation: a.reservation, limitHeaders: flat, outputCap: a.outputCap });
}

function admit(x: Exchange, svc: Services, gen: Generation, admitted: Admitted): Admitted {
  x.admitted();
  auditStarted(x, svc, gen, null);
  return admitted;
}

/**
 * Bills what the response used at the pricing table of the generation that routed it
 * (integer micro-USD, rounded once) and trues up the caller's counters; or, when nothing
 * was served, gives the reservation back. Usage the upstream reported is billed only when
 * it is sane for this request (see saneUsage); an answer that is not a success, with no
 * usage, costs nothing. Called exactly once per admitted request, by the chain that holds
 * its reservation. Returns a promise only when the store's answer is one.
 */
export function settle(x: Exchange, svc: Services, request: ModelRequest, reservation: Reservation | null): void | Promise<void> {
  const c = x.candidate;
  const now = governance.governanceNow();
  if (c === null || (x.outcome === 'aborted' && x.headersAt === null)) {
    return governance.release(svc.governance, reservation, now);
  }
  const provider = c.provider.name;
  const sane = x.usage === null ? null : saneUsage(x, svc, request, provider);
  let usage = sane;
  let estimated = false;
  if (usage === null && x.res.statusCode >= 300) {
    // The upstream's refusal or redirect (its 5xx and 429 fail over before committing), or
    // the gateway's 502 for a success it could not read: the client got no answer, so it
    // pays nothing. Settling zero gives back the reservation's tokens and cost and keeps its
    // request counted (rpm), as a release does.
    usage = NOTHING_USED;
  } else if (usage === null && x.stream && x.outcome !== 'complete') {
    // A stream cut midway, or left by its client, before its usage arrived: bill what was
    // seen (the input estimate, about one token per relayed event), not the worst case.
    usage = governance.seenUsage(x.bodyBytes, x.events);
    estimated = true;
  }
  // What the record reports as billed: the sane usage, or the estimate (never NOTHING_USED, which is no usage).
  x.metered(usage === NOTHING_USED ? null : usage, estimated);
  const settled = governance.settle(svc.governance, reservation, { provider, model: c.upstreamModel }, usage, request.gen.pricing, now);
  if (settled instanceof Promise) return settled.then((s) => billed(x, svc, s));
  billed(x, svc, settled);
}

const NOTHING_USED: governance.Usage = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/**
 * The response's usage when it is sane for this request (governance.checkUsage, under
 * bounds from its body's size and its output cap), or null: billed as missing usage, which
 * bills the reservation. Counted per provider, and logged at most once a minute per
 * provider so a broken upstream cannot flood the log.
 */
function saneUsage(x: Exchange, svc: Services, request: ModelRequest, provider: string): governance.Usage | null {
  const usage = x.usage as governance.Usage;
  const checked = governance.checkUsage(usage, usageBoundsOf(request));
  if (checked.ok) return usage;
  svc.metrics.usageInvalid.inc({ provider });
  const now = governance.governanceNow();
  const warned = usageWarnings.get(provider);
  if (warned !== undefined && now - warned.atMs < USAGE_WARNING_INTERVAL_MS) {
    warned.suppressed += 1;
  } else {
    svc.logger.warn({
      msg: 'the upstream reported usage that is not sane; billed as missing usage',
      provider,
      fault: checked.fault,
      detail: checked.detail,
      suppressed: warned?.suppressed ?? 0,
    });
    usageWarnings.set(provider, { atMs: now, suppressed: 0 });
  }
  return null;
}

const USAGE_WARNING_INTERVAL_MS = 60_000;

/** Per provider name, when its last insane usage was logged and how many went unlogged since (one entry per provider). */
const usageWarnings = new Map<string, { atMs: number; suppressed: number }>();

/** How many choices the request asks to be generated, each billed: OpenAI's `n`, or `best_of` (completions). */
/**
 * The bounds a sane usage of this request stays within (its body's size, its output cap,
 * its choices): what settle bills by, and what the cost header shows.
 */
export function usageBoundsOf(request: ModelRequest): governance.UsageBounds {
  return governance.usageBounds(request.raw.length, operations[request.operation].maxTokens(request.parsed), choicesOf(request.parsed));
}

function choicesOf(parsed: Record<string, unknown>): number {
  const n = Number.isSafeInteger(parsed.n) ? (parsed.n as number) : 1;
  const bestOf = Number.isSafeInteger(parsed.best_of) ? (parsed.best_of as number) : 1;
  return Math.max(n, bestOf, 1);
}

function billed(x: Exchange, svc: Services, settled: governance.Settlement): void {
  x.settled(settled.costMicroUsd, settled.pricingMissing);
  if (settled.pricingMissing) svc.metrics.pricingMissing.inc();
  // A success whose usage could not be read (none reported, or none sane) is billed its
  // reservation: counted, so that a provider that stops reporting usage shows.
  if (settled.usageMissing && x.candidate !== null && x.res.statusCode < 300)
    svc.metrics.usageMissing.inc({ provider: x.candidate.provider.name });
  const principal = x.principal;
  if (principal?.team != null && settled.costMicroUsd !== null && settled.costMicroUsd > 0) {
    svc.metrics.spendUsd.series(principal.team, principal.keyId ?? '').inc(settled.costMicroUsd / 1e6);
  }
}

/**
 * Admits a cached answer (the response cache's hit): the allow-lists and rpm alone, with no
 * reservation (it costs nothing; see governance/cached-answer.ts), audited as admitted or
 * refused like any request. Answers the `x-ratelimit-*` headers, or throws the refusal.
 */
export function admitCached(x: Exchange, svc: Services, request: ModelRequest): MaybePromise<readonly string[]> {
  const { gen, keyring, principal } = request;
  const policy = policyOf(keyring);
  if (principal.team === null) {
    admit(x, svc, gen, NO_ADMISSION);
    return NO_LIMIT_HEADERS;
  }
  const admission = governance.admitCachedAnswer(svc.governance, policy, principal, request.model, governance.governanceNow());
  const decide = (a: governance.CachedAdmission): readonly string[] => {
    if (!a.ok) {
      auditStarted(x, svc, gen, a.refusal.code);
      throw governance.refusalError(a.refusal);
    }
    admit(x, svc, gen, NO_ADMISSION);
    return governance.pushRateLimitHeaders(a.rateLimit, []);
  };
  return admission instanceof Promise ? admission.then(decide) : decide(admission);
}

const NO_ADMISSION: Admitted = Object.freeze({ candidates: [], reservation: null, limitHeaders: null, outputCap: null });
