import type { LimitKind, Principal, RateLimitView, Refusal, Scope } from './limits.js';
import { NO_RATE_LIMIT, scopeWho } from './limits.js';
import { checkModel, type GovernancePolicy, scopesOf } from './policy.js';
import {
  budgetFit,
  costMicroUsd,
  isPriced,
  outputCeiling,
  type PricedTarget,
  type PriceTable,
  reservationMicroUsd,
  type Usage,
} from './pricing.js';
import { budgetRefusalMessage } from './refusal.js';
import type { GovernanceStore, MaybePromise, Reservation, ReserveResult, ScopeRef } from './store.js';

/** What a request asks for, as the pre-check prices and counts it. */
export interface Demand {
  readonly model: string;
  /** The request body's size: the input estimate is bytes / 4. */
  readonly bodyBytes: number;
  /** `max_tokens` or `max_completion_tokens` when the request gives one. */
  readonly maxTokens: number | null;
  /** Every (provider, upstream model) the route may use: the reservation takes the dearest. */
  readonly targets: readonly PricedTarget[];
  /** The pricing table of the generation the request captured. */
  readonly pricing: PriceTable;
}

export type Admission =
  | {
      readonly ok: true;
      /** null for the open gateway's anonymous caller: nothing to settle. */
      readonly reservation: Reservation | null;
      readonly rateLimit: RateLimitView;
      /** Scopes over budget with `on_exceeded: warn` (header + metric, not a refusal). */
      readonly budgetWarnings: readonly ScopeRef[];
      /** Targets without a price (on_missing: allow). Under `block` these must not be tried. */
      readonly unpriced: readonly PricedTarget[];
      /**
       * The output cap to send upstream (policy.capOutput): the request gave none and a limit
       * applies, so the cap it was reserved for is sent, and the reservation is a true worst
       * case. Null: send nothing.
       */
      readonly outputCap: number | null;
    }
  | { readonly ok: false; readonly refusal: Refusal };

const ADMITTED_FREELY: Admission = Object.freeze({
  ok: true,
  reservation: null,
  rateLimit: NO_RATE_LIMIT,
  budgetWarnings: Object.freeze([]),
  unpriced: Object.freeze([]),
  outputCap: null,
});

export interface TokenEstimate {
  readonly inputTokens: number;
  readonly maxOutputTokens: number;
}

/** The pre-check's token estimate: body bytes / 4 (rounded up) for input, plus the output cap. */
export function estimateTokens(bodyBytes: number, maxTokens: number | null, defaultMaxTokens: number): TokenEstimate {
  return { inputTokens: Math.ceil(Math.max(0, bodyBytes) / 4), maxOutputTokens: maxTokens ?? defaultMaxTokens };
}

/**
 * What a stream cut before its usage arrived used, as far as the gateway saw: the input
 * estimate (body bytes / 4, as the pre-check) and one output token per event relayed after
 * the first (an OpenAI-compatible stream opens with a role-only event, then sends about a
 * token per event). An estimate, flagged as one wherever it is recorded.
 */
export function seenUsage(bodyBytes: number, events: number): Usage {
  return { inputTokens: Math.ceil(Math.max(0, bodyBytes) / 4), outputTokens: Math.max(0, events - 1) };
}

/**
 * Admits the request against its team's then its key's limits, in one atomic step of the
 * store, reserving the worst-case cost; or returns the refusal. Call after routing (the
 * targets are the route's candidates) and before any upstream call.
 */
export function preCheck(
  store: GovernanceStore,
  policy: GovernancePolicy,
  principal: Principal,
  demand: Demand,
  nowMs: number,
): MaybePromise<Admission> {
  const denied = checkModel(policy, principal, demand.model);
  if (denied !== null) return { ok: false, refusal: denied };
  const scopes = scopesOf(policy, principal);
  // Nothing to count and nothing to refuse by price (an open gateway, or a key without
  // limits under on_missing: allow): the reservation would be thrown away.
  if (scopes.length === 0 && policy.onMissingPrice !== 'block') return ADMITTED_FREELY;
  // Without the client's cap, the most any target may write: its max_output_tokens, else default_max_tokens.
  const defaulted = estimateTokens(
    demand.bodyBytes,
    demand.maxTokens ?? outputCeiling(demand.pricing, demand.targets, policy.defaultMaxTokens),
    policy.defaultMaxTokens,
  );
  const sendsCap = policy.capOutput && demand.maxTokens === null && limitsSpend(scopes);
  // A request that sets no cap, under a token limit its default cap would not fit, is capped
  // to what the tightest limit holds instead of being refused (the cap is sent, so it holds).
  const estimate = sendsCap ? fittedToLimits(defaulted, scopes) : defaulted;
  const priced = reservationMicroUsd(demand.pricing, demand.targets, estimate.inputTokens, estimate.maxOutputTokens);
  if (policy.onMissingPrice === 'block' && demand.targets.length > 0 && priced.missing.length === demand.targets.length) {
    return {
      ok: false,
      refusal: {
        code: 'model_not_allowed',
        message: `model "${demand.model}" has no price and pricing.on_missing is block`,
        retryAfterS: null,
        scope: null,
        limit: null,
        rateLimit: NO_RATE_LIMIT,
      },
    };
  }
  if (scopes.length === 0) {
    return { ok: true, reservation: null, rateLimit: NO_RATE_LIMIT, budgetWarnings: [], unpriced: priced.missing, outputCap: null };
  }
  const never = neverFits(scopes, estimate, demand.maxTokens === null);
  if (never !== null) return { ok: false, refusal: never };
  const reserved = store.reserve({
    scopes,
    tokens: estimate.inputTokens + estimate.maxOutputTokens,
    costMicroUsd: priced.costMicroUsd,
    nowMs,
  });
  const unpriced = priced.missing;
  const cap = sendsCap ? estimate.maxOutputTokens : null;
  const refused = (r: ReserveResult): ReserveResult =>
    r.ok || r.refusal.budget === undefined
      ? r
      : { ok: false, refusal: explainBudgetRefusal(r.refusal, r.refusal.budget.leftMicroUsd, demand, estimate, priced.costMicroUsd) };
  return reserved instanceof Promise
    ? reserved.then((r) => admissionOf(refused(r), unpriced, cap))
    : admissionOf(refused(reserved), unpriced, cap);
}

/**
 * A budget refusal that says what happened: the request's reservation (its worst case at
 * the dearest candidate's price) is more than what is left, and the output cap that would
 * fit. "No budget left" only when nothing is.
 */
function explainBudgetRefusal(
  refusal: Refusal,
  leftMicroUsd: number,
  demand: Demand,
  estimate: TokenEstimate,
  costMicroUsd: number,
): Refusal {
  if (leftMicroUsd <= 0 || refusal.scope === null) return refusal;
  const fit = budgetFit(demand.pricing, demand.targets, estimate.inputTokens, estimate.maxOutputTokens, leftMicroUsd);
  return { ...refusal, message: budgetRefusalMessage(refusal.scope, leftMicroUsd, costMicroUsd, estimate, demand.maxTokens === null, fit) };
}

/**
 * A refusal when the request's tokens are more than a token limit (tpm, tokens_per_day)
 * allows even with nothing else counted: it could never be admitted, so a 429 with a
 * `retry-after` would only be retried for ever. Names the limit, and the output cap that
 * would fit when one would. (A worst case over a whole monthly budget stays a 402: it
 * promises no retry.)
 */
function neverFits(scopes: readonly Scope[], estimate: TokenEstimate, capDefaulted: boolean): Refusal | null {
  const tokens = estimate.inputTokens + estimate.maxOutputTokens;
  for (const scope of scopes) {
    const { tpm, tokensPerDay } = scope.limits;
    const tokenLimit =
      tpm !== undefined && tokens > tpm
        ? { kind: 'tpm' as const, value: tpm, per: 'tokens per minute' }
        : tokensPerDay !== undefined && tokens > tokensPerDay
          ? { kind: 'tokens_per_day' as const, value: tokensPerDay, per: 'tokens per day' }
          : null;
    if (tokenLimit !== null) {
      const room = tokenLimit.value - estimate.inputTokens;
      const cap = capDefaulted
        ? `${estimate.maxOutputTokens} output tokens, the most its models may write (their max_output_tokens, else governance.default_max_tokens), as the request sets no output cap`
        : `${estimate.maxOutputTokens} output tokens, the request's cap`;
      const fix = room > 0 ? `; an output cap of at most ${room} would fit` : '; its input alone is over the limit';
      return capacityRefusal(
        scope,
        tokenLimit.kind,
        `this request reserves ${tokens} tokens (about ${estimate.inputTokens} of input and ${cap}), more than ${scopeWho(scope.kind, scope.id)}'s limit of ${tokenLimit.value} ${tokenLimit.per} allows${fix}`,
      );
    }
  }
  return null;
}

function capacityRefusal(scope: Scope, limit: LimitKind, message: string): Refusal {
  return {
    code: 'over_limit_capacity',
    message,
    retryAfterS: null,
    scope: { kind: scope.kind, id: scope.id },
    limit,
    rateLimit: NO_RATE_LIMIT,
  };
}

function admissionOf(r: ReserveResult, unpriced: readonly PricedTarget[], outputCap: number | null): Admission {
  if (!r.ok) return r;
  // One literal of one shape, whatever the cap: this runs on every admitted request.
  return { ok: true, reservation: r.reservation, rateLimit: r.rateLimit, budgetWarnings: r.budgetWarnings, unpriced, outputCap };
}

/** Whether a scope limits what a request may use in tokens or money: then an uncapped answer could overshoot it. */
function limitsSpend(scopes: readonly Scope[]): boolean {
  for (const { limits } of scopes) {
    if (limits.tpm !== undefined || limits.tokensPerDay !== undefined) return true;
    if (limits.budgetMicroUsdPerMonth !== undefined && limits.budgetOnExceeded !== 'warn') return true;
  }
  return false;
}

/** The estimate with its output lowered to what the tightest token limit holds beside the input (never below 1). */
function fittedToLimits(estimate: TokenEstimate, scopes: readonly Scope[]): TokenEstimate {
  let room = estimate.maxOutputTokens;
  for (const { limits } of scopes) {
    if (limits.tpm !== undefined) room = Math.min(room, limits.tpm - estimate.inputTokens);
    if (limits.tokensPerDay !== undefined) room = Math.min(room, limits.tokensPerDay - estimate.inputTokens);
  }
  // No room at all: left as it was, for the capacity check to refuse, naming the input.
  return room >= 1 && room < estimate.maxOutputTokens ? { inputTokens: estimate.inputTokens, maxOutputTokens: room } : estimate;
}

export interface Settlement {
  /** Billed cost, integer micro-USD; null when unpriced. */
  readonly costMicroUsd: number | null;
  readonly pricingMissing: boolean;
  /** The upstream reported no usage: the reservation was billed as the worst case. */
  readonly usageMissing: boolean;
}

/**
 * Bills what the response used, at the prices of the table passed in (the generation that
 * routed it, never re-read), rounded once; trues up TPM and the day with actual tokens.
 * Unknown usage bills the reservation (tokens and cost): a provider that omits usage must
 * not make requests free. An unpriced model costs 0 and is flagged.
 */
export function settle(
  store: GovernanceStore,
  reservation: Reservation | null,
  served: PricedTarget,
  usage: Usage | null,
  pricing: PriceTable,
  nowMs: number,
): MaybePromise<Settlement> {
  const priced = usage === null ? null : costMicroUsd(pricing, served.provider, served.model, usage);
  const pricingMissing = !isPriced(pricing, served.provider, served.model);
  const settlement: Settlement =
    usage === null
      ? { costMicroUsd: pricingMissing ? null : (reservation?.costMicroUsd ?? null), pricingMissing, usageMissing: true }
      : { costMicroUsd: priced, pricingMissing, usageMissing: false };
  if (reservation === null) return settlement;
  const tokens = usage === null ? reservation.tokens : usage.inputTokens + usage.outputTokens;
  const stored = store.settle(reservation, { tokens, costMicroUsd: settlement.costMicroUsd ?? 0 }, nowMs);
  return stored instanceof Promise ? stored.then(() => settlement) : settlement;
}

/** Gives the reservation back: the request failed before an upstream served it. */
export function release(store: GovernanceStore, reservation: Reservation | null, nowMs: number): MaybePromise<void> {
  if (reservation !== null) return store.release(reservation, nowMs);
}
