import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelayMs, isRetryable } from '../../src/resilience/index.js';

// The retry rules of one candidate: which failures are tried again, and the fully jittered
// exponential backoff before each retry.

/** A seeded generator in [0, 1), so the spread is checked without flakiness. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('backoffDelayMs', () => {
  it('stays within [0, min(max, base * 2^retry)] for every retry', () => {
    const random = seeded(7);
    for (let retry = 0; retry < 40; retry++) {
      const cap = Math.min(2000, 100 * 2 ** retry);
      for (let i = 0; i < 200; i++) {
        const ms = backoffDelayMs(retry, 100, 2000, random);
        assert.ok(Number.isInteger(ms), `${ms} is a whole number of ms`);
        assert.ok(ms >= 0 && ms <= cap, `retry ${retry}: ${ms} outside [0, ${cap}]`);
      }
    }
  });

  it('is full jitter: the extremes of the random source give 0 and the cap', () => {
    assert.equal(
      backoffDelayMs(0, 100, 2000, () => 0),
      0,
    );
    assert.equal(
      backoffDelayMs(0, 100, 2000, () => 1 - 2 ** -53),
      100,
    );
    assert.equal(
      backoffDelayMs(2, 100, 2000, () => 1 - 2 ** -53),
      400,
    );
    assert.equal(
      backoffDelayMs(10, 100, 2000, () => 1 - 2 ** -53),
      2000,
      'capped at max_backoff_ms',
    );
  });

  it('spreads over the whole window rather than clustering at its top', () => {
    const random = seeded(42);
    const samples = Array.from({ length: 2000 }, () => backoffDelayMs(3, 100, 2000, random));
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    assert.ok(mean > 320 && mean < 480, `mean ${mean} is about half of the 800 ms window`);
    assert.ok(
      samples.some((s) => s < 80),
      'some waits are near 0',
    );
    assert.ok(
      samples.some((s) => s > 720),
      'some waits are near the cap',
    );
  });

  it('stays finite for a huge retry number', () => {
    assert.equal(
      backoffDelayMs(10_000, 100, 2000, () => 1 - 2 ** -53),
      2000,
    );
  });

  it('is 0 when backoff_ms is 0', () => {
    assert.equal(
      backoffDelayMs(5, 0, 0, () => 0.9),
      0,
    );
  });
});

describe('isRetryable', () => {
  it('retries connection errors, timeouts, 429 and 500, 502, 503, 504', () => {
    assert.equal(isRetryable('connect_error', undefined), true);
    assert.equal(isRetryable('timeout', undefined), true);
    assert.equal(isRetryable('status_429', 429), true);
    for (const status of [500, 502, 503, 504]) assert.equal(isRetryable('status_5xx', status), true, String(status));
  });

  it('does not retry a 501 or 505, nor a 5xx the gateway gave an answer it could not use', () => {
    assert.equal(isRetryable('status_5xx', 501), false);
    assert.equal(isRetryable('status_5xx', 505), false);
    assert.equal(isRetryable('status_5xx', undefined), false);
  });

  it('does not retry a refused credential, a missing one, or a fallback_on class', () => {
    assert.equal(isRetryable('status_auth', 401), false);
    assert.equal(isRetryable('status_auth', 403), false);
    assert.equal(isRetryable('credential_unavailable', undefined), false);
    assert.equal(isRetryable('context_length', 400), false);
    assert.equal(isRetryable('content_filter', 400), false);
  });
});
