import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { startMockProvider } from '../../src/mock/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload, adminStatus } from '../support/admin.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics, SseReader, waitUntil, connectionRefused } from '../support/observe.js';
import { candidate } from '../support/overlay.js';
import { overlayConfig, adminStatus as overlayStatus } from '../support/overlay-gateway.js';

// Regressions from the code review, seen from outside a real gateway process: the request
// path (findings 6, 10, 12, 13, 14), the admin listener (2, 15) and the drain (11). Each
// describe names its finding. Order and counts are observed, never elapsed time.

const chatPath = 'POST /v1/chat/completions';

let east: MockProvider;
const cleanup: Array<() => Promise<unknown>> = [];
const dirs: string[] = [];

before(async () => {
  east = await startMockProvider({ name: 'east' });
});

after(async () => {
  // Gateways first (they hold connections to the mocks), then the mocks and servers.
  for (const close of cleanup.splice(0).reverse()) await close();
  await east?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function startGw(config: object | string, options: Parameters<typeof startGatewayProcess>[1] = {}): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(config, options);
  cleanup.push(() => gw.stop());
  return gw;
}

async function startMock(options: Parameters<typeof startMockProvider>[0]): Promise<MockProvider> {
  const mock = await startMockProvider(options);
  cleanup.unshift(() => mock.close());
  return mock;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'switchyard-review-'));
  dirs.push(d);
  return d;
}


function chatCount(m: MockProvider): number {
  return m.stats().requests[chatPath] ?? 0;
}

// ---------------------------------------------------------------------------------------

describe('finding 2: a non-loopback admin listener keeps its token across reloads', () => {
  it('a reload that drops server.admin_token is rejected at server.admin_token, and the admin API still answers 401 without the token', async () => {
    const dir = tempDir();
    const tokenFile = join(dir, 'admin-token');
    const token = 's3cret-admin-token-for-review';
    writeFileSync(tokenFile, `${token}\n`);
    const routes = { m: { candidates: [{ provider: 'east' }] } };
    const withToken = baseConfig({ east: east.baseUrl }, routes, { server: { admin_listen: '0.0.0.0:0', admin_token: { file: tokenFile } } });
    const withoutToken = baseConfig({ east: east.baseUrl }, routes, { server: { admin_listen: '0.0.0.0:0' } });
    const gw = await startGw(withToken, { dir });
    // Bound on every interface; talk to it over loopback.
    const admin = `http://127.0.0.1:${new URL(gw.adminUrl!).port}`;
    assert.equal((await adminStatus(admin)).status, 401, 'the token is required before the reload');

    gw.writeConfig(withoutToken);
    const reload = await adminReload(admin, token);
    assert.equal(reload.status, 422, reload.text);
    assert.equal(reload.body.result, 'rejected', reload.text);
    assert.ok(reload.body.errors.some((e) => e.path === 'server.admin_token'), `an error at server.admin_token: ${reload.text}`);

    assert.equal((await adminStatus(admin)).status, 401, 'GET /admin/status without the token after the reload');
    assert.equal((await adminReload(admin)).status, 401, 'POST /admin/reload without the token after the reload');
    const status = await adminStatus(admin, token);
    assert.equal(status.status, 200, status.text);
    assert.equal(status.body.generation?.number, 1, 'the serving generation is kept');
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 6: configured provider headers', () => {
  it('an ordinary configured header (OpenAI-Organization: org-1) is sent upstream', async () => {
    const config = baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } });
    (config.providers as Record<string, Record<string, unknown>>).east!.headers = { 'OpenAI-Organization': 'org-1' };
    const gw = await startGw(config);
    east.reset();
    const r = await postChat(gw.url, chatBody('m'));
    assert.equal(r.status, 200, r.text);
    assert.equal(east.stats().recent.at(-1)?.headers['openai-organization'], 'org-1');
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 10: a reload that raises max_connections takes effect', () => {
  it('after max_connections goes from 1 to 8, four concurrent requests all reach the provider before any is answered', async () => {
    const slow = await startMock({ name: 'slow' });
    const config = (n: number): Record<string, unknown> => {
      const c = baseConfig({ slow: slow.baseUrl }, { m: { candidates: [{ provider: 'slow' }] } });
      (c.providers as Record<string, Record<string, unknown>>).slow!.max_connections = n;
      return c;
    };
    const gw = await startGw(config(1));
    gw.writeConfig(config(8));
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.status, 200, reload.text);
    assert.equal(reload.body.result, 'applied', reload.text);

    // Every request hangs at the provider: with one connection only the first can arrive.
    slow.reset();
    slow.addFault({ mode: 'hang', count: 4 });
    let answered = 0;
    const replies = [1, 2, 3, 4].map(() =>
      postChat(gw.url, chatBody('m')).then(
        (r) => {
          answered += 1;
          return r.status;
        },
        () => {
          answered += 1;
          return 0;
        },
      ),
    );
    // Either all four arrive, or (one connection) the first times out at timeout_ms and is answered.
    await waitUntil(() => chatCount(slow) >= 4 || answered > 0, 'four requests at the provider, or one answered', 15_000);
    const arrived = chatCount(slow);
    const answeredBefore = answered;
    // Closing the mock ends the hanging requests.
    await slow.close();
    await Promise.all(replies);
    assert.equal(arrived, 4, `only ${arrived} of 4 requests reached the provider (answered before that: ${answeredBefore}); max_connections 8 was not applied`);
    assert.equal(answeredBefore, 0);
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 11: SIGHUP during the drain', () => {
  it('a SIGHUP after SIGTERM does not kill the draining process: the stream ends with [DONE] and the exit code is 0', async () => {
    const streamer = await startMock({ name: 'streamer', streamChunks: 30, streamChunkDelayMs: 100 });
    const gw = await startGw(baseConfig({ streamer: streamer.baseUrl }, { m: { candidates: [{ provider: 'streamer' }] } }, { server: { drain_timeout_ms: 20_000 } }));
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody('m', { stream: true }) });
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

// ---------------------------------------------------------------------------------------

describe('finding 12: a client that leaves mid-upload', () => {
  it('an upload cut before its declared length logs no error and is counted as status 499', async () => {
    const gw = await startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
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
    await waitUntil(async () => {
      count = metricValue(await scrapeMetrics(gw.url), 'switchyard_requests_total', { status: '499' }) ?? 0;
      return count >= 2;
    }, 'two requests counted with status 499', 5_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message} (counted: ${count}); log: ${JSON.stringify(gw.logs().filter((l) => l.level !== 'info')).slice(0, 800)}`);
    });
    const errors = gw.logs().filter((l) => l.level === 'error' || l.level === 'fatal');
    assert.deepEqual(errors, []);
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 13: renaming the model changes only the model value', () => {
  it('the upstream body is the client body byte-for-byte, with only the top-level model string replaced', async () => {
    const gw = await startGw(baseConfig({ east: east.baseUrl }, {
      alias: { candidates: [{ provider: 'east', model: 'gpt-4o-mini' }] },
      same: { candidates: [{ provider: 'east' }] },
    }));
    // A nested "model" comes first and must stay; big integers, 1.0, \u escapes and odd
    // whitespace would all change if the body were parsed and re-serialized.
    const head = '{ "metadata" : {"model":"alias", "note":"keep me"},\n\t"model" :  ';
    const tail = ' ,"seed":9007199254740993, "temperature":1.0,"messages":[{"role":"user","content":"caf\\u00e9 \\"model\\":\\"alias\\""}],"logit_bias":{"50256":-100} }\n';
    east.reset();
    const r = await postChat(gw.url, `${head}"alias"${tail}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(east.stats().recent.at(-1)?.body, `${head}"gpt-4o-mini"${tail}`);

    const unchanged = `${head}"same"${tail}`;
    const s = await postChat(gw.url, unchanged);
    assert.equal(s.status, 200, s.text);
    assert.equal(east.stats().recent.at(-1)?.body, unchanged, 'without a rename the body is forwarded as sent');
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 14: headers named by the upstream Connection header', () => {
  let upstream: Server;

  before(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, {
          'content-type': 'application/json',
          connection: 'keep-alive, x-upstream-hop',
          'x-upstream-hop': 'v',
          'x-upstream-other': 'kept',
        });
        res.end('{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    cleanup.unshift(() => new Promise<void>((resolve) => {
      upstream.close(() => resolve());
      upstream.closeAllConnections();
    }));
  });

  it('a header the upstream lists in Connection is not forwarded to the client; other headers are', async () => {
    const { port } = upstream.address() as AddressInfo;
    const gw = await startGw(baseConfig({ p: `http://127.0.0.1:${port}/v1` }, { m: { candidates: [{ provider: 'p' }] } }));
    const r = await postChat(gw.url, chatBody('m'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-upstream-other'), 'kept', 'an end-to-end header is forwarded');
    assert.equal(r.headers.get('x-upstream-hop'), null, 'a header named in Connection is hop-by-hop');
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 15: names that are Object.prototype keys, and process metric names', () => {
  it('/admin/status counts candidates per model correctly for models named constructor and toString', async () => {
    const dir = tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, JSON.stringify({
      local_site: 'east',
      candidates: [candidate('constructor', 'east'), candidate('toString', 'east'), candidate('toString', 'west'), candidate('m', 'east')],
    }));
    const west = await startMock({ name: 'west' });
    const gw = await startGw(overlayConfig({ east: east.baseUrl, west: west.baseUrl }, { file, reload: { enabled: false } }), { dir });
    const status = await overlayStatus(gw);
    assert.deepEqual(status.overlay?.candidates_per_model, { constructor: 1, toString: 2, m: 1 });
  });

  it('/metrics names process metrics switchyard_process_* (resident memory included), never switchyard_process_process_*', async () => {
    const gw = await startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    const text = await scrapeMetrics(gw.url);
    assert.ok(metricValue(text, 'switchyard_process_resident_memory_bytes') !== undefined, 'switchyard_process_resident_memory_bytes is exported');
    const doubled = text.split('\n').filter((l) => l.includes('switchyard_process_process_'));
    assert.deepEqual(doubled, []);
  });
});
