// The units an upstream call is metered in: the tokens it used, as the adapter reads them
// from the response, and what a token costs. They live beside the adapters that report
// them; live/ carries a price table in each generation and governance/ prices usage with
// it, and neither may import the other, so both take these types from here.

/**
 * Token usage as the upstream reported it. `inputTokens` counts every prompt token, cache
 * reads and cache writes included (OpenAI's `prompt_tokens`; Anthropic's `input_tokens` +
 * `cache_read_input_tokens` + `cache_creation_input_tokens`). `cacheReadTokens` says how
 * many of them were read from the provider's prompt cache and are billed at the cache-read
 * price; `cacheWriteTokens` how many were written to it (Anthropic bills those above the
 * input price). Both are subsets of `inputTokens`, absent when zero. ADR-0011.
 */
export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens?: number;
  readonly cacheWriteTokens?: number;
}

/** USD per million tokens, so tokens x price is micro-USD exactly. */
export interface PriceEntry {
  readonly input_usd_per_mtok: number;
  readonly output_usd_per_mtok: number;
  /** Cached prompt tokens; absent = billed at the input price. */
  readonly cache_read_usd_per_mtok?: number;
  /** Prompt tokens written to the cache; absent = billed at the input price. */
  readonly cache_write_usd_per_mtok?: number;
  /** The most output tokens the model writes in one answer; absent = governance.default_max_tokens is assumed. */
  readonly max_output_tokens?: number;
}

/** Keyed by upstream model (`gpt-4o-mini`) or provider-qualified (`east/gpt-4o-mini`). */
export type PriceTable = Readonly<Record<string, PriceEntry>>;
