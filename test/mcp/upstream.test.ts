import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  EmptyResultSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { JsonRpcNotification } from '../../src/mcp/index.js';
import { McpUpstream, type McpUpstreamSettings, type UpstreamEvent } from '../../src/mcp/upstream.js';
import { listTools, MAX_TOOL_PAGES } from '../../src/mcp/upstream-catalog.js';
import { Credential, ProviderPool } from '../../src/providers/index.js';
import { TestMcpServer, type TestMcpServerOptions } from './mcp-server.js';

// The gateway's MCP client against the official SDK's server over loopback, through a real
// provider pool: sessions, listings, calls and their failures as the gateway sees them.

/** Bounds a wait for something asynchronous; only a hang reaches it. */
const HANG_BOUND_MS = 5000;

async function until(what: string, ready: () => boolean): Promise<void> {
  for (let waited = 0; !ready(); waited += 10) {
    if (waited > HANG_BOUND_MS) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Tools that answer, fail, report progress, hang, cut their stream, and ask the client things. */
function toolServer(): McpServer {
  const server = new McpServer({ name: 'test-tools', version: '1.2.3' });
  server.registerTool('echo', { description: 'says it back', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  server.registerTool('fails', { inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'no' }], isError: true }));
  server.registerTool('progress', { inputSchema: {} }, async (_args, extra) => {
    const progressToken = extra._meta?.progressToken;
    if (progressToken !== undefined) {
      for (const progress of [1, 2]) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 2 } });
      }
    }
    return { content: [{ type: 'text', text: 'done' }] };
  });
  server.registerTool('hang', { inputSchema: {} }, async (_args, extra) => {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, HANG_BOUND_MS);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return { content: [] };
  });
  server.registerTool('cut', { inputSchema: {} }, async (_args, extra) => {
    extra.closeSSEStream?.();
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { content: [{ type: 'text', text: 'after the cut' }] };
  });
  server.registerTool('ask', { inputSchema: {} }, async (_args, extra) => {
    await extra.sendRequest({ method: 'ping' }, EmptyResultSchema);
    const sampled = await extra
      .sendRequest({ method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } }, CreateMessageResultSchema)
      .then(
        () => 'sampled',
        (err: { code?: number }) => `refused ${err.code}`,
      );
    return { content: [{ type: 'text', text: `pinged, ${sampled}` }] };
  });
  return server;
}

/** A low-level server listing its tools over three pages, one of them without an input schema. */
function pagingServer(): Server {
  const server = new Server({ name: 'pager', version: '0.1.0' }, { capabilities: { tools: {} } });
  const pages = [
    { tools: [{ name: 'a', inputSchema: { type: 'object' } }], nextCursor: 'p2' },
    { tools: [{ name: 'b', inputSchema: { type: 'object' } }, { name: 'no-schema' }], nextCursor: 'p3' },
    { tools: [{ name: 'c', title: 'C', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] },
  ];
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const index = request.params?.cursor === undefined ? 0 : Number(request.params.cursor.slice(1)) - 1;
    return pages[index] as never;
  });
  server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [] }));
  return server;
}

interface Harness {
  readonly upstream: McpUpstream;
  readonly events: UpstreamEvent[];
  readonly pool: ProviderPool;
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function serve(options: Partial<TestMcpServerOptions>): Promise<TestMcpServer> {
  const server = await TestMcpServer.start({ makeServer: options.makeServer ?? toolServer, ...options });
  cleanups.push(() => server.close());
  return server;
}

/**
 * A hand-written MCP server for answers the SDK never gives: `version` is what its
 * initialize result says, and `answer` writes a tools/call's answer however the test needs.
 */
async function rawServer(version: string, answer: (res: ServerResponse, id: number) => void): Promise<URL> {
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number; method: string };
      if (message.id === undefined) {
        res.writeHead(202).end();
      } else if (message.method === 'initialize') {
        const result = { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } };
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'raw-session' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      } else {
        answer(res, message.id);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
}

function connect(url: URL, overrides: Partial<McpUpstreamSettings> = {}): Harness {
  const pool = new ProviderPool({ identity: `mcp ${url.href}`, baseUrl: url.origin, connectTimeoutMs: 2000, maxConnections: 8 });
  const settings: McpUpstreamSettings = {
    provider: 'tools',
    url,
    pool,
    headers: {},
    credential: null,
    timeoutMs: 2000,
    recheckMs: 0,
    clientInfo: { name: 'switchyard-test', version: '0.0.1' },
    ...overrides,
  };
  const events: UpstreamEvent[] = [];
  const upstream = new McpUpstream(settings, (e) => events.push(e));
  cleanups.push(async () => {
    await upstream.stop();
    await pool.destroy();
  });
  return { upstream, events, pool };
}

const catalogs = (events: UpstreamEvent[]) => events.filter((e) => e.kind === 'catalog');
const sessionEvents = (events: UpstreamEvent[]) => events.flatMap((e) => (e.kind === 'session' ? [e.what] : []));

describe('McpUpstream', () => {
  test('initializes, then lists every page of the tools, leaving out a tool without an input schema', async () => {
    const server = await serve({ makeServer: pagingServer });
    const { upstream, events } = connect(server.url);
    upstream.start();
    await until('a catalog', () => upstream.catalog !== null);
    const catalog = upstream.catalog;
    assert.ok(catalog !== null);
    assert.deepEqual([...catalog.tools.keys()], ['a', 'b', 'c']);
    assert.deepEqual(catalog.tools.get('c')?.annotations, { readOnlyHint: true });
    assert.equal(catalog.provider, 'tools');
    assert.equal(catalog.protocolVersion, '2025-11-25');
    assert.deepEqual(catalog.serverInfo, { name: 'pager', version: '0.1.0' });
    assert.deepEqual(sessionEvents(events), ['initialized']);
    assert.equal(typeof upstream.sessionId, 'string');
    assert.equal(upstream.problem, null);
    const [first] = catalogs(events);
    assert.ok(first?.kind === 'catalog' && first.changed);
    await upstream.relist();
    const second = catalogs(events)[1];
    assert.ok(second?.kind === 'catalog' && !second.changed, 'the same tools again are no change');
  });

  for (const enableJsonResponse of [false, true]) {
    const mode = enableJsonResponse ? 'a JSON answer' : 'an event stream';
    test(`a call answers the tool's result, an isError result and a JSON-RPC error as sent, in ${mode}`, async () => {
      const server = await serve({ enableJsonResponse });
      const { upstream } = connect(server.url);
      const echoed = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } });
      // A JSON answer's result also comes as its text, cut out of the answer as sent (relayed without a second serialisation).
      const echoedJson = '{"content":[{"type":"text","text":"hi"}]}';
      assert.deepEqual(echoed, {
        kind: 'result',
        result: { content: [{ type: 'text', text: 'hi' }] },
        ...(enableJsonResponse ? { resultJson: echoedJson } : {}),
      });
      const failed = await upstream.call({ method: 'tools/call', params: { name: 'fails', arguments: {} } });
      const failedJson = '{"content":[{"type":"text","text":"no"}],"isError":true}';
      assert.deepEqual(failed, {
        kind: 'result',
        result: { content: [{ type: 'text', text: 'no' }], isError: true },
        ...(enableJsonResponse ? { resultJson: failedJson } : {}),
      });
      const unknown = await upstream.call({ method: 'tools/nothing', params: {} });
      assert.equal(unknown.kind, 'error');
      assert.equal(unknown.kind === 'error' && unknown.error.code, -32601);
    });
  }

  test('progress notifications reach onNotification in order, before the result', async () => {
    const server = await serve({});
    const { upstream } = connect(server.url);
    const seen: string[] = [];
    const onNotification = (n: JsonRpcNotification): void => {
      seen.push(`${n.method} ${n.params?.progress}`);
    };
    const params = { name: 'progress', arguments: {}, _meta: { progressToken: 'gw-7' } };
    const outcome = await upstream.call({ method: 'tools/call', params, onNotification });
    seen.push(outcome.kind);
    assert.deepEqual(seen, ['notifications/progress 1', 'notifications/progress 2', 'result']);
  });

  test("the server's ping on a call's stream is answered, and its sampling request refused", async () => {
    const server = await serve({});
    const { upstream } = connect(server.url);
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'ask', arguments: {} } });
    assert.deepEqual(outcome, { kind: 'result', result: { content: [{ type: 'text', text: 'pinged, refused -32601' }] } });
  });

  test('a stream the server closes before the response is resumed with Last-Event-ID', async () => {
    const server = await serve({ resumable: true });
    const { upstream } = connect(server.url);
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'cut', arguments: {} } });
    assert.deepEqual(outcome, { kind: 'result', result: { content: [{ type: 'text', text: 'after the cut' }] } });
    assert.ok(server.seen.some((r) => r.method === 'GET' && typeof r.headers['last-event-id'] === 'string'));
  });

  test('a tools/list_changed on the standing stream brings a new catalog, marked changed', async () => {
    const server = await serve({});
    const { upstream, events } = connect(server.url);
    upstream.start();
    await until('the first catalog and the stream', () => upstream.catalog !== null && upstream.streamOpen);
    const session = server.sessions[0] as McpServer;
    session.registerTool('added', { inputSchema: {} }, async () => ({ content: [] }));
    await until('a second catalog', () => catalogs(events).length >= 2);
    const latest = catalogs(events).at(-1);
    assert.ok(latest?.kind === 'catalog' && latest.changed);
    assert.ok(latest.catalog.tools.has('added'));
    assert.ok(upstream.catalog?.tools.has('added'));
  });

  test('after the server forgot its sessions, the next call initializes anew and succeeds', async () => {
    const server = await serve({});
    const { upstream, events } = connect(server.url);
    const first = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'one' } } });
    assert.equal(first.kind, 'result');
    const before = upstream.sessionId;
    await server.forgetSessions();
    const second = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'two' } } });
    assert.deepEqual(second, { kind: 'result', result: { content: [{ type: 'text', text: 'two' }] } });
    assert.notEqual(upstream.sessionId, before);
    assert.deepEqual(sessionEvents(events).slice(0, 3), ['initialized', 'expired', 'reinitialized']);
  });

  test('a closed port: the call is refused and never reached the server', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const { upstream, events } = connect(new URL(`http://127.0.0.1:${port}/mcp`));
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: {} } });
    assert.equal(outcome.kind, 'failed');
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'refused');
    assert.equal(outcome.kind === 'failed' && outcome.reached, false);
    upstream.start();
    await until('a problem', () => events.some((e) => e.kind === 'problem'));
    const problem = events.find((e) => e.kind === 'problem');
    assert.ok(problem?.kind === 'problem' && problem.retryInMs > 0 && problem.retryInMs <= 30_000);
    assert.equal(upstream.problem, problem.message);
  });

  test('a tool silent past timeoutMs: a timeout, and the call had reached the server', async () => {
    const server = await serve({});
    const { upstream } = connect(server.url, { timeoutMs: 300 });
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'hang', arguments: {} } });
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'timeout');
    assert.equal(outcome.kind === 'failed' && outcome.reached, true);
  });

  test("the caller's abort ends the call as aborted", async () => {
    const server = await serve({});
    const { upstream } = connect(server.url);
    const controller = new AbortController();
    const pending = upstream.call({ method: 'tools/call', params: { name: 'hang', arguments: {} }, signal: controller.signal });
    setTimeout(() => controller.abort(), 100).unref();
    const outcome = await pending;
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'aborted');
  });

  test('a 503 answer: a status failure with its status, and the listing becomes a problem with the last catalog kept', async () => {
    const server = await serve({});
    const { upstream, events } = connect(server.url);
    upstream.start();
    await until('a catalog', () => upstream.catalog !== null);
    server.failWith = 503;
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } });
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'status');
    assert.equal(outcome.kind === 'failed' && outcome.status, 503);
    assert.equal(outcome.kind === 'failed' && outcome.reached, true);
    assert.match(outcome.kind === 'failed' ? outcome.detail : '', /^HTTP 503: the server is overloaded/);
    await upstream.relist();
    assert.ok(events.some((e) => e.kind === 'problem' && e.message.includes('503')));
    assert.ok(upstream.catalog?.tools.has('echo'), 'the last good catalog stays');
    server.failWith = null;
    await upstream.relist();
    assert.equal(upstream.problem, null);
  });

  test('the credential goes as Authorization and the configured headers arrive, a configured Authorization does not', async () => {
    const server = await serve({});
    const credential = new Credential('upstream-secret', 'env:TOOLS_KEY');
    const headers = { 'x-team': 'blue', authorization: 'Bearer configured' };
    const { upstream } = connect(server.url, { credential, headers });
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' } } });
    assert.equal(outcome.kind, 'result');
    assert.ok(server.seen.length >= 3);
    for (const request of server.seen) {
      assert.equal(request.headers.authorization, 'Bearer upstream-secret');
      assert.equal(request.headers['x-team'], 'blue');
    }
    const later = server.seen.filter((r) => r.method === 'POST').slice(1);
    for (const request of later) {
      assert.equal(request.headers['mcp-protocol-version'], '2025-11-25');
      assert.equal(request.headers['mcp-session-id'], upstream.sessionId);
    }
  });

  test('an event stream cut before the response, without event ids, is a dropped call that had reached the server', async () => {
    const url = await rawServer('2025-06-18', (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n');
      setTimeout(() => res.destroy(), 20).unref();
    });
    const { upstream } = connect(url);
    const notes: string[] = [];
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'x' }, onNotification: (n) => notes.push(n.method) });
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'dropped');
    assert.equal(outcome.kind === 'failed' && outcome.reached, true);
    assert.deepEqual(notes, ['notifications/message']);
  });

  test('an answer that is not JSON-RPC is malformed', async () => {
    const url = await rawServer('2025-06-18', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('<html>oops</html>');
    });
    const { upstream } = connect(url);
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'x' } });
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'malformed');
  });

  test('a server that answers initialize with another protocol version is a problem, and calls fail as session', async () => {
    const url = await rawServer('2024-11-05', (res) => res.writeHead(500).end());
    const { upstream, events } = connect(url);
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'x' } });
    assert.equal(outcome.kind === 'failed' && outcome.reason, 'session');
    assert.equal(outcome.kind === 'failed' && outcome.reached, false);
    upstream.start();
    await until('a problem', () => upstream.problem !== null);
    assert.match(upstream.problem ?? '', /2024-11-05/);
    assert.equal(upstream.catalog, null);
    assert.ok(events.every((e) => e.kind !== 'session'));
  });

  test('when the standing stream finds its session gone, the session is initialized anew and the stream reopened', async () => {
    const server = await serve({});
    const { upstream, events } = connect(server.url);
    upstream.start();
    await until('the stream', () => upstream.streamOpen);
    const before = upstream.sessionId;
    await server.forgetSessions();
    await until('a new session with its stream', () => sessionEvents(events).includes('reinitialized') && upstream.streamOpen);
    assert.deepEqual(sessionEvents(events), ['initialized', 'expired', 'reinitialized']);
    assert.notEqual(upstream.sessionId, before);
    await until('a catalog of the new session', () => catalogs(events).length >= 2);
  });

  test('a reload with another credential initializes a new session that carries it', async () => {
    const server = await serve({});
    const { upstream, events, pool } = connect(server.url, { credential: new Credential('first', 'env:A') });
    upstream.start();
    await until('a catalog', () => upstream.catalog !== null);
    const settings: McpUpstreamSettings = {
      provider: 'tools',
      url: server.url,
      pool,
      headers: {},
      credential: new Credential('second', 'env:B'),
      timeoutMs: 2000,
      recheckMs: 0,
      clientInfo: { name: 'switchyard-test', version: '0.0.1' },
    };
    upstream.update(settings);
    await until('a new session', () => sessionEvents(events).includes('reinitialized'));
    const outcome = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'b' } } });
    assert.equal(outcome.kind, 'result');
    assert.equal(server.seen.at(-1)?.headers.authorization, 'Bearer second');
    assert.ok(server.seen.some((r) => r.method === 'DELETE' && r.headers.authorization === 'Bearer first'));
  });

  test('stop ends the standing stream, deletes the session and emits nothing more', async () => {
    const server = await serve({});
    const { upstream, events, pool } = connect(server.url, { recheckMs: 50 });
    upstream.start();
    await until('the stream', () => upstream.streamOpen);
    await upstream.stop();
    assert.equal(upstream.streamOpen, false);
    assert.ok(server.seen.some((r) => r.method === 'DELETE' && typeof r.headers['mcp-session-id'] === 'string'));
    const count = events.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(events.length, count);
    await until('no call in flight', () => pool.inflight === 0);
    const late = await upstream.call({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'z' } } });
    assert.equal(late.kind === 'failed' && late.reason, 'session');
  });
});

describe('listTools', () => {
  const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });

  test('refuses a cursor that comes back twice', async () => {
    const pages: Record<string, Record<string, unknown>> = {
      start: { tools: [tool('a')], nextCursor: 'x' },
      x: { tools: [tool('b')], nextCursor: 'y' },
      y: { tools: [tool('c')], nextCursor: 'x' },
    };
    await assert.rejects(
      listTools(async (cursor) => pages[cursor ?? 'start'] ?? {}),
      /twice/,
    );
  });

  test(`stops after ${MAX_TOOL_PAGES} pages of a server that always has a next one`, async () => {
    let read = 0;
    const endless = async (): Promise<Record<string, unknown>> => {
      read += 1;
      return { tools: [tool(`t${read}`)], nextCursor: `c${read}` };
    };
    await assert.rejects(listTools(endless), /pages/);
    assert.equal(read, MAX_TOOL_PAGES);
  });

  test('leaves out entries without a string name or an object input schema, keeping the order of the rest', async () => {
    const page = { tools: [tool('z'), { name: 1, inputSchema: {} }, { name: 'bad', inputSchema: [] }, 'junk', tool('a')] };
    const { tools } = await listTools(async () => page);
    assert.deepEqual([...tools.keys()], ['z', 'a']);
  });

  test('keeps the first definition of a name listed twice, across pages, and reports the name once', async () => {
    const first = { ...tool('echo'), description: 'first' };
    const pages: Record<string, Record<string, unknown>> = {
      start: { tools: [first, tool('b'), { ...tool('echo'), description: 'second' }], nextCursor: 'x' },
      x: { tools: [{ ...tool('echo'), description: 'third' }, tool('b')] },
    };
    const { tools, duplicates } = await listTools(async (cursor) => pages[cursor ?? 'start'] ?? {});
    assert.deepEqual([...tools.keys()], ['echo', 'b']);
    assert.deepEqual(tools.get('echo'), first);
    assert.deepEqual(duplicates, ['echo', 'b']);
  });
});
