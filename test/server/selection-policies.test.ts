import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, tally } from '../support/observe.js';

// Selection policies and pass-through, seen from outside: a real gateway process in front
// of three mock providers. Who served a request is read from x-switchyard-provider and
// cross-checked against what each mock counted.

const names = ['a', 'b', 'c'] as const;
let mocks: Record<(typeof names)[number], MockProvider>;
let gw: GatewayProcess;

function counts(): number[] {
  return names.map((n) => chatCount(mocks[n]));
}

/** Sends `n` requests for `model`, `batch` at a time, and returns who served each, in order. */
async function servedBy(model: string, n: number, batch = 1): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i += batch) {
    const replies = await Promise.all(Array.from({ length: Math.min(batch, n - i) }, () => postChat(gw.url, chatBody(model))));
    for (const r of replies) {
      assert.equal(r.status, 200, r.text);
      out.push(r.headers.get('x-switchyard-provider') ?? '(none)');
    }
  }
  return out;
}

describe('selection policies', () => {
  before(async () => {
    const started = await Promise.all(names.map((name) => startMockProvider({ name })));
    mocks = { a: started[0]!, b: started[1]!, c: started[2]! };
    const every = names.map((provider) => ({ provider }));
    gw = await startGatewayProcess(
      baseConfig(
        Object.fromEntries(names.map((n) => [n, mocks[n].baseUrl])),
        {
          'rr-model': { policy: 'round_robin', candidates: every },
          'weighted-model': {
            policy: 'weighted',
            candidates: [
              { provider: 'a', weight: 1 },
              { provider: 'b', weight: 2 },
              { provider: 'c', weight: 3 },
            ],
          },
          'random-model': { policy: 'random', candidates: every },
          'ordered-model': { policy: 'ordered', candidates: every },
          'alias-model': { policy: 'ordered', candidates: [{ provider: 'b', model: 'upstream-model-v2' }] },
        },
        { log: { level: 'info', access: false } },
      ),
    );
  });

  after(async () => {
    await gw?.stop();
    await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
  });

  beforeEach(() => {
    for (const m of Object.values(mocks)) m.reset();
  });

  it('round_robin gives exactly 20/20/20 over 60 requests in a strictly repeating cycle', async () => {
    const seq = await servedBy('rr-model', 60);
    assert.equal(
      new Set(seq.slice(0, 3)).size,
      3,
      `the first three requests go to three different providers: ${seq.slice(0, 3).join(',')}`,
    );
    for (let i = 3; i < seq.length; i++) assert.equal(seq[i], seq[i % 3], `request ${i} breaks the cycle: ${seq.join(',')}`);
    assert.deepEqual(tally(seq), { a: 20, b: 20, c: 20 });
    assert.deepEqual(counts(), [20, 20, 20], 'each mock received exactly 20 requests');
  });

  it('weighted spreads 300 requests by weight 1/2/3 (chi-squared goodness of fit, p = 0.001)', async () => {
    const seq = await servedBy('weighted-model', 300, 10);
    const observed = counts();
    assert.deepEqual(
      observed,
      names.map((n) => tally(seq)[n] ?? 0),
      'the mocks agree with the attribution headers',
    );
    assert.equal(
      observed.reduce((x, y) => x + y, 0),
      300,
    );
    const expected = [50, 100, 150];
    const chi2 = observed.reduce((sum, o, i) => sum + (o - expected[i]!) ** 2 / expected[i]!, 0);
    // Two degrees of freedom: P(chi2 > 13.816) = 0.001 when the weights are honoured.
    assert.ok(chi2 < 13.816, `chi2 = ${chi2.toFixed(2)} for observed ${observed.join('/')} vs expected 50/100/150`);
    // And not uniform: under 1/1/1 the heaviest candidate would get ~100, far from 150.
    assert.ok(observed[2]! > observed[0]!, `weight 3 gets more than weight 1: ${observed.join('/')}`);
  });

  it('random sends traffic to every candidate over 120 requests', async () => {
    const seq = await servedBy('random-model', 120, 10);
    const observed = counts();
    assert.deepEqual(
      observed,
      names.map((n) => tally(seq)[n] ?? 0),
      'the mocks agree with the attribution headers',
    );
    // P(some candidate gets nothing) = 3 * (2/3)^120, about 1e-21.
    for (const [i, n] of names.entries()) assert.ok(observed[i]! > 0, `${n} received no request: ${observed.join('/')}`);
  });

  it('ordered always sends to the first candidate while it is healthy', async () => {
    const seq = await servedBy('ordered-model', 20, 5);
    assert.deepEqual(tally(seq), { a: 20 });
    assert.deepEqual(counts(), [20, 0, 0]);
  });

  it('a candidate with a different upstream model rewrites only the model, and x-switchyard-model names it', async () => {
    const sent = { model: 'alias-model', temperature: 0.25, messages: [{ role: 'user', content: 'rewrite me' }], metadata: { tag: 'x' } };
    const r = await postChat(gw.url, JSON.stringify(sent));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'b');
    assert.equal(r.headers.get('x-switchyard-model'), 'upstream-model-v2');
    assert.equal(r.json().model, 'upstream-model-v2', 'the mock answered for the model it was asked for');
    const recent = mocks.b.stats().recent;
    assert.equal(recent.length, 1);
    const received = JSON.parse(recent[0]!.body) as Record<string, unknown>;
    assert.deepEqual(received, { ...sent, model: 'upstream-model-v2' });
  });

  it('when the model is unchanged the upstream receives the client body byte for byte', async () => {
    // Odd spacing, key order and escapes: any re-serialisation would change these bytes.
    const raw =
      '{ "messages" :[ {"content":"caf\\u00e9  \\/ \u00e9t\u00e9",   "role":"user"} ],\n\t"temperature" : 1.50,  "model":"ordered-model" , "n":1 }';
    const r = await postChat(gw.url, raw);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-model'), 'ordered-model');
    const recent = mocks.a.stats().recent;
    assert.equal(recent.length, 1);
    assert.equal(recent[0]!.body, raw);
  });

  it('x-switchyard-* headers sent by the client never reach the upstream', async () => {
    const r = await postChat(gw.url, chatBody('ordered-model'), {
      'x-switchyard-provider': 'forged',
      'x-switchyard-fallback': 'forged',
      'X-Switchyard-Debug': 'on',
      'x-switchyard-generation': '999',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'a', "the response attribution is the gateway's own");
    assert.equal(r.headers.get('x-switchyard-fallback'), null);
    const recent = mocks.a.stats().recent;
    assert.equal(recent.length, 1);
    const leaked = Object.keys(recent[0]!.headers).filter((h) => h.startsWith('x-switchyard-'));
    assert.deepEqual(leaked, [], `headers forwarded upstream: ${JSON.stringify(recent[0]!.headers)}`);
  });
});
