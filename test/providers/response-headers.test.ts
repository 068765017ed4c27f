import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ClientHeaders, responseHeaders } from '../../src/providers/response-headers.js';

const raw = (...pairs: string[]): Buffer[] => pairs.map((s) => Buffer.from(s, 'latin1'));

const UPSTREAM = raw(
  'Content-Type',
  'application/json',
  'Set-Cookie',
  'secret=1',
  'x-ratelimit-remaining-requests',
  '9',
  'openai-processing-ms',
  '12',
  'x-request-id',
  'a',
  'X-Request-Id',
  'b',
);

const client: ClientHeaders = {
  attribution: ['x-switchyard-provider', 'east'],
  own: ['x-switchyard-request-id', 'r1'],
};

describe("the client's response headers", () => {
  it('are the allowed upstream ones in their order (repeats kept), then attribution, own, and the usage headers', () => {
    assert.deepEqual(responseHeaders(UPSTREAM, client, { 'x-switchyard-cost-usd': '0.000010' }), [
      'content-type',
      'application/json',
      'x-ratelimit-remaining-requests',
      '9',
      'x-request-id',
      'a',
      'x-request-id',
      'b',
      'x-switchyard-provider',
      'east',
      'x-switchyard-request-id',
      'r1',
      'x-switchyard-cost-usd',
      '0.000010',
    ]);
  });

  it("leave the provider's rate-limit headers out when a gateway limit sends its own", () => {
    const out = responseHeaders(UPSTREAM, { ...client, limitsReplaced: true }, null);
    assert.ok(!out.includes('x-ratelimit-remaining-requests'), out.join(','));
  });

  it("pass the provider's expose_headers, and nothing else it sends", () => {
    const out = responseHeaders(UPSTREAM, { ...client, expose: new Set(['openai-processing-ms']) }, null);
    assert.deepEqual(out.slice(4, 6), ['openai-processing-ms', '12']);
    assert.ok(!out.includes('set-cookie') && !out.includes('Set-Cookie'));
  });

  it('drop the upstream content type for a body the gateway wrote itself', () => {
    const out = responseHeaders(UPSTREAM, client, null, true);
    assert.ok(!out.includes('content-type'), out.join(','));
  });
});
