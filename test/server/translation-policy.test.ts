import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';

// The translation policy at the request path: a candidate that cannot take a request is
// skipped like an open breaker, dropped hints are listed on the answer and the access line,
// and `translation: strict` turns a drop into "cannot take". Real gateway, real mocks.

let oaiMock: MockProvider;
let anthMock: MockProvider;
let gw: GatewayProcess;

const hi = [{ role: 'user', content: 'hello' }];

async function chat(body: Record<string, unknown>): Promise<{ status: number; headers: Headers; json: Record<string, any> }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, any> };
}

function accessLine(headers: Headers): Promise<Record<string, unknown>> {
  const id = headers.get('x-switchyard-request-id');
  return gw.waitForLog((l) => l.msg === 'request' && l.request_id === id);
}

describe('the translation policy on the request path', () => {
  before(async () => {
    oaiMock = await startMockProvider({ name: 'oai' });
    anthMock = await startMockProvider({ name: 'anth' });
    gw = await startGatewayProcess({
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
      providers: {
        oai: { type: 'openai', base_url: oaiMock.baseUrl, timeout_ms: 5000 },
        anth: { type: 'anthropic', base_url: anthMock.baseUrl, timeout_ms: 5000 },
      },
      routing: {
        routes: {
          // Claude first, GPT behind it: a request only GPT can take skips Claude.
          'claude-first': {
            candidates: [
              { provider: 'anth', model: 'claude-sonnet-4-5' },
              { provider: 'oai', model: 'gpt-4o' },
            ],
          },
          'gpt-ha': {
            candidates: [
              { provider: 'oai', model: 'gpt-4o' },
              { provider: 'anth', model: 'claude-sonnet-4-5' },
            ],
          },
          'claude-only': { candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
          'claude-strict': { translation: 'strict', candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
          'strict-ha': {
            translation: 'strict',
            candidates: [
              { provider: 'anth', model: 'claude-sonnet-4-5' },
              { provider: 'oai', model: 'gpt-4o' },
            ],
          },
        },
      },
    });
  });

  after(async () => {
    await gw?.stop();
    await oaiMock?.close();
    await anthMock?.close();
  });

  beforeEach(() => {
    oaiMock.reset();
    anthMock.reset();
  });

  it('an outage of the first candidate with a seed in the request is answered 200 by the second, the seed dropped and listed', async () => {
    oaiMock.addFault({ mode: 'status', status: 503, count: 1 });
    const r = await chat({ model: 'gpt-ha', messages: hi, seed: 42, max_tokens: 50 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.choices[0].message.content, 'Hello from anth.');
    assert.equal(r.headers.get('x-switchyard-provider'), 'anth');
    assert.equal(r.headers.get('x-switchyard-dropped'), 'seed');
    const line = await accessLine(r.headers);
    assert.deepEqual(line.fallback, ['oai:status_5xx']);
    assert.deepEqual(line.dropped, ['seed']);
    const sent = JSON.parse(anthMock.stats().recent.at(-1)?.body ?? '{}');
    assert.equal('seed' in sent, false);
  });

  it('a candidate that cannot take the request (n: 2) is skipped, listed as provider:unable:field, and the next serves it untouched', async () => {
    const r = await chat({ model: 'claude-first', messages: hi, n: 2 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.headers.get('x-switchyard-provider'), 'oai');
    assert.equal(r.headers.get('x-switchyard-dropped'), null, 'same protocol: nothing dropped');
    assert.equal(anthMock.stats().total, 0, 'nothing was sent to the candidate that could not take it');
    assert.equal(JSON.parse(oaiMock.stats().recent.at(-1)?.body ?? '{}').n, 2);
    const line = await accessLine(r.headers);
    assert.deepEqual(line.fallback, ['anth:unable:n']);
    assert.equal(line.dropped, undefined);
    const metrics = await scrapeMetrics(gw.adminUrl as string);
    assert.ok((metricValue(metrics, 'switchyard_fallbacks_total', { provider: 'anth', reason: 'unable' }) ?? 0) >= 1);
  });

  it('when no candidate can take the request, the client gets a 400 naming the field, in its protocol', async () => {
    const r = await chat({ model: 'claude-only', messages: hi, logprobs: true });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'logprobs');
    assert.deepEqual((await accessLine(r.headers)).fallback, ['anth:unable:logprobs']);
    assert.match(r.json.error.message, /logprobs/);
    assert.equal(anthMock.stats().total, 0);
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'gpt-ha', max_tokens: 10, messages: hi, container: 'c-1' }),
    });
    // gpt-ha has a Claude candidate, which takes `container` as it is.
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-switchyard-provider'), 'anth');
  });

  it('when one candidate cannot take the request and the other fails, the client hears the failure, not a 400', async () => {
    oaiMock.addFault({ mode: 'status', status: 503, count: 1 });
    const r = await chat({ model: 'claude-first', messages: hi, n: 2 });
    assert.equal(r.status, 503, JSON.stringify(r.json));
    // The gateway's own error carries the request id, as every answer does: the access line is found by it.
    const line = await accessLine(r.headers);
    assert.equal(line.status, 503);
    assert.deepEqual(line.fallback, ['anth:unable:n', 'oai:status_5xx']);
  });

  it('strict translation refuses what lenient would drop: a 400 naming the field when no other candidate can take it', async () => {
    const r = await chat({ model: 'claude-strict', messages: hi, seed: 1 });
    assert.equal(r.status, 400, JSON.stringify(r.json));
    assert.equal(r.json.error.param, 'seed');
    assert.match(r.json.error.message, /strict/);
    const clamped = await chat({ model: 'claude-strict', messages: hi, temperature: 1.5 });
    assert.equal(clamped.status, 400);
    assert.equal(clamped.json.error.param, 'temperature');
    const fine = await chat({ model: 'claude-strict', messages: hi, temperature: 0.5 });
    assert.equal(fine.status, 200);
  });

  it('strict translation skips to a candidate of the client’s own protocol, which takes the field as it is', async () => {
    const r = await chat({ model: 'strict-ha', messages: hi, seed: 9 });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-switchyard-provider'), 'oai');
    assert.equal(JSON.parse(oaiMock.stats().recent.at(-1)?.body ?? '{}').seed, 9);
    assert.deepEqual((await accessLine(r.headers)).fallback, ['anth:unable:seed']);
  });

  it('a malformed field is the client’s 400 at once, whatever the candidates', async () => {
    const r = await chat({ model: 'claude-first', messages: hi, reasoning_effort: 'extreme' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'reasoning_effort');
    assert.equal(oaiMock.stats().total, 0);
  });
});
