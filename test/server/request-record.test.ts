import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody } from '../support/http.js';

// Every request the API listener answers is recorded exactly once, where its response
// ends, whatever answered it: one access line and one count in switchyard_requests_total.
// Probes and scrapes are not requests worth a record.

let mock: MockProvider;
let gw: GatewayProcess;

before(async () => {
  mock = await startMockProvider({ name: 'east', port: 0 });
  gw = await startGatewayProcess(
    baseConfig({ east: mock.baseUrl }, { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } }, { server: { max_body_bytes: 512 } }),
  );
});

after(async () => {
  await gw?.stop();
  await mock?.close();
});

async function send(method: string, path: string, body: string | undefined, requestId: string): Promise<Response> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { 'content-type': 'application/json', 'x-request-id': requestId }, body });
  await res.arrayBuffer();
  return res;
}

async function linesFor(requestId: string): Promise<Array<Record<string, unknown>>> {
  await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId, 5000);
  // The access log is flushed in batches: a second line, if there were one, would be in the same or an earlier batch.
  await new Promise((r) => setTimeout(r, 400));
  return gw.logs().filter((l) => l.msg === 'request' && l.request_id === requestId);
}

describe('one record per finished request', () => {
  const rows = [
    {
      name: 'a served chat completion',
      method: 'POST',
      path: '/v1/chat/completions',
      body: chatBody('gpt-4o-mini'),
      status: 200,
      reason: undefined,
    },
    { name: 'invalid JSON (400)', method: 'POST', path: '/v1/chat/completions', body: '{"model":', status: 400, reason: 'invalid_json' },
    {
      name: 'an unrouted model (404)',
      method: 'POST',
      path: '/v1/chat/completions',
      body: chatBody('no-such-model'),
      status: 404,
      reason: 'model_not_found',
    },
    {
      name: 'a body over max_body_bytes (413)',
      method: 'POST',
      path: '/v1/chat/completions',
      body: chatBody('gpt-4o-mini', { pad: 'x'.repeat(2000) }),
      status: 413,
      reason: 'body_too_large',
    },
    { name: 'an unknown path (404)', method: 'GET', path: '/v2/nothing', body: undefined, status: 404, reason: 'not_found' },
    {
      name: 'a wrong method (405)',
      method: 'GET',
      path: '/v1/chat/completions',
      body: undefined,
      status: 405,
      reason: 'method_not_allowed',
    },
  ] as const;

  for (const [i, row] of rows.entries()) {
    it(`${row.name} gets exactly one access line with its status and reason`, async () => {
      const requestId = `record-${i}-${Date.now()}`;
      const res = await send(row.method, row.path, row.body, requestId);
      assert.equal(res.status, row.status);
      const lines = await linesFor(requestId);
      assert.equal(lines.length, 1, `one access line for ${row.name}, got ${lines.length}`);
      const line = lines[0] as Record<string, unknown>;
      assert.equal(line.status, row.status);
      assert.equal(line.reason, row.reason);
      assert.equal(typeof line.duration_ms, 'number');
    });
  }

  it('a model a client invents is not a metric label: refusals count under model "none"', async () => {
    await send('POST', '/v1/chat/completions', chatBody('invented-model-name-42'), `label-${Date.now()}`);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.ok(!metrics.includes('invented-model-name-42'), 'the invented model name became a label');
    assert.match(
      metrics,
      /switchyard_requests_total\{model="none",provider="none",status="404",team="none",endpoint="\/v1\/chat\/completions"\} \d+/,
    );
  });

  it('a hostile model name stays inside its JSON string: one valid access line', async () => {
    const requestId = `hostile-${Date.now()}`;
    const model = 'evil"},{"status":200,"x":"\n\u2028\\';
    await send('POST', '/v1/chat/completions', chatBody(model), requestId);
    const lines = await linesFor(requestId);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.model, model);
    assert.equal(lines[0]?.status, 404);
  });

  it('probes and scrapes are not recorded', async () => {
    const first = `marker-a-${Date.now()}`;
    await send('GET', '/v2/marker', undefined, first);
    await linesFor(first);
    const before = gw.logs().filter((l) => l.msg === 'request').length;
    for (const path of ['/healthz', '/readyz', '/metrics']) await send('GET', path, undefined, `probe-${Date.now()}`);
    const marker = `marker-b-${Date.now()}`;
    await send('GET', '/v2/marker', undefined, marker);
    await linesFor(marker);
    const after = gw.logs().filter((l) => l.msg === 'request').length;
    assert.equal(after - before, 1, 'only the marker request was recorded');
  });

  it('every sink took every record above: no sink failed, and no phase of a record was written out of order', async () => {
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.doesNotMatch(metrics, /switchyard_record_sink_errors_total\{[^}]*\} [1-9]/);
    const problems = gw
      .logs()
      .filter((l) => l.msg === 'a record sink failed; the request was answered and its other sinks took its record');
    assert.deepEqual(problems, []);
    const misordered = gw.logs().filter((l) => JSON.stringify(l).includes('request record: '));
    assert.deepEqual(misordered, []);
  });
});

describe('endpoint tables', () => {
  it('a wrong method on the API listener is 405 with Allow, in the OpenAI error shape', async () => {
    const res = await fetch(`${gw.url}/v1/models`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET');
    const body = (await res.json()) as { error: { code: string } };
    assert.equal(body.error.code, 'method_not_allowed');
  });

  it('a wrong method on a prefix endpoint (/v1/models/{id}) is 405 with Allow', async () => {
    const res = await fetch(`${gw.url}/v1/models/gpt-4o-mini`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET');
  });

  it('a wrong method on the admin listener is 405 with Allow; an unknown admin path is 404', async () => {
    const reload = await fetch(`${gw.adminUrl}/admin/reload`);
    assert.equal(reload.status, 405);
    assert.equal(reload.headers.get('allow'), 'POST');
    assert.equal(((await reload.json()) as { error: { code: string } }).error.code, 'method_not_allowed');
    const unknown = await fetch(`${gw.adminUrl}/admin/nothing`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'not_found');
  });
});
