import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProviderHealth } from '../../src/publisher/index.js';

const at = new Date(0);

test('health has hysteresis: unhealthy_after failures withdraw, healthy_after successes restore', () => {
  const h = new ProviderHealth({ unhealthy_after: 2, healthy_after: 3 });
  assert.equal(h.verdict, 'unknown');
  assert.equal(h.record(true, at), true, 'the first success at start-up makes it healthy');
  assert.equal(h.verdict, 'healthy');
  assert.equal(h.record(false, at, 'ECONNREFUSED'), false, 'one failure is not enough');
  assert.equal(h.record(true, at), false);
  h.record(false, at, 'ECONNREFUSED');
  assert.equal(h.record(false, at, 'HTTP 503'), true);
  assert.equal(h.verdict, 'unhealthy');
  assert.deepEqual(h.snapshot().last_error, { at: at.toISOString(), message: 'HTTP 503' });
  h.record(true, at);
  h.record(true, at);
  assert.equal(h.verdict, 'unhealthy', 'two successes of three are not enough');
  assert.equal(h.record(true, at), true);
  assert.equal(h.verdict, 'healthy');
});

test('a provider never healthy at start-up stays unpublished: unknown, then unhealthy', () => {
  const h = new ProviderHealth({ unhealthy_after: 2, healthy_after: 1 });
  h.record(false, at, 'ECONNREFUSED');
  assert.equal(h.verdict, 'unknown');
  h.record(false, at, 'ECONNREFUSED');
  assert.equal(h.verdict, 'unhealthy');
});
