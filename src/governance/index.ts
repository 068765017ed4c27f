// governance/: who may call (keys, teams, model allow-lists), how much they may use (rate
// limits, daily quotas, monthly budgets with reservations) and what a request cost
// (pricing in integer micro-USD). A leaf: it never imports live/, config/, request/ or
// server/; its metering units (TokenUsage, PriceTable) are types from providers/. request/
// adapts the generation's config to the input types below (KeyRecord, TeamRecord) and
// passes the pricing table of the generation that routed the request as a parameter, so a
// request is billed at the prices of the generation that routed it, even across a reload.
// The store is built once by server/ and survives every reload; its counters are keyed by
// team and key id. See docs/decisions/0009-governance-limits-and-budgets.md.

export { type AgentAdmission, admitAgentMessage, checkAgent, finishAgentMessage, mayUseAgent } from './agent-messages.js';
export { compileModelAllowList, type ModelAllowList } from './allow-list.js';
export { admitCachedAnswer, type CachedAdmission } from './cached-answer.js';
export { anchoredClock, governanceNow } from './clock.js';
export { createGovernanceStore, type StoreHooks, type StoreSettings } from './create-store.js';
export {
  ANONYMOUS,
  type AuthResult,
  authenticate,
  bearerToken,
  buildKeyTable,
  hashKey,
  KeyMemo,
  type KeyRecord,
  type KeyTable,
  presentedKey,
} from './keys.js';
export {
  type Grant,
  type LimitKind,
  type Limits,
  NO_RATE_LIMIT,
  type Principal,
  type RateLimitView,
  type RateWindowView,
  type Refusal,
  type Scope,
  type ScopeKind,
  utcDayStamp,
  utcMonthStamp,
} from './limits.js';
export { MemoryGovernanceStore } from './memory-store.js';
export {
  buildGovernancePolicy,
  checkModel,
  extendGovernancePolicy,
  type GovernancePolicy,
  ownList,
  type PolicyInput,
  principalScopes,
  scopesOf,
  type TeamRecord,
} from './policy.js';
export {
  type Admission,
  type Demand,
  estimateTokens,
  preCheck,
  release,
  type Settlement,
  seenUsage,
  settle,
  type TokenEstimate,
} from './pre-check.js';
export {
  costMicroUsd,
  isPriced,
  modelOutputLimit,
  type OnMissingPrice,
  outputCeiling,
  type PricedTarget,
  type PriceEntry,
  type PriceTable,
  priceUsage,
  reservationMicroUsd,
  type Usage,
} from './pricing.js';
export { RedisGovernanceStore, type RedisStoreOptions } from './redis-store.js';
export { duration, pushRateLimitHeaders, rateLimitHeaders, refusalError } from './refusal.js';
export { type GovernanceStatus, governanceStatus } from './status.js';
export {
  type Actual,
  type Counted,
  type GovernanceStore,
  GovernanceStoreError,
  type MaybePromise,
  type Reservation,
  type ReserveInput,
  type ReserveResult,
  type ScopeRef,
  type ScopeStatus,
  type SharedRecords,
} from './store.js';
export {
  applyStoreErrorPolicy,
  type OnStoreError,
  type PolicedStore,
  type StoreFailure,
  type StoreHealth,
  type UnbookedReason,
} from './store-error-policy.js';
export { admitToolCall, checkTool, finishToolCall, mayUseTool, type ToolAdmission } from './tool-calls.js';
export {
  checkUsage,
  INPUT_TOKENS_PER_BODY_BYTE,
  MAX_CHOICES,
  MAX_OUTPUT_TOKENS_UNCAPPED,
  MIN_BOUNDED_BODY_BYTES,
  type UsageBounds,
  type UsageCheck,
  type UsageFault,
  usageBounds,
} from './usage-sanity.js';
