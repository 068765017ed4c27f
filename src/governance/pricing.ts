import type { PriceEntry, PriceTable, TokenUsage } from '../providers/index.js';

// The metering units live in providers/ (see docs/decisions/0008): usage as the adapters
// read it, prices as each generation carries them.
export type { PriceEntry, PriceTable };
export type Usage = TokenUsage;

/** What to do with a model that has no price: serve it at cost 0 (and flag it), or refuse it. */
export type OnMissingPrice = 'allow' | 'block';

/** One way a route may be served, as far as pricing cares. */
export interface PricedTarget {
  readonly provider: string;
  readonly model: string;
}

/**
 * Each table's answers, by provider then model. A generation's table never changes, and the
 * request path asks it about the same few (provider, model) pairs, so the lookup is two Map
 * hits on strings the generation already holds instead of building `provider/model` and
 * hashing it per call. Keyed weakly by the table: a retired generation's goes with it.
 */
const resolved = new WeakMap<PriceTable, Map<string, Map<string, PriceEntry | null>>>();

function priceOf(table: PriceTable, provider: string, model: string): PriceEntry | undefined {
  let byProvider = resolved.get(table);
  if (byProvider === undefined) {
    byProvider = new Map();
    resolved.set(table, byProvider);
  }
  let byModel = byProvider.get(provider);
  if (byModel === undefined) {
    byModel = new Map();
    byProvider.set(provider, byModel);
  }
  let entry = byModel.get(model);
  if (entry === undefined) {
    entry =
      (Object.hasOwn(table, `${provider}/${model}`)
        ? table[`${provider}/${model}`]
        : Object.hasOwn(table, model)
          ? table[model]
          : undefined) ?? null;
    // Bounded by what the generation routes; a client's invented model never reaches here.
    byModel.set(model, entry);
  }
  return entry ?? undefined;
}

/**
 * The cost of one request in micro-USD, or null when the model has no price. The table is
 * a parameter (the one of the generation that routed the request), never looked up, so a
 * reload mid-request cannot bill a request at another generation's prices. A
 * provider-qualified key (`east/gpt-4o-mini`) wins over the bare model. Not rounded: see
 * costMicroUsd for the billed integer.
 */
export function priceUsage(table: PriceTable, provider: string, model: string, usage: Usage): number | null {
  const price = priceOf(table, provider, model);
  if (price === undefined) return null;
  return exactPicoUsd(price, usage) / 1e6;
}

/**
 * The billed cost in integer micro-USD, rounded once (half up), or null when unpriced.
 * Prices are taken to 1e-6 USD/Mtok, so the sum is exact integer arithmetic in pico-USD
 * and only the final division rounds: 1000 tokens at 0.15 USD/Mtok is 150, never 150.00000000000003.
 */
export function costMicroUsd(table: PriceTable, provider: string, model: string, usage: Usage): number | null {
  const price = priceOf(table, provider, model);
  if (price === undefined) return null;
  return Math.round(exactPicoUsd(price, usage) / 1e6);
}

/**
 * The budget reservation for a request that may be served by any of `targets`: the
 * worst-case cost (`inputTokens` + `maxOutputTokens`, no cache hits) at the most expensive
 * priced target, rounded up so a reservation never under-covers the settled cost. Targets
 * without a price are listed in `missing`; when none is priced the reservation is 0.
 */
export function reservationMicroUsd(
  table: PriceTable,
  targets: readonly PricedTarget[],
  inputTokens: number,
  maxOutputTokens: number,
): { readonly costMicroUsd: number; readonly missing: readonly PricedTarget[] } {
  let worstPico = 0;
  let missing: PricedTarget[] | null = null;
  for (const t of targets) {
    const price = priceOf(table, t.provider, t.model);
    if (price === undefined) {
      (missing ??= []).push(t);
      continue;
    }
    const pico = exactPicoUsd(price, { inputTokens, outputTokens: maxOutputTokens });
    if (pico > worstPico) worstPico = pico;
  }
  return { costMicroUsd: Math.ceil(worstPico / 1e6), missing: missing ?? NONE_MISSING };
}

const NONE_MISSING: readonly PricedTarget[] = Object.freeze([]);

/** What a refused reservation was priced at, and what would have fitted. */
export interface BudgetFit {
  /** The target whose price the reservation took (the dearest for this request); null when none is priced. */
  readonly dearest: PricedTarget | null;
  /**
   * The most output tokens whose reservation fits what is left at every priced target: -1
   * when the input alone is more, 0 when not one output token fits; null when output is free.
   */
  readonly outputTokens: number | null;
}

/** For a budget refusal's message: reservationMicroUsd's dearest target, and the output cap that would fit `leftMicroUsd`. Off the request path (refusals only). */
export function budgetFit(
  table: PriceTable,
  targets: readonly PricedTarget[],
  inputTokens: number,
  maxOutputTokens: number,
  leftMicroUsd: number,
): BudgetFit {
  let dearest: PricedTarget | null = null;
  let worstPico = -1;
  let fit = Number.POSITIVE_INFINITY;
  for (const t of targets) {
    const price = priceOf(table, t.provider, t.model);
    if (price === undefined) continue;
    const pico = exactPicoUsd(price, { inputTokens, outputTokens: maxOutputTokens });
    if (pico > worstPico) {
      worstPico = pico;
      dearest = t;
    }
    // A reservation is rounded up to whole micro-USD: it fits when its pico-USD are at most what is left.
    const room = leftMicroUsd * 1e6 - exactPicoUsd(price, { inputTokens, outputTokens: 0 });
    const perOutput = picoPerToken(price.output_usd_per_mtok);
    fit = Math.min(fit, room < 0 ? -1 : perOutput === 0 ? Number.POSITIVE_INFINITY : Math.floor(room / perOutput));
  }
  return { dearest, outputTokens: Number.isFinite(fit) ? fit : null };
}

/**
 * The most output tokens a request that sets no cap may be answered with, over every target
 * that may serve it: each target's `max_output_tokens`, or `fallback` (governance.
 * default_max_tokens) for a target without one. What the pre-check reserves for such a
 * request, so that the reservation covers whichever target serves it.
 */
export function outputCeiling(table: PriceTable, targets: readonly PricedTarget[], fallback: number): number {
  if (targets.length === 0) return fallback;
  let most = 0;
  for (const t of targets) {
    const ceiling = priceOf(table, t.provider, t.model)?.max_output_tokens ?? fallback;
    if (ceiling > most) most = ceiling;
  }
  return most;
}

/** A target's own `max_output_tokens` from the table, when it has one. */
export function modelOutputLimit(table: PriceTable, provider: string, model: string): number | undefined {
  return priceOf(table, provider, model)?.max_output_tokens;
}

/** Whether a target has a price (a provider-qualified or a bare-model entry). */
export function isPriced(table: PriceTable, provider: string, model: string): boolean {
  return priceOf(table, provider, model) !== undefined;
}

/** micro-USD per token scaled by 1e6: an integer, so products and sums stay exact below 2^53. */
function picoPerToken(usdPerMtok: number): number {
  return Math.round(usdPerMtok * 1e6);
}

/**
 * Input tokens include cache reads and cache writes (ADR-0011): each part is billed at its
 * own price when the table has one, the rest at the input price.
 */
function exactPicoUsd(price: PriceEntry, usage: Usage): number {
  const read = Math.min(Math.max(usage.cacheReadTokens ?? 0, 0), usage.inputTokens);
  const written = Math.min(Math.max(usage.cacheWriteTokens ?? 0, 0), usage.inputTokens - read);
  const input = picoPerToken(price.input_usd_per_mtok);
  return (
    (usage.inputTokens - read - written) * input +
    read * (price.cache_read_usd_per_mtok === undefined ? input : picoPerToken(price.cache_read_usd_per_mtok)) +
    written * (price.cache_write_usd_per_mtok === undefined ? input : picoPerToken(price.cache_write_usd_per_mtok)) +
    usage.outputTokens * picoPerToken(price.output_usd_per_mtok)
  );
}
