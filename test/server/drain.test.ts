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
