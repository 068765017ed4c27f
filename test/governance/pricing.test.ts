import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  costMicroUsd,
  modelOutputLimit,
  outputCeiling,
  type PriceTable,
  priceUsage,
  reservationMicroUsd,
} from '../../src/governance/index.js';

const table: PriceTable = {
  'gpt-4o-mini': { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6, cache_read_usd_per_mtok: 0.075 },
  'east/gpt-4o': { input_usd_per_mtok: 2.5, output_usd_per_mtok: 10 },
  'west/gpt-4o': { input_usd_per_mtok: 5, output_usd_per_mtok: 15 },
};

describe('pricing in integer micro-USD', () => {
  it('bills tokens x USD/Mtok as whole micro-USD, free of float noise', () => {
    assert.equal(costMicroUsd(table, 'east', 'gpt-4o-mini', { inputTokens: 1000, outputTokens: 0 }), 150);
    assert.equal(costMicroUsd(table, 'east', 'gpt-4o-mini', { inputTokens: 1000, outputTokens: 1000 }), 750);
  });

  it('rounds once per request, half up, not per token class', () => {
    // 3 input tokens at 0.15 = 0.45 µUSD, 1 output at 0.6 = 0.6: per class 0 + 1 = 1; once: round(1.05) = 1.
    assert.equal(costMicroUsd(table, 'east', 'gpt-4o-mini', { inputTokens: 3, outputTokens: 1 }), 1);
    // 5 input = 0.75 µUSD, 1 output = 0.6: per class 1 + 1 = 2; once: round(1.35) = 1.
    assert.equal(costMicroUsd(table, 'east', 'gpt-4o-mini', { inputTokens: 5, outputTokens: 1 }), 1);
    // exactly half: 10 input tokens at 0.15 = 1.5 -> 2.
    assert.equal(costMicroUsd(table, 'east', 'gpt-4o-mini', { inputTokens: 10, outputTokens: 0 }), 2);
  });

  it('bills cache-read tokens (a part of the input) at the cache-read price, or the input price when none is set', () => {
    assert.equal(costMicroUsd(table, 'east', 'gpt-4o-mini', { inputTokens: 2000, outputTokens: 0, cacheReadTokens: 1000 }), 150 + 75);
    assert.equal(costMicroUsd(table, 'east', 'gpt-4o', { inputTokens: 2000, outputTokens: 0, cacheReadTokens: 1000 }), 5000);
  });

  it('bills cache-write tokens (a part of the input too) at the cache-write price, or the input price when none is set', () => {
    const priced = { m: { input_usd_per_mtok: 3, output_usd_per_mtok: 15, cache_read_usd_per_mtok: 0.3, cache_write_usd_per_mtok: 3.75 } };
    // 1000 input of which 200 read and 500 written: 300 x 3 + 200 x 0.3 + 500 x 3.75 = 900 + 60 + 1875.
    assert.equal(costMicroUsd(priced, 'p', 'm', { inputTokens: 1000, outputTokens: 0, cacheReadTokens: 200, cacheWriteTokens: 500 }), 2835);
    const plain = { m: { input_usd_per_mtok: 3, output_usd_per_mtok: 15 } };
    assert.equal(costMicroUsd(plain, 'p', 'm', { inputTokens: 1000, outputTokens: 0, cacheReadTokens: 200, cacheWriteTokens: 500 }), 3000);
  });

  it('prefers a provider-qualified price and returns null for an unpriced model', () => {
    assert.equal(costMicroUsd(table, 'west', 'gpt-4o', { inputTokens: 1_000_000, outputTokens: 0 }), 5_000_000);
    assert.equal(costMicroUsd(table, 'east', 'llama', { inputTokens: 1, outputTokens: 1 }), null);
    assert.equal(priceUsage(table, 'east', 'gpt-4o-mini', { inputTokens: 1000, outputTokens: 0 }), 150);
  });

  it('reserves the worst case at the dearest of the route candidates, rounded up, and lists unpriced ones', () => {
    const targets = [
      { provider: 'east', model: 'gpt-4o' },
      { provider: 'west', model: 'gpt-4o' },
      { provider: 'central', model: 'gpt-4o' },
    ];
    const r = reservationMicroUsd(table, targets, 101, 100);
    // west: 101 x 5 + 100 x 15 = 2005 µUSD exactly.
    assert.equal(r.costMicroUsd, 2005);
    assert.deepEqual(r.missing, [{ provider: 'central', model: 'gpt-4o' }]);
    assert.equal(reservationMicroUsd(table, [{ provider: 'east', model: 'gpt-4o-mini' }], 3, 0).costMicroUsd, 1, '0.45 rounds up');
    assert.equal(reservationMicroUsd(table, [{ provider: 'x', model: 'y' }], 10, 10).costMicroUsd, 0);
  });

  it("a route's output ceiling is the largest of its targets' max_output_tokens, a target without one counting as the fallback", () => {
    const limited: PriceTable = {
      small: { input_usd_per_mtok: 1, output_usd_per_mtok: 1, max_output_tokens: 256 },
      'east/large': { input_usd_per_mtok: 1, output_usd_per_mtok: 1, max_output_tokens: 32_000 },
    };
    const ceiling = (...targets: string[]) =>
      outputCeiling(
        limited,
        targets.map((t) => ({ provider: t.split('/')[0] as string, model: t.split('/')[1] as string })),
        4096,
      );
    assert.equal(ceiling('east/small'), 256);
    assert.equal(ceiling('east/small', 'east/large'), 32_000);
    assert.equal(ceiling('east/small', 'west/large'), 4096, 'west/large has no entry: the fallback');
    assert.equal(outputCeiling(limited, [], 4096), 4096);
    assert.equal(modelOutputLimit(limited, 'east', 'large'), 32_000);
    assert.equal(modelOutputLimit(limited, 'west', 'large'), undefined);
  });
});
