import { SwitchyardError } from '../errors.js';
import { type RateLimitView, type Refusal, type ScopeKind, scopeWho } from './limits.js';
import type { BudgetFit } from './pricing.js';
import { formatUsd } from './store.js';

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

/**
 * A budget refusal while something is left: the reservation (up to its cost, at the dearest
 * candidate's price, of the input estimate and the output cap) against what is left, and how
 * to make the request fit.
 */
export function budgetRefusalMessage(
  scope: { readonly kind: ScopeKind; readonly id: string },
  leftMicroUsd: number,
  costMicroUsd: number,
  estimate: { readonly inputTokens: number; readonly maxOutputTokens: number },
  capDefaulted: boolean,
  fit: BudgetFit,
): string {
  const at = fit.dearest === null ? '' : `, at the price of its dearest candidate (${fit.dearest.provider}/${fit.dearest.model})`;
  const cap = capDefaulted
    ? `${estimate.maxOutputTokens} output tokens, the most its models may write, as it sets no output cap (max_tokens)`
    : `${estimate.maxOutputTokens} output tokens, its max_tokens`;
  const room = fit.outputTokens;
  const renew = 'wait for the budget to renew at the start of the next UTC month';
  const fix =
    room === null
      ? renew
      : room < 0
        ? `its input alone costs more than that: shorten it, or ${renew}`
        : room === 0
          ? `not even one output token fits: ${renew}`
          : `a max_tokens of at most ${room} would fit, or ${renew}`;
  return `this request reserves up to ${formatUsd(costMicroUsd)} (about ${estimate.inputTokens} input tokens and ${cap}${at}), more than the ${formatUsd(leftMicroUsd)} ${scopeWho(scope.kind, scope.id)} has left of its monthly budget; ${fix}`;
}
