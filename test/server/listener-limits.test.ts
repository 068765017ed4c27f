import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// Listener limits (ADR 0013): a client that trickles its headers or its body is cut at the configured
// limit on both listeners, and a listener holds at most server.max_connections. The bounds
// below only tell "cut at the limit" (about a second) from "held for Node's defaults" (a
// minute or more); they are not timings.

const resources = fileResources('switchyard-listener-limits-');
const CUT_WITHIN_MS = 8000;

let east: MockProvider;
let gw: GatewayProcess;

before(async () => {
  east = await resources.startMock({ name: 'east' });
  gw = await resources.startGw(
    baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      { server: { headers_timeout_ms: 500, body_timeout_ms: 1000, max_connections: 4 } },
    ),
  );
});

function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), hostname, () => resolve(s));
    s.once('error', reject);
  });
}

/** Writes `chunks` one every `everyMs` until the socket closes; resolves with what it answered and when. */
function trickle(s: Socket, head: string, chunks: string, everyMs: number): Promise<{ answer: string; afterMs: number }> {
  const started = Date.now();
  let answer = '';
  s.setEncoding('utf8');
  s.on('data', (d: string) => {
    answer += d;
  });
  s.on('error', () => undefined);
  s.write(head);
  let i = 0;
  const timer = setInterval(() => {
    if (s.destroyed || i >= chunks.length) return;
    s.write(chunks[i] as string);
    i += 1;
  }, everyMs);
  return new Promise((resolve) => {
    const done = setTimeout(() => s.destroy(), CUT_WITHIN_MS + 2000);
    s.on('close', () => {
      clearInterval(timer);
      clearTimeout(done);
      resolve({ answer, afterMs: Date.now() - started });
    });
  });
}

const slowHeaders = 'X-Slow: '.padEnd(400, 'a');
const body = chatBody('m');

for (const listener of ['api', 'admin'] as const) {
  describe(`the ${listener} listener`, () => {
    const base = () => (listener === 'api' ? gw.url : (gw.adminUrl as string));
    const path = listener === 'api' ? '/v1/chat/completions' : '/admin/reload';

    it('cuts a client that trickles its headers at server.headers_timeout_ms', async () => {
      const s = await open(base());
      const r = await trickle(s, `POST ${path} HTTP/1.1\r\nHost: x\r\n`, slowHeaders, 100);
      assert.ok(r.afterMs < CUT_WITHIN_MS, `held ${r.afterMs} ms`);
      assert.match(r.answer, /^HTTP\/1\.1 408/);
    });

    it('cuts a client that trickles its body at server.body_timeout_ms, before acting on it', async () => {
      const s = await open(base());
      const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
      const r = await trickle(s, head, body, 100);
      assert.ok(r.afterMs < CUT_WITHIN_MS, `held ${r.afterMs} ms`);
      assert.doesNotMatch(r.answer, /HTTP\/1\.1 200/, 'nothing was served for a body that never arrived');
    });
  });
}

describe('server.max_connections', () => {
  it('a listener holds at most max_connections; the next one is closed at once, and a freed slot serves again', async () => {
    const held = await Promise.all([open(gw.url), open(gw.url), open(gw.url), open(gw.url)]);
    const extra = await open(gw.url);
    const closed = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), CUT_WITHIN_MS);
      extra.on('close', () => {
        clearTimeout(t);
        resolve(true);
      });
      extra.on('error', () => undefined);
      extra.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    });
    assert.ok(closed, 'the fifth connection was closed');
    for (const s of held) s.destroy();
    // The slots are free again once the server has seen the closes.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i += 1) {
      status = (await postChat(gw.url, body).catch(() => ({ status: 0 }))).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 200);
  });
});
