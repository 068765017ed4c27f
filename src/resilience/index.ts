// resilience/: the breaker registry keyed by provider identity, and the failover rules.
// Built once by server/ and kept across reloads; retain() follows each generation swap.
// Imports nothing from other src/ folders. See docs/decisions/0001-one-generation.md and 0003-failover-and-breakers.md.
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
export { type FailureReason, isFailoverStatus, reasonForStatus } from './failover.js';
