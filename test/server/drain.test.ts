import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { baseConfig } from '../support/gateway-process.js';
import { chatBody } from '../support/http.js';
import { connectionRefused, SseReader, waitUntil } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// The drain of a real gateway process after SIGTERM. Order is observed (log lines, refused
// connections, stream events), never elapsed time.

const resources = fileResources('switchyard-drain-');

describe('SIGHUP during the drain', () => {
  it('a SIGHUP after SIGTERM does not kill the draining process: the stream ends with [DONE] and the exit code is 0', async () => {
    const streamer = await resources.startMock({ name: 'streamer', streamChunks: 30, streamChunkDelayMs: 100 });
    const gw = await resources.startGw(
      baseConfig(
        { streamer: streamer.baseUrl },
        { m: { candidates: [{ provider: 'streamer' }] } },
        { server: { drain_timeout_ms: 20_000 } },
      ),
    );
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chatBody('m', { stream: true }),
    });
    assert.equal(res.status, 200);
    const reader = new SseReader(res);
    assert.notEqual(await reader.next(), null, 'the first event arrived');

    gw.child.kill('SIGTERM');
    await gw.waitForLog((l) => l.msg === 'shutting down');
    // Refused connections prove the drain is under way (past the point where it stops listening).
    await waitUntil(() => connectionRefused(gw.url), 'new connections are refused');
    assert.equal(reader.ended, false, 'the stream is still in flight when SIGHUP is sent');
    gw.child.kill('SIGHUP');

    const rest = await reader.rest();
    assert.equal(reader.error, undefined, `the stream was cut: ${String(reader.error)}`);
    assert.equal(rest.at(-1), '[DONE]');
    const code = await gw.exited;
    assert.equal(gw.child.signalCode, null, `killed by ${gw.child.signalCode}`);
    assert.equal(code, 0);
  });
});

describe('the drain Kubernetes expects', () => {
  it('with drain_delay_ms, /readyz answers 503 at once while new work is still served, with Connection: close; then the listener stops accepting and the process exits 0', async () => {
    const mock = await resources.startMock({ name: 'east' });
    const gw = await resources.startGw(
      baseConfig({ east: mock.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }, { server: { drain_delay_ms: 1500 } }),
    );
    assert.equal((await fetch(`${gw.url}/readyz`)).status, 200);
    gw.child.kill('SIGTERM');
    await gw.waitForLog((l) => l.msg === 'drain delay: still accepting, /readyz answers 503');
    const ready = await fetch(`${gw.url}/readyz`, { headers: { connection: 'close' } });
    assert.equal(ready.status, 503, 'not ready as soon as the drain starts');
    const served = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chatBody('m'),
    });
    assert.equal(served.status, 200, 'new work during the delay is still served');
    assert.equal(served.headers.get('connection'), 'close');
    await served.text();
    await waitUntil(() => connectionRefused(gw.url), 'after the delay, new connections are refused');
    assert.equal(await gw.exited, 0);
  });

  it('a stream still open when drain_timeout_ms runs out ends with the SSE error event, not a cut; the process exits 0', async () => {
    const streamer = await resources.startMock({ name: 'streamer', streamChunks: 100, streamChunkDelayMs: 100 });
    const gw = await resources.startGw(
      baseConfig({ streamer: streamer.baseUrl }, { m: { candidates: [{ provider: 'streamer' }] } }, { server: { drain_timeout_ms: 300 } }),
    );
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chatBody('m', { stream: true }),
    });
    const reader = new SseReader(res);
    assert.notEqual(await reader.next(), null, 'the stream has started');
    gw.child.kill('SIGTERM');
    const rest = await reader.rest();
    assert.equal(reader.error, undefined, `the stream was cut: ${String(reader.error)}`);
    const last = JSON.parse(rest.at(-1) as string) as { error: { code: string; message: string } };
    assert.equal(last.error.code, 'stream_interrupted');
    assert.match(last.error.message, /drain_timeout_ms \(300 ms\) ran out/);
    assert.equal(await gw.exited, 0);
  });
});
