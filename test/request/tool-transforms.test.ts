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
  events: (events) => String(events).replace('[alpha] ', '[alpha] events:'),
};

interface Gateway {
  readonly url: string;
  readonly server: Server;
  readonly svc: Services;
}

let alpha: MockProvider;
let plain: Gateway;
let shouting: Gateway;

async function gatewayWith(stack: readonly AnswerTransform[]): Promise<Gateway> {
  const checked = checkConfig(
    {
      server: { listen: '127.0.0.1:0' },
      providers: { alpha: { type: 'mcp', base_url: `${alpha.origin}/mcp`, timeout_ms: 5000 } },
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
  await waitUntil(() => svc.mcp.view(gen).tools.size >= 2, 'the catalog is listed');
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

before(async () => {
  alpha = await startMockProvider({ name: 'alpha', protocol: 'mcp', mcpResponse: 'json' });
  plain = await gatewayWith([]);
  shouting = await gatewayWith([SHOUT]);
});

after(async () => {
  for (const gw of [plain, shouting]) {
    gw?.server.closeAllConnections();
    gw?.server.close();
    await gw?.svc.mcp.close();
  }
  await alpha?.close();
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

  it('leaves the answer s bytes as the server s result with an empty stack', async () => {
    const c = await client(plain);
    try {
      assert.equal(textOf(await c.callTool({ name: 'echo', arguments: { text: 'hi' } })), '[alpha] hi');
    } finally {
      await c.close();
    }
    // The raw bytes of a JSON reply: the server's result, nothing added or rewritten.
    const init = await fetch(plain.url, {
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
    const res = await fetch(plain.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } }),
    });
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(await res.text(), '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"[alpha] hi"}]}}');
  });
});
