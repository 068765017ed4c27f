// The units an upstream call is metered in: the tokens it used, as the adapter reads them
// from the response, and what a token costs. They live beside the adapters that report
// them; live/ carries a price table in each generation and governance/ prices usage with
// it, and neither may import the other, so both take these types from here.

/**
 * Token usage as the upstream reported it. `inputTokens` counts every prompt token, cache
 * reads included (OpenAI's `prompt_tokens`); `cacheReadTokens` says how many of them were
 * read from the provider's prompt cache and are billed at the cache-read price.
 */
export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens?: number;
}

/** USD per million tokens, so tokens x price is micro-USD exactly. */
export interface PriceEntry {
  readonly input_usd_per_mtok: number;
  readonly output_usd_per_mtok: number;
  /** Cached prompt tokens; absent = billed at the input price. */
  readonly cache_read_usd_per_mtok?: number;
}

/** Keyed by upstream model (`gpt-4o-mini`) or provider-qualified (`east/gpt-4o-mini`). */
export type PriceTable = Readonly<Record<string, PriceEntry>>;
