import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { checkConfig } from '../../src/config/index.js';
import { buildGeneration } from '../../src/live/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { AnswerTransform } from '../../src/providers/index.js';
import { Exchange } from '../../src/request/exchange.js';
import { toolPath } from '../../src/request/handlers.js';
import { mcpHandlers } from '../../src/request/mcp/endpoint.js';
import type { Services } from '../../src/request/services.js';
import { waitUntil } from '../support/observe.js';
import { breakersFor, pools, servicesFor } from './chain-fixture.js';

// A tool's answer on /mcp passes through the same transform stack as a model's answer, in
// the client's protocol (JSON-RPC): a JSON reply through the stack's body parts, an SSE
// reply's event through its event parts. The gateway's own stack is empty, so the stack is
// handed in here: the /mcp endpoint runs in process over real services, a real client
// (the official SDK over Streamable HTTP) on one side and a real mock MCP server on the other.

const ACCEPT = 'application/json, text/event-stream';

/** Edits the echoed text: in a whole JSON body, or in whole SSE events. */
const SHOUT: AnswerTransform = {
  body: (_status, body) => String(body).replace('[alpha] ', '[alpha] body:'),
  events: (events) => String(events).replace('[alpha] ', '[alpha] events:').replace('"step ', '"events:step '),
};

interface Gateway {
  readonly url: string;
  readonly server: Server;
  readonly svc: Services;
}

let alpha: MockProvider;
/** A mock that answers in event streams, so a call's progress reaches the gateway. */
let streaming: MockProvider;
let shoutingStreams: Gateway;
let plain: Gateway;
let shouting: Gateway;
let raw: { server: Server; url: string };
let relaying: Gateway;

async function gatewayWith(stack: readonly AnswerTransform[], serverUrl = `${alpha.origin}/mcp`): Promise<Gateway> {
  const checked = checkConfig(
    {
      server: { listen: '127.0.0.1:0' },
      providers: { alpha: { type: 'mcp', base_url: serverUrl, timeout_ms: 5000 } },
      routing: { tools: { echo: { candidates: [{ provider: 'alpha' }] }, progress: { candidates: [{ provider: 'alpha' }] } } },
      mcp: { catalog_recheck_ms: 0 },
    },
    'tool-transforms',
  );
  assert.ok(checked.ok, JSON.stringify(checked));
  const built = buildGeneration({
    config: checked.config,
    sourceHash: 'tool-transforms',
    number: 1,
    env: {},
    poolFor: (s) => pools.acquire(s),
  });
  assert.ok(built.ok, JSON.stringify(built));
  const gen = built.generation;
  const svc = servicesFor(gen, breakersFor(gen).breakers);
  svc.mcp.sync(gen);
  await waitUntil(() => svc.mcp.view(gen).tools.has('echo'), 'the catalog is listed');
  const handlers = mcpHandlers(svc, { maxBodyBytes: 1 << 20 }, 'test', { ...toolPath(svc), transforms: stack });
  const server = createServer((req, res) => {
    const x = new Exchange(req, res, () => undefined);
    res.on('close', () => {
      x.running.clientClosed?.();
      x.done();
    });
    const handle = req.method === 'POST' ? handlers.post : req.method === 'GET' ? handlers.get : handlers.delete;
    handle(x, '', () => x.done());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server, svc };
}

async function client(gw: Gateway): Promise<Client> {
  const c = new Client({ name: 'tool-transforms', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  return c;
}

function textOf(result: unknown): string {
  return (result as { content: Array<{ text: string }> }).content.map((c) => c.text).join('');
}

/** The result a hand-written server sends, in bytes JSON.stringify would not give back (a number's form, an escape). */
const RAW_RESULT = '{"content":[{"type":"text","text":"a\\/b"}],"structuredContent":{"score":1.50}}';

/** A minimal MCP server, hand-written so that its answer's bytes are the test's: one tool, `echo`. */
async function rawServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const m = JSON.parse(body) as { id?: number; method: string };
      if (m.id === undefined) return void res.writeHead(202).end();
      const result =
        m.method === 'initialize'
          ? '{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}'
          : m.method === 'tools/list'
            ? '{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}'
            : RAW_RESULT;
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'raw-session' });
      res.end(`{"result":${result},"jsonrpc":"2.0","id":${m.id}}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` };
}

/** A tools/call of echo over plain fetch, in a new session: the answer's body as received. */
async function rawCall(gw: Gateway, id: number): Promise<string> {
  const init = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  const session = init.headers.get('mcp-session-id') ?? '';
  await init.arrayBuffer();
  const res = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } }),
  });
  assert.equal(res.headers.get('content-type'), 'application/json');
  return res.text();
}

before(async () => {
  alpha = await startMockProvider({ name: 'alpha', protocol: 'mcp', mcpResponse: 'json' });
  streaming = await startMockProvider({ name: 'alpha', protocol: 'mcp', mcpResponse: 'sse' });
  shoutingStreams = await gatewayWith([SHOUT], `${streaming.origin}/mcp`);
  plain = await gatewayWith([]);
  shouting = await gatewayWith([SHOUT]);
  raw = await rawServer();
  relaying = await gatewayWith([], raw.url);
});

after(async () => {
  for (const gw of [plain, shouting, relaying, shoutingStreams]) {
    gw?.server.closeAllConnections();
    gw?.server.close();
    await gw?.svc.mcp.close();
  }
  await alpha?.close();
  await streaming?.close();
  raw?.server.closeAllConnections();
  raw?.server.close();
});

describe('a tool answer through the transform stack', () => {
  it('passes a JSON reply through the stack s body part', async () => {
    const c = await client(shouting);
    try {
      assert.equal(textOf(await c.callTool({ name: 'echo', arguments: { text: 'hi' } })), '[alpha] body:hi');
    } finally {
      await c.close();
    }
  });

  it('passes an SSE reply s answer event through the stack s event part', async () => {
    const c = await client(shouting);
    try {
      const progress: unknown[] = [];
      const result = await c.callTool({ name: 'echo', arguments: { text: 'hi' } }, undefined, { onprogress: (p) => progress.push(p) });
      assert.equal(textOf(result), '[alpha] events:hi');
    } finally {
      await c.close();
    }
  });

  it('passes the server s progress notifications on an SSE reply through the stack s event part too', async () => {
    const c = await client(shoutingStreams);
    try {
      const progress: Array<{ message?: string }> = [];
      const result = await c.callTool({ name: 'progress', arguments: { steps: 2 } }, undefined, {
        onprogress: (p) => progress.push(p),
      });
      assert.equal(textOf(result), 'done 2');
      assert.deepEqual(
        progress.map((p) => p.message),
        ['events:step 1 of 2', 'events:step 2 of 2'],
      );
    } finally {
      await c.close();
    }
  });

  it('leaves the answer s bytes as the server s result with an empty stack', async () => {
    const c = await client(plain);
    try {
      assert.equal(textOf(await c.callTool({ name: 'echo', arguments: { text: 'hi' } })), '[alpha] hi');
    } finally {
      await c.close();
    }
    // The raw bytes of a JSON reply: the server's result, nothing added or rewritten.
    assert.equal(await rawCall(plain, 7), '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"[alpha] hi"}]}}');
  });

  it('relays the server s result bytes as sent, not the parsed result written again', async () => {
    assert.equal(await rawCall(relaying, 8), `{"jsonrpc":"2.0","id":8,"result":${RAW_RESULT}}`);
  });
});
