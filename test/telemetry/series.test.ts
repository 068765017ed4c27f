import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { CounterFamily, HistogramFamily } from '../../src/telemetry/series.js';

// The pre-bound series render exactly as prom-client's own types do for the same
// observations, so swapping them in changed nothing a scraper sees.

const BOUNDS = [0.001, 0.01, 0.1, 1, 10];
const OBSERVATIONS: Array<[string, string, number]> = [
  ['gpt-4o', 'east', 0.0004],
  ['gpt-4o', 'east', 0.001],
  ['gpt-4o', 'west', 0.05],
  ['llama', 'east', 3],
  ['gpt-4o', 'east', 12],
  ['llama', 'east', 0.01],
];

test('a histogram family renders like a prom-client histogram with the same observations', async () => {
  const ours = new Registry();
  const theirs = new Registry();
  const family = new HistogramFamily(ours, 'x_seconds', 'help text', ['model', 'provider'], BOUNDS);
  const reference = new Histogram({
    name: 'x_seconds',
    help: 'help text',
    labelNames: ['model', 'provider'],
    buckets: BOUNDS,
    registers: [theirs],
  });
  for (const [model, provider, v] of OBSERVATIONS) {
    family.series(model, provider).observe(v);
    reference.observe({ model, provider }, v);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
});

test('a counter family renders like a prom-client counter, one series per label values', async () => {
  const ours = new Registry();
  const theirs = new Registry();
  const family = new CounterFamily(ours, 'y_total', 'help', ['model', 'provider', 'status']);
  const reference = new Counter({ name: 'y_total', help: 'help', labelNames: ['model', 'provider', 'status'], registers: [theirs] });
  for (const [model, provider, v] of OBSERVATIONS) {
    family.series(model, provider, '200').inc(v);
    reference.inc({ model, provider, status: '200' }, v);
  }
  family.series('none', 'none', '404').inc();
  reference.inc({ model: 'none', provider: 'none', status: '404' });
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.equal(
    family.series('gpt-4o', 'east', '200'),
    family.series('gpt-4o', 'east', '200'),
    'the same label values give the same series',
  );
});
