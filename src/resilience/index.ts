// resilience/: the breaker registry keyed by provider identity, the failover rules, which
// client-error answers a route may fail over on, and the retry rules of one candidate.
// Built once by server/ and kept across reloads; retain() follows each generation swap.
// Imports nothing from other src/ folders. See docs/decisions/0001-one-generation.md, 0003-failover-and-breakers.md
// and 0028-retries-and-fallback-classes.md.
export { answerClassOf } from './answer-class.js';
export {
  type Admission,
  type BreakerListener,
  type BreakerOptions,
  BreakerRegistry,
  type BreakerState,
  type BreakerTransition,
  type BreakerTransitionReason,
  type BreakerView,
} from './breaker-registry.js';
export { type FailureReason, type FallbackClass, isAnswerClass, isFailoverStatus, reasonForStatus } from './failover.js';
export { backoffDelayMs, isRetryable } from './retry.js';
