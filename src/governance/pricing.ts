import type { PriceTable, TokenUsage } from '../providers/index.js';

/**
 * The cost of one request in micro-USD, or null when the model has no price. The table is
 * a parameter (the one of the generation that routed the request), never looked up, so a
 * reload mid-request cannot bill a request at another generation's prices. A
 * provider-qualified key (`east/gpt-4o-mini`) wins over the bare model.
 */
export function priceUsage(table: PriceTable, provider: string, model: string, usage: TokenUsage): number | null {
  const price = table[`${provider}/${model}`] ?? table[model];
  if (price === undefined) return null;
  return usage.inputTokens * price.input_usd_per_mtok + usage.outputTokens * price.output_usd_per_mtok;
}
