import type { TokenUsage } from './metering.js';
import type { RelayTransform } from './relay-transform.js';
import { composeTransforms } from './transform-stack.js';

/** Headers computed from a response's usage (null when it reported none), or null for none. */
export type UsageHeadersOf = (usage: TokenUsage | null) => Readonly<Record<string, string>> | null;

/**
 * `inner`'s handling of the body (none: the pass-through, kept as it is), with headers
 * from the usage the response reports: a buffered response carries them as headers; a
 * stream carries them as HTTP trailers when `trailers` names them, and none otherwise.
 * A stack of one transform that only adds headers (transform-stack.ts): with no inner
 * transform the result has no body part, so the relay's pass-through path runs unchanged.
 */
export function withUsageHeaders(inner: RelayTransform | undefined, usageHeaders: UsageHeadersOf, trailers?: string): RelayTransform {
  return composeTransforms(inner, [{ usageHeaders, trailers }]) as RelayTransform;
}
