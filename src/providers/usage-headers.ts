import type { TokenUsage } from './metering.js';
import type { RelayTransform } from './relay-transform.js';

/** Headers computed from a response's usage (null when it reported none), or null for none. */
export type UsageHeadersOf = (usage: TokenUsage | null) => Readonly<Record<string, string>> | null;

/**
 * `inner`'s handling of the body (none: the pass-through, kept as it is), with headers
 * from the usage the response reports: a buffered response carries them as headers; a
 * stream carries them as HTTP trailers when `trailers` names them, and none otherwise.
 * With no inner transform the result has no body part, so the relay's pass-through path
 * runs unchanged.
 */
export function withUsageHeaders(inner: RelayTransform | undefined, usageHeaders: UsageHeadersOf, trailers?: string): RelayTransform {
  if (inner === undefined) return { usageHeaders, trailers };
  return {
    plain: inner.plain?.bind(inner),
    chunk: inner.chunk?.bind(inner),
    end: inner.end?.bind(inner),
    fail: inner.fail?.bind(inner),
    // A getter: the inner usage grows as the stream is read.
    get usage() {
      return inner.usage;
    },
    usageHeaders,
    trailers,
  };
}
