import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig } from '../support/gateway-process.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// GET /metrics of a real gateway process: the names it exports.

const resources = fileResources('switchyard-metrics-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('process metric names', () => {
  it('/metrics names process metrics switchyard_process_* (resident memory included), never switchyard_process_process_*', async () => {
    const gw = await resources.startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    const text = await scrapeMetrics(gw.url);
    assert.ok(
      metricValue(text, 'switchyard_process_resident_memory_bytes') !== undefined,
      'switchyard_process_resident_memory_bytes is exported',
    );
    const doubled = text.split('\n').filter((l) => l.includes('switchyard_process_process_'));
    assert.deepEqual(doubled, []);
  });
});
