import { SwitchyardError } from '../errors.js';
import type { RateLimitView, Refusal } from './limits.js';

/**
 * `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` as OpenAI sends them (reset as a
 * duration such as `1s` or `6m0s`), from the tightest gateway limit. Empty when no rate
 * limit applies, so the upstream's own headers pass through.
 */
export function rateLimitHeaders(view: RateLimitView): Record<string, string> {
  const out: Record<string, string> = {};
  if (view.requests !== null) {
    out['x-ratelimit-limit-requests'] = String(view.requests.limit);
    out['x-ratelimit-remaining-requests'] = String(view.requests.remaining);
    out['x-ratelimit-reset-requests'] = duration(view.requests.resetMs);
  }
  if (view.tokens !== null) {
    out['x-ratelimit-limit-tokens'] = String(view.tokens.limit);
    out['x-ratelimit-remaining-tokens'] = String(view.tokens.remaining);
    out['x-ratelimit-reset-tokens'] = duration(view.tokens.resetMs);
  }
  return out;
}

/** `1500` -> `2s`, `360000` -> `6m0s`: whole seconds, rounded up, as OpenAI formats them. */
export function duration(ms: number): string {
  const s = Math.ceil(Math.max(0, ms) / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}

/** The refusal as the error server/ throws: status from the catalog, `retry-after` and rate-limit headers. */
export function refusalError(refusal: Refusal): SwitchyardError {
  const headers = rateLimitHeaders(refusal.rateLimit);
  if (refusal.retryAfterS !== null) headers['retry-after'] = String(refusal.retryAfterS);
  return new SwitchyardError(refusal.code, refusal.message, refusal.code === 'model_not_allowed' ? 'model' : null, headers);
}
