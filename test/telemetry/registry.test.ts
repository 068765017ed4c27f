import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Gauge, register as globalRegistry, Histogram, Registry } from 'prom-client';
import { addProcessMetrics, counter, gauge, histogram } from '../../src/telemetry/index.js';

// The helpers are prom-client's own types, built into the registry they are given: what they
// render is what a hand-built series renders, and nothing reaches the global registry.

test('series built by the helpers render exactly as prom-client built by hand, in the given registry only', async () => {
  const globalBefore = globalRegistry.getMetricsAsArray().length;
  const ours = new Registry();
  const theirs = new Registry();
  const registers = [theirs];

  counter(ours, 't_requests_total', 'Requests.', ['model']).inc({ model: 'a' }, 2);
  new Counter({ name: 't_requests_total', help: 'Requests.', labelNames: ['model'], registers }).inc({ model: 'a' }, 2);
  gauge(ours, 't_generation', 'Generation.').set(3);
  new Gauge({ name: 't_generation', help: 'Generation.', registers }).set(3);
  histogram(ours, 't_seconds', 'Time.', [0.1, 1]).observe(0.5);
  new Histogram({ name: 't_seconds', help: 'Time.', buckets: [0.1, 1], registers }).observe(0.5);
  gauge(ours, 't_scraped', 'Read at scrape.', ['provider'], function () {
    this.set({ provider: 'east' }, 1);
  });
  new Gauge({
    name: 't_scraped',
    help: 'Read at scrape.',
    labelNames: ['provider'],
    registers,
    collect() {
      this.set({ provider: 'east' }, 1);
    },
  });

  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.equal(globalRegistry.getMetricsAsArray().length, globalBefore);
});

test("process series come after the application's, under the prefix", async () => {
  const r = new Registry();
  counter(r, 't_app_total', 'App.');
  addProcessMetrics(r, 't_');
  const names = r.getMetricsAsArray().map((m) => m.name);
  assert.equal(names[0], 't_app_total');
  assert.ok(names.length > 1 && names.slice(1).every((n) => n.startsWith('t_')));
});
