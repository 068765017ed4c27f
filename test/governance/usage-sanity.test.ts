import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkUsage,
  INPUT_TOKENS_PER_BODY_BYTE,
  MAX_CHOICES,
  MAX_OUTPUT_TOKENS_UNCAPPED,
  MIN_BOUNDED_BODY_BYTES,
  type Usage,
  usageBounds,
} from '../../src/governance/index.js';
import { usageFromAnthropic, usageFromOpenai, usageFromResponses } from '../../src/providers/index.js';

// Invariant "usage from an upstream is trusted only when it is sane": the pure check that
// settle runs on every reported usage, and the bounds it derives from the request.

const BOUNDS = { maxInputTokens: 1000, maxOutputTokens: 100 };

function faultOf(usage: Usage): string | null {
  const checked = checkUsage(usage, BOUNDS);
  return checked.ok ? null : checked.fault;
}

describe('invariant "usage from an upstream is trusted only when it is sane": checkUsage', () => {
  it('a negative count is not a count, in any field', () => {
    assert.equal(faultOf({ inputTokens: -1e8, outputTokens: 3 }), 'not_a_count');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: -1 }), 'not_a_count');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: 3, cacheReadTokens: -5 }), 'not_a_count');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: 3, cacheWriteTokens: -5 }), 'not_a_count');
  });

  it('a fractional, NaN or infinite count is not a count', () => {
    assert.equal(faultOf({ inputTokens: 10.5, outputTokens: 3 }), 'not_a_count');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: 0.1 }), 'not_a_count');
    assert.equal(faultOf({ inputTokens: Number.NaN, outputTokens: 3 }), 'not_a_count');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: Number.POSITIVE_INFINITY }), 'not_a_count');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: 3, cacheReadTokens: Number.NaN }), 'not_a_count');
  });

  it('a count past what a double holds exactly (1e18) is not a count, whatever the bounds', () => {
    const huge = checkUsage({ inputTokens: 1e18, outputTokens: 0 }, { maxInputTokens: Number.MAX_VALUE, maxOutputTokens: 1 });
    assert.equal(huge.ok ? null : huge.fault, 'not_a_count');
  });

  it('input over the bound, output over the bound, and cache counts over the input are refused', () => {
    assert.equal(faultOf({ inputTokens: 1001, outputTokens: 3 }), 'input_over_bound');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: 101 }), 'output_over_bound');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: 3, cacheReadTokens: 11 }), 'cache_over_input');
    assert.equal(faultOf({ inputTokens: 10, outputTokens: 3, cacheReadTokens: 6, cacheWriteTokens: 5 }), 'cache_over_input');
  });

  it('usage exactly at every bound is sane and comes back as it is', () => {
    const atBounds: Usage = { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 600, cacheWriteTokens: 400 };
    assert.deepEqual(checkUsage(atBounds, BOUNDS), { ok: true, usage: atBounds });
    const zero: Usage = { inputTokens: 0, outputTokens: 0 };
    assert.deepEqual(checkUsage(zero, BOUNDS), { ok: true, usage: zero });
  });

  it("the fault's detail names the field and its value, and nothing else", () => {
    const checked = checkUsage({ inputTokens: -100000000, outputTokens: 3 }, BOUNDS);
    assert.ok(!checked.ok);
    assert.equal(checked.detail, 'inputTokens -100000000 is not a non-negative integer');
  });
});

describe('usageBounds: the bounds derived from the request', () => {
  it('input: the body size (at least 1 KiB) times 4096 tokens a byte', () => {
    assert.equal(usageBounds(0, 10).maxInputTokens, MIN_BOUNDED_BODY_BYTES * INPUT_TOKENS_PER_BODY_BYTE);
    assert.equal(usageBounds(100, 10).maxInputTokens, 4_194_304, 'a tiny body may still name a 4M-token context');
    assert.equal(usageBounds(1_000_000, 10).maxInputTokens, 1_000_000 * INPUT_TOKENS_PER_BODY_BYTE);
  });

  it("output: the request's cap plus the body's size (a predicted output), or 2^20 with no cap", () => {
    assert.equal(usageBounds(200, 500).maxOutputTokens, 700);
    assert.equal(usageBounds(200, 0).maxOutputTokens, 200);
    assert.equal(usageBounds(200, null).maxOutputTokens, MAX_OUTPUT_TOKENS_UNCAPPED);
  });

  it('output: every choice asked for (n, best_of) may use the whole cap, up to 128 choices', () => {
    assert.equal(usageBounds(200, 500, 3).maxOutputTokens, 1700);
    assert.equal(usageBounds(200, 500, 1e9).maxOutputTokens, 500 * MAX_CHOICES + 200);
    assert.equal(usageBounds(200, 500, 0).maxOutputTokens, 700, 'a nonsensical n counts as one');
  });

  it('a body bound and a cap of the worst kind are refused: 1e18 input and a 1000-token answer for max_tokens 10', () => {
    const bounds = usageBounds(300, 10);
    assert.equal(checkUsage({ inputTokens: 1e15, outputTokens: 5 }, bounds).ok, false);
    assert.equal(checkUsage({ inputTokens: 75, outputTokens: 1000 }, bounds).ok, false);
    assert.equal(checkUsage({ inputTokens: 75, outputTokens: 10 }, bounds).ok, true);
  });
});

describe('the usage readers hand every reported count on to the check', () => {
  it('a negative or fractional prompt count is read as reported, so settle can refuse it rather than bill it as none', () => {
    assert.equal(usageFromOpenai({ prompt_tokens: -1e8, completion_tokens: 3 })?.inputTokens, -1e8);
    assert.equal(usageFromResponses({ input_tokens: 2.5, output_tokens: 3 })?.inputTokens, 2.5);
    assert.equal(usageFromAnthropic({ input_tokens: -7, output_tokens: 3 })?.inputTokens, -7);
  });

  it('a negative output or cache count is read as reported too, not clamped into a cheaper sane-looking usage', () => {
    const openai = usageFromOpenai({ prompt_tokens: 10, completion_tokens: -1e8, prompt_tokens_details: { cached_tokens: -3 } });
    assert.deepEqual(openai, { inputTokens: 10, outputTokens: -1e8, cacheReadTokens: -3 });
    assert.equal(checkUsage(openai as Usage, BOUNDS).ok, false);
    const anthropic = usageFromAnthropic({ input_tokens: 10, output_tokens: 3, cache_read_input_tokens: -10 });
    assert.equal(checkUsage(anthropic as Usage, BOUNDS).ok, false, 'a negative cache read cannot hide inside a sane-looking input sum');
  });

  it('absent output and cache counts are zero; an absent input count is no usage', () => {
    assert.deepEqual(usageFromOpenai({ prompt_tokens: 5 }), { inputTokens: 5, outputTokens: 0 });
    assert.equal(usageFromOpenai({ completion_tokens: 5 }), null);
  });
});
