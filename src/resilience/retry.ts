import type { FailureReason } from './failover.js';

// Retries of one candidate before the chain moves on (providers.<name>.retry): which
// failures are worth a second try at the same provider, and how long to wait before it.

/** The statuses a retry may cure: overload and transient server faults, not a 501 or a 505. */
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

/**
 * Whether a failure is transient enough to try the same candidate again: a connection
 * error, a timeout, or one of RETRYABLE_STATUS. `status` is the upstream's answer's, when it
 * gave one: a `status_5xx` without one is the gateway's verdict on an answer it could not
 * use (a compressed body, one too large to translate), which a retry would only repeat.
 */
export function isRetryable(reason: FailureReason, status: number | undefined): boolean {
  if (reason === 'connect_error' || reason === 'timeout') return true;
  if (reason === 'status_429' || reason === 'status_5xx') return status !== undefined && RETRYABLE_STATUS.has(status);
  return false;
}

/**
 * The wait before retry number `retry` (0 for the first), with full jitter: uniform in
 * [0, min(maxMs, baseMs * 2^retry)]. Spread over the whole window, the retries of many
 * clients that failed together do not arrive together again. `random` is in [0, 1).
 */
export function backoffDelayMs(retry: number, baseMs: number, maxMs: number, random: () => number): number {
  // 2 ** retry past 30 would only be capped: cap the exponent so the product stays finite.
  const cap = Math.min(maxMs, baseMs * 2 ** Math.min(retry, 30));
  return Math.min(cap, Math.floor(random() * (cap + 1)));
}
