import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import type { GenerationCandidate } from '../../src/live/index.js';
import type { Relayed } from '../../src/providers/index.js';
import { Exchange } from '../../src/request/index.js';
import { chainOf, keyringFor, modelRequest, ResponseDouble, staticGeneration } from './chain-fixture.js';

// The record of a request is written once per phase, in the phases' order, by the step
// that owns each phase; a write out of order, or a second write of a phase that runs once,
// is a programming error and throws where it happens. Ended, the record is frozen.

const gen = staticGeneration();
const [c0, c1] = chainOf(gen, 'm') as [GenerationCandidate, GenerationCandidate];
const principal = { keyId: 'k1', team: 'platform' };

function exchange(onRecord: (x: Exchange) => void = () => undefined): { x: Exchange; res: ResponseDouble } {
  const res = new ResponseDouble();
  const req = { headers: {}, url: '/v1/chat/completions', method: 'POST' } as unknown as IncomingMessage;
  return { x: new Exchange(req, res as unknown as ServerResponse, onRecord), res };
}

const relayed: Relayed = { outcome: 'complete', firstByteAt: null, usage: { inputTokens: 5, outputTokens: 7 }, events: 0 };

/** A served model request's phases, in order, as the listener, admission, the chain and settle write them. */
function served(x: Exchange): void {
  x.matched({ path: '/v1/chat/completions', operation: 'chat', protocol: 'openai' }, null);
  x.captured(gen, keyringFor(gen));
  x.authenticated(principal);
  x.asked(modelRequest(gen, 'm', { principal }));
  x.admitted();
  x.attemptStarted(null);
  x.failedOver({ provider: 'p0', candidate: 'c0', reason: 'status_5xx', detail: '' });
  x.attemptStarted(['temperature']);
  x.committed(c1);
  x.headersArrived(performance.now());
  x.relayed(relayed, relayed.usage);
  x.metered(relayed.usage, false);
  x.settled(12, false);
}

describe('the request record', () => {
  it('takes a served request phase by phase, in order, and is ended once with what each phase wrote', () => {
    let recorded = 0;
    const { x, res } = exchange(() => (recorded += 1));
    served(x);
    res.end('{}');
    x.done();
    assert.equal(recorded, 0, 'not before both the response closed and the handler is done');
    x.done();
    assert.equal(recorded, 1);
    assert.equal(x.ended, true);
    assert.equal(x.status, 200);
    assert.equal(x.statusCode, 200);
    assert.equal(x.endpoint, '/v1/chat/completions');
    assert.equal(x.routedModel, 'm');
    assert.deepEqual(x.principal, principal);
    assert.equal(x.failures.length, 1);
    assert.deepEqual(x.dropped, ['temperature'], 'the last attempt’s translation');
    assert.deepEqual(x.usage, { inputTokens: 5, outputTokens: 7 });
    assert.equal(x.costMicroUsd, 12);
    assert.equal(x.isAdmitted, true);
    assert.ok(x.durationMs >= 0);
  });

  it('an ended record is frozen: every phase write throws', () => {
    const { x, res } = exchange();
    served(x);
    res.end('{}');
    x.done();
    x.done();
    assert.throws(() => x.failed('internal_error'), /phase failed written after ended/);
    assert.throws(() => x.speaks('anthropic'), /after ended/);
    assert.throws(() => x.unrecorded(), /after ended/);
    assert.equal(x.reason, null);
    assert.equal(x.protocol, 'openai');
  });

  it('a phase that runs once, written twice, throws', () => {
    const { x } = exchange();
    x.matched({ path: '/v1/chat/completions' }, null);
    x.captured(gen, keyringFor(gen));
    assert.throws(() => x.captured(gen, keyringFor(gen)), /phase captured written twice/);
    x.authenticated(principal);
    x.asked(modelRequest(gen, 'm'));
    assert.throws(() => x.asked(modelRequest(gen, 'm')), /phase asked written twice/);
    x.admitted();
    x.committed(c0);
    assert.throws(() => x.committed(c0), /phase committed written twice/);
    x.relayed(relayed, null);
    assert.throws(() => x.relayed(relayed, null), /phase relayed written twice/);
  });

  it('a phase written after a later one throws, and leaves the record as it was', () => {
    const { x } = exchange();
    x.matched({ path: '/v1/chat/completions' }, null);
    x.captured(gen, keyringFor(gen));
    x.authenticated(principal);
    x.asked(modelRequest(gen, 'm'));
    x.admitted();
    x.committed(c0);
    assert.throws(
      () => x.failedOver({ provider: 'p', candidate: 'c', reason: 'timeout', detail: '' }),
      /phase attempted written after committed/,
    );
    assert.throws(() => x.attemptStarted(null), /phase attempted written after committed/);
    assert.throws(() => x.admitted(), /phase admitted written after committed/);
    assert.equal(x.failures.length, 0);
    x.failed('upstream_error');
    assert.throws(() => x.settled(1, false), /phase settled written after failed/);
    assert.equal(x.costMicroUsd, null);
  });

  it('the phases that repeat (an attempt per candidate, an event per write) repeat, in their place', () => {
    const { x } = exchange();
    x.matched({ path: '/mcp' }, null);
    x.captured(gen, keyringFor(gen));
    x.authenticated(principal);
    x.bodyRead(42);
    x.callStarted(true);
    x.toolCalled({ tool: 't', routed: true, candidate: null, outcome: 'result', reason: null, fallback: [], failedCandidates: [] });
    for (let i = 0; i < 3; i++) x.eventSent();
    assert.equal(x.events, 3);
    assert.equal(x.bodyBytes, 42);
    assert.equal(x.stream, true);
    assert.throws(() =>
      x.toolCalled({ tool: 't', routed: true, candidate: null, outcome: 'result', reason: null, fallback: [], failedCandidates: [] }),
    );
  });

  it('a refusal before routing goes from matched straight to failed and ended', () => {
    const { x, res } = exchange();
    x.matched({ path: '/v1/chat/completions' }, null);
    x.captured(gen, keyringFor(gen));
    x.failed('unauthorized');
    res.statusCode = 401;
    res.end('{}');
    x.done();
    x.done();
    assert.equal(x.status, 401);
    assert.equal(x.reason, 'unauthorized');
    assert.equal(x.routedModel, null);
  });
});
