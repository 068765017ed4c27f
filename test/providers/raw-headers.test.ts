import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  headerName,
  headerNameBytes,
  isRateLimitName,
  PASSED_HEADERS,
  passedName,
  rawHeaderValue,
} from '../../src/providers/raw-headers.js';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

describe('upstream header names matched as bytes', () => {
  it('finds every allow-listed name in any case, spelled as the allow-list spells it', () => {
    for (const name of PASSED_HEADERS) {
      assert.equal(passedName(b(name)), name);
      assert.equal(passedName(b(name.toUpperCase())), name);
      const mixed = name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
      assert.equal(passedName(b(mixed)), name, mixed);
    }
  });

  it('refuses names of the same length that differ, including in a byte that folds onto a dash', () => {
    for (const other of ['content-typf', 'x-request-ie', 'content-length', 'set-cookie', 'connection', 'date', '']) {
      assert.equal(passedName(b(other)), null, other);
    }
    // 0x0d | 0x20 is '-': only A-Z are folded, so this is not "content-type".
    assert.equal(passedName(b('content\rtype')), null);
  });

  it('knows the rate-limit families: x-ratelimit-*, anthropic-ratelimit-*, ratelimit, ratelimit-policy', () => {
    for (const name of [
      'x-ratelimit-remaining-requests',
      'X-RateLimit-Reset-Tokens',
      'anthropic-ratelimit-requests-remaining',
      'Anthropic-RateLimit-Tokens-Limit',
      'ratelimit',
      'RateLimit-Policy',
    ]) {
      assert.equal(isRateLimitName(b(name)), true, name);
    }
    for (const name of ['x-rate-limit', 'ratelimits', 'ratelimit-policies', 'x-ratelimi', 'openai-processing-ms']) {
      assert.equal(isRateLimitName(b(name)), false, name);
    }
  });

  it("reads a header's first value from the raw list, the name in any case", () => {
    const raw = ['Date', 'today', 'Content-Type', 'text/event-stream', 'content-type', 'second', 'Retry-After', '3'].map(b);
    assert.equal(rawHeaderValue(raw, headerNameBytes('content-type')), 'text/event-stream');
    assert.equal(rawHeaderValue(raw, headerNameBytes('Retry-After')), '3');
    assert.equal(rawHeaderValue(raw, headerNameBytes('x-request-id')), undefined);
    assert.equal(headerName(b('X-RateLimit-Limit-Requests')), 'x-ratelimit-limit-requests');
  });
});
