import { SwitchyardError } from '../errors.js';
import type { RateLimitView, Refusal } from './limits.js';

/**
 * `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` as OpenAI sends them (reset as a
 * duration such as `1s` or `6m0s`), from the tightest gateway limit, appended to `out` as
 * names and values (the flat list writeHead takes). Nothing when no rate limit applies, so
 * the upstream's own headers pass through.
 */
export function pushRateLimitHeaders(view: RateLimitView, out: string[]): string[] {
  const { requests, tokens } = view;
  if (requests !== null) {
    out.push(
      'x-ratelimit-limit-requests',
      String(requests.limit),
      'x-ratelimit-remaining-requests',
      String(requests.remaining),
      'x-ratelimit-reset-requests',
      duration(requests.resetMs),
    );
  }
  if (tokens !== null) {
    out.push(
      'x-ratelimit-limit-tokens',
      String(tokens.limit),
      'x-ratelimit-remaining-tokens',
      String(tokens.remaining),
      'x-ratelimit-reset-tokens',
      duration(tokens.resetMs),
    );
  }
  return out;
}

/** pushRateLimitHeaders as a record (a refusal's headers). */
export function rateLimitHeaders(view: RateLimitView): Record<string, string> {
  const flat = pushRateLimitHeaders(view, []);
  const out: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
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
