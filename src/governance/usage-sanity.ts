import type { Usage } from './pricing.js';

// Whether the usage an upstream reported can be billed. The counts come from the upstream's
// bytes: a provider that is buggy, compromised or merely not OpenAI can report a negative
// prompt (a refund on the caller's budget) or 1e18 tokens (a month's budget, and more, in
// one request). Usage that fails here is treated as missing: billed the reservation, as
// governance.settle bills any unknown usage. The bounds are derived from the request, so
// they hold whatever model or provider served it.

/**
 * Input tokens one byte of the request body may bring in. Text alone cannot exceed one
 * token per byte (byte-level BPE), but a body can refer to far more than it holds: an image
 * or a PDF by URL (a few thousand tokens a page from ~100 bytes), a video by URL (~260
 * tokens a second), and the Responses API's `previous_response_id` or a `file_id`, which
 * bring a whole stored context (up to a model's window, 1-2M tokens today) from ~60 bytes.
 * With the floor below, the smallest body may report 4096 x 1 KiB = 4,194,304 input
 * tokens: above every context window served today, yet finite, and it scales with the body.
 */
export const INPUT_TOKENS_PER_BODY_BYTE = 4096;

/** The body size the input bound is computed from at the least: a tiny body may still name a large context. */
export const MIN_BOUNDED_BODY_BYTES = 1024;

/**
 * The output bound of a request that set no cap: 2^20, eight times the largest output any
 * model offers today (128k tokens, reasoning included). The gateway reserves
 * `default_max_tokens` for such a request but does not send it, so the upstream's own
 * limit is the only one that applies.
 */
export const MAX_OUTPUT_TOKENS_UNCAPPED = 1_048_576;

/** OpenAI's largest `n`: a bigger one is refused upstream, so it never multiplies a bound. */
export const MAX_CHOICES = 128;

export interface UsageBounds {
  readonly maxInputTokens: number;
  readonly maxOutputTokens: number;
}

/**
 * The bounds for a request of `bodyBytes` whose output is capped at `outputCap` tokens per
 * choice (null: no cap was set) over `choices` choices (`n`, or `best_of`: every choice
 * is generated and billed). A capped output may exceed the cap by the body's size: a
 * predicted output (`prediction`) is billed as completion tokens even where rejected, and
 * is text from the body (a byte per token at the least); the same slack absorbs a server
 * that counts an end-of-sequence token past the cap.
 */
export function usageBounds(bodyBytes: number, outputCap: number | null, choices = 1): UsageBounds {
  const bytes = Number.isFinite(bodyBytes) && bodyBytes > 0 ? Math.ceil(bodyBytes) : 0;
  const n = Number.isSafeInteger(choices) && choices > 1 ? Math.min(choices, MAX_CHOICES) : 1;
  const perChoice = outputCap === null || !Number.isFinite(outputCap) || outputCap < 0 ? MAX_OUTPUT_TOKENS_UNCAPPED : Math.floor(outputCap);
  return {
    maxInputTokens: Math.max(bytes, MIN_BOUNDED_BODY_BYTES) * INPUT_TOKENS_PER_BODY_BYTE,
    maxOutputTokens: perChoice * n + (outputCap === null ? 0 : bytes),
  };
}

/** What was wrong with a usage: a count that is no count, or one past its bound. */
export type UsageFault = 'not_a_count' | 'input_over_bound' | 'output_over_bound' | 'cache_over_input';

export type UsageCheck =
  | { readonly ok: true; readonly usage: Usage }
  | { readonly ok: false; readonly fault: UsageFault; readonly detail: string };

/** A count is a non-negative safe integer: no fraction, no NaN, no Infinity, nothing a double rounds. */
function isCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0;
}

function fault(f: UsageFault, detail: string): UsageCheck {
  return { ok: false, fault: f, detail };
}

function notACount(name: string, value: number): UsageCheck {
  return fault('not_a_count', `${name} ${value} is not a non-negative integer`);
}

/**
 * `usage` when it is sane under `bounds`: every count a non-negative integer, input and
 * output within their bounds, and the cache counts (disjoint parts of the input) within the
 * input. Otherwise the fault, with a detail that names the field and its value (never
 * anything of the body).
 */
export function checkUsage(usage: Usage, bounds: UsageBounds): UsageCheck {
  const { inputTokens, outputTokens } = usage;
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  if (!isCount(inputTokens)) return notACount('inputTokens', inputTokens);
  if (!isCount(outputTokens)) return notACount('outputTokens', outputTokens);
  if (!isCount(read)) return notACount('cacheReadTokens', read);
  if (!isCount(write)) return notACount('cacheWriteTokens', write);
  if (inputTokens > bounds.maxInputTokens) {
    return fault('input_over_bound', `inputTokens ${inputTokens} is over the request's bound of ${bounds.maxInputTokens}`);
  }
  if (outputTokens > bounds.maxOutputTokens) {
    return fault('output_over_bound', `outputTokens ${outputTokens} is over the request's bound of ${bounds.maxOutputTokens}`);
  }
  if (read + write > inputTokens) {
    return fault('cache_over_input', `cache reads ${read} and writes ${write} are more than inputTokens ${inputTokens}`);
  }
  return { ok: true, usage };
}
