import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, metricValue, scrapeMetrics } from '../support/observe.js';

// Fallback by error class (routing.routes.<model>.fallback_on), through a real gateway and
// the real mock provider: a 400 saying the prompt is too long, or refused by a content
// filter, moves on to the next candidate when the route lists that class, and is the
// client's answer as before when it does not; with no candidate left the client gets a 400
// with the upstream's words; the breaker does not count it.

const CONTEXT_MESSAGE = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.";
const openaiContext = {
  error: { message: CONTEXT_MESSAGE, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
};
const anthropicContext = {
  type: 'error',
  error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
};
const vllmContext = { object: 'error', message: CONTEXT_MESSAGE, type: 'BadRequestError', param: null, code: 400 };
const filtered = {
  error: {
    message: 'The response was filtered due to the prompt triggering content management policy.',
    type: null,
    param: 'prompt',
    code: 'content_filter',
  },
};

let east: MockProvider;
let west: MockProvider;
let gw: GatewayProcess;

describe('fallback by error class', () => {
  before(async () => {
    [east, west] = await Promise.all([startMockProvider({ name: 'east' }), startMockProvider({ name: 'west' })]);
    const both = [{ provider: 'east' }, { provider: 'west' }];
    const config = baseConfig(
      { east: east.baseUrl, west: west.baseUrl },
      {
        long: { fallback_on: ['context_length'], candidates: both },
        filtered: { fallback_on: ['content_filter'], candidates: both },
        either: { fallback_on: ['context_length', 'content_filter'], candidates: both },
        plain: { candidates: both },
        'east-only': { candidates: [{ provider: 'east' }] },
      },
      // One failure would open a breaker: a class fallback must not.
      { resilience: { breaker: { failure_threshold: 1 } } },
    );
    gw = await startGatewayProcess(config);
  });

  after(async () => {
    await gw?.stop();
    await Promise.all([east?.close(), west?.close()]);
  });

  beforeEach(() => {
    east.reset();
    west.reset();
  });

  it("OpenAI's context_length_exceeded on a route with fallback_on: [context_length] is served by the next candidate", async () => {
    east.addFault({ mode: 'status', status: 400, body: openaiContext, count: 1 });
    const before = await scrapeMetrics(gw.url);
    const requestId = `long-${Date.now()}`;
    const r = await postChat(gw.url, chatBody('long'), { 'x-request-id': requestId });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'west');
    assert.equal(r.headers.get('x-switchyard-fallback'), 'east');
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.deepEqual(line.fallback, ['east:context_length']);
    const after = await scrapeMetrics(gw.url);
    const count = (text: string): number =>
      metricValue(text, 'switchyard_fallbacks_total', { provider: 'east', reason: 'context_length' }) ?? 0;
    assert.equal(count(after) - count(before), 1);
  });

  it('a streamed request whose first candidate says the prompt is too long streams from the next', async () => {
    east.addFault({ mode: 'status', status: 400, body: openaiContext, count: 1 });
    const r = await postChat(gw.url, chatBody('long', { stream: true }));
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(r.headers.get('x-switchyard-provider'), 'west');
    assert.match(r.text, /data: \[DONE\]/);
  });

  it('the breaker does not count a class fallback: the provider answered', async () => {
    east.addFault({ mode: 'status', status: 400, body: openaiContext, count: 1 });
    assert.equal((await postChat(gw.url, chatBody('long'))).status, 200);
    // failure_threshold is 1: had the 400 counted, east's breaker would be open now.
    const r = await postChat(gw.url, chatBody('east-only'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'east');
  });

  it("Anthropic's and vLLM's wording of a prompt too long are recognised too", async () => {
    for (const body of [anthropicContext, vllmContext]) {
      east.reset();
      west.reset();
      east.addFault({ mode: 'status', status: 400, body, count: 1 });
      const r = await postChat(gw.url, chatBody('long'));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-switchyard-provider'), 'west', JSON.stringify(body));
    }
  });

  it('without fallback_on the same 400 reaches the client as 400 with the upstream message, and nobody else is asked', async () => {
    east.addFault({ mode: 'status', status: 400, body: openaiContext, count: 1 });
    const r = await postChat(gw.url, chatBody('plain'));
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json(), openaiContext, 'relayed as the upstream wrote it');
    assert.equal(r.headers.get('x-switchyard-provider'), 'east');
    assert.equal(chatCount(west), 0);
  });

  it('a route that lists another class relays the 400 as before', async () => {
    east.addFault({ mode: 'status', status: 400, body: openaiContext, count: 1 });
    const r = await postChat(gw.url, chatBody('filtered'));
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json(), openaiContext);
    assert.equal(chatCount(west), 0);
  });

  it('a 400 of no class is relayed on a route with fallback_on', async () => {
    const bad = { error: { message: 'bad temperature', type: 'invalid_request_error', param: 'temperature', code: 'bad_param' } };
    east.addFault({ mode: 'status', status: 400, body: bad, count: 1 });
    const r = await postChat(gw.url, chatBody('either'));
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json(), bad);
    assert.equal(chatCount(west), 0);
  });

  it('a content filter refusal on a route with fallback_on: [content_filter] is served by the next candidate', async () => {
    east.addFault({ mode: 'status', status: 400, body: filtered, count: 1 });
    const r = await postChat(gw.url, chatBody('filtered'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'west');
    assert.equal(r.headers.get('x-switchyard-fallback'), 'east');
  });

  it('when every candidate says the prompt is too long, the client gets 400 context_length_exceeded with the last upstream message', async () => {
    east.addFault({ mode: 'status', status: 400, body: openaiContext, count: 1 });
    west.addFault({ mode: 'status', status: 400, body: openaiContext, count: 1 });
    const r = await postChat(gw.url, chatBody('long'));
    assert.equal(r.status, 400, r.text);
    const body = r.json<{ error: { code: string; type: string; message: string } }>();
    assert.equal(body.error.code, 'context_length_exceeded');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /^provider "west" answered 400: This model's maximum context length is 8192 tokens/);
    assert.equal(chatCount(east), 1);
    assert.equal(chatCount(west), 1);
  });

  it('an Anthropic client whose every candidate was filtered gets a 400 invalid_request_error in its own shape', async () => {
    east.addFault({ mode: 'status', status: 400, body: filtered, count: 1 });
    west.addFault({ mode: 'status', status: 400, body: filtered, count: 1 });
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'filtered', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    assert.equal(res.status, 400, text);
    const body = JSON.parse(text) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /^provider "west" answered 400: The response was filtered/);
  });
});
