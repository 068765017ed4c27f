import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { msText } from '../../src/request/access-line.js';

// The access line formats its durations from integers (record.ts); a reader of the log must
// see exactly what printing the duration rounded to the microsecond would show.

const asPrinted = (ms: number) => String(Math.round(ms * 1000) / 1000);

describe('access line durations', () => {
  it('print as the duration rounded to the microsecond, trailing zeros dropped', () => {
    for (const ms of [0, 0.0004, 0.0005, 0.001, 0.01, 0.1, 0.45, 1, 4.454, 4.45, 4.4, 10, 999.9999, 1000, 65_000.25]) {
      assert.equal(msText(ms), asPrinted(ms), `for ${ms}`);
    }
  });

  it('agree with the printed rounding over a sweep of random durations up to an hour', () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 200_000; i++) {
      const ms = next() * [10, 10_000, 3_600_000][i % 3]!;
      assert.equal(msText(ms), asPrinted(ms));
    }
  });

  it('fall back to plain printing outside the integer range (negative, huge, not a number)', () => {
    for (const ms of [-1.5, 3e9, Number.NaN, Number.POSITIVE_INFINITY]) assert.equal(msText(ms), asPrinted(ms));
  });
});
