import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig } from '../support/gateway-process.js';
import { metricValue, scrapeMetrics, waitUntil } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// A client that goes away before its request body is complete, against a real gateway
// process: no error is logged, and the request is counted as 499.

const resources = fileResources('switchyard-disconnect-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('a client that leaves mid-upload', () => {
  it('an upload cut before its declared length logs no error and is counted as status 499', async () => {
    const gw = await resources.startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    const { hostname, port } = new URL(gw.url);
    const uploads = [
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model":"',
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{"mod\r\n',
    ];
    for (const head of uploads) {
      const socket = connect(Number(port), hostname);
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      await new Promise<void>((resolve) => socket.write(head, () => resolve()));
      // Give the gateway a moment to parse the head before the connection goes away.
      await delay(200);
      socket.destroy();
    }
    let count = 0;
    await waitUntil(
      async () => {
        count = metricValue(await scrapeMetrics(gw.url), 'switchyard_requests_total', { status: '499' }) ?? 0;
        return count >= 2;
      },
      'two requests counted with status 499',
      5_000,
    ).catch((err: unknown) => {
      throw new Error(
        `${(err as Error).message} (counted: ${count}); log: ${JSON.stringify(gw.logs().filter((l) => l.level !== 'info')).slice(0, 800)}`,
      );
    });
    const errors = gw.logs().filter((l) => l.level === 'error' || l.level === 'fatal');
    assert.deepEqual(errors, []);
  });
});
