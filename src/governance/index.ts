// governance/: who may call (keys, teams, model allow-lists), how much they may use (rate
// limits, daily quotas, monthly budgets with reservations) and what a request cost
// (pricing in integer micro-USD). A leaf: it never imports live/, config/ or server/; its
// metering units (TokenUsage, PriceTable) are types from providers/. server/ adapts the
// generation's config to the input types below (KeyRecord, TeamRecord) and passes the pricing table of the generation that routed the request as a
// parameter (DESIGN.md invariant 4). The store is built once and survives every reload;
// its counters are keyed by team and key id. See docs/decisions/0009-governance-limits-and-budgets.md.
export {
  priceUsage,
  costMicroUsd,
  reservationMicroUsd,
  isPriced,
  type PriceEntry,
  type PriceTable,
  type Usage,
  type OnMissingPrice,
  type PricedTarget,
} from './pricing.js';
export {
  type Limits,
  type Principal,
  type Refusal,
  type RateLimitView,
  type RateWindowView,
  type Scope,
  type ScopeKind,
  type LimitKind,
  NO_RATE_LIMIT,
  utcDayStamp,
  utcMonthStamp,
} from './limits.js';
export { ANONYMOUS, authenticate, buildKeyTable, constantTimeEqual, hashKey, presentedKey, type AuthResult, type KeyRecord, type KeyTable } from './keys.js';
export { compileModelAllowList, type ModelAllowList } from './allow-list.js';
export { buildGovernancePolicy, checkModel, scopesOf, type GovernancePolicy, type PolicyInput, type TeamRecord } from './policy.js';
export { estimateTokens, preCheck, release, settle, type Admission, type Demand, type Settlement, type TokenEstimate } from './pre-check.js';
export { duration, rateLimitHeaders, refusalError } from './refusal.js';
export { governanceStatus, type GovernanceStatus } from './status.js';
export {
  GovernanceStoreError,
  type Actual,
  type Counted,
  type GovernanceStore,
  type Reservation,
  type ReserveInput,
  type ReserveResult,
  type ScopeRef,
  type ScopeStatus,
} from './store.js';
export { MemoryGovernanceStore } from './memory-store.js';
export { RedisGovernanceStore, type RedisStoreOptions } from './redis-store.js';
export { applyStoreErrorPolicy, type OnStoreError, type PolicedStore, type StoreFailure } from './store-error-policy.js';
export { createGovernanceStore, type StoreHooks, type StoreSettings } from './create-store.js';
