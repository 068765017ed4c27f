import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { waitUntil } from '../support/observe.js';
import { deleteKeysWithPrefix } from '../support/redis.js';

// Two replicas behind a load balancer without stickiness, sharing a redis governance store:
// a session opened on one is served by the other (its record is shared: who opened it and
// its version, never a credential), still only to the key that opened it, and a DELETE on
// either ends it for both.

const REDIS_URL = 'redis://127.0.0.1:6379';
const KEY = 'sk-mcp-replica-key-0123456789abcdef';
const OTHER = 'sk-mcp-replica-other-0123456789abcd';

let tools: MockProvider;
let one: GatewayProcess;
let two: GatewayProcess;
const prefix = `switchyard-test-mcp-${randomUUID()}:`;

function config(): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    log: { level: 'info', access: false },
    providers: { tools: { type: 'mcp', base_url: `${tools.origin}/mcp`, timeout_ms: 2000 } },
    routing: { tools_from: [{ provider: 'tools' }] },
    teams: { eng: {} },
    keys: [
      { id: 'k', team: 'eng', sha256: hashKey(KEY) },
      { id: 'other', team: 'eng', sha256: hashKey(OTHER) },
    ],
    governance: { store: 'redis', redis_url: REDIS_URL, key_prefix: prefix },
  };
}

async function post(gw: GatewayProcess, body: object, headers: Record<string, string>): Promise<Response> {
  return fetch(new URL('/mcp', gw.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

before(async () => {
  tools = await startMockProvider({ name: 'tools', protocol: 'mcp', mcpResponse: 'json' });
  [one, two] = await Promise.all([startGatewayProcess(config()), startGatewayProcess(config())]);
  for (const gw of [one, two]) await waitUntil(() => gw.logs().some((l) => l.msg === 'MCP server catalog listed'), 'the catalog is listed');
});

after(async () => {
  await one?.stop();
  await two?.stop();
  await tools?.close();
  await deleteKeysWithPrefix(REDIS_URL, prefix).catch(() => undefined);
});

describe('MCP sessions across replicas', () => {
  it('a session opened on one replica is served by another, only to its key, and ended on either', async () => {
    const auth = { authorization: `Bearer ${KEY}` };
    const init = await post(
      one,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'lb', version: '1' } },
      },
      auth,
    );
    const id = init.headers.get('mcp-session-id') as string;
    assert.ok(id);
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'across' } } };
    const onTwo = await post(two, call, { ...auth, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' });
    assert.equal(onTwo.status, 200);
    assert.deepEqual(((await onTwo.json()) as { result: { content: unknown[] } }).result.content, [
      { type: 'text', text: '[tools] across' },
    ]);
    assert.equal((await post(two, call, { authorization: `Bearer ${OTHER}`, 'mcp-session-id': id })).status, 404, "another key's");
    const ended = await fetch(new URL('/mcp', two.url), { method: 'DELETE', headers: { ...auth, 'mcp-session-id': id } });
    assert.equal(ended.status, 200);
    assert.equal((await post(two, call, { ...auth, 'mcp-session-id': id })).status, 404);
  });

  it('the official client works through a balancer that alternates replicas on every request', async () => {
    // A fetch that sends each request to the next replica, as a round-robin balancer would.
    let turn = 0;
    const alternating: typeof fetch = (input, init) => {
      const gw = turn++ % 2 === 0 ? one : two;
      const url = new URL(typeof input === 'string' || input instanceof URL ? input.toString() : input.url);
      return fetch(new URL(url.pathname, gw.url), init);
    };
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', one.url), {
      requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      fetch: alternating,
    });
    const client = new Client({ name: 'balanced', version: '1.0.0' });
    await client.connect(transport);
    try {
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'echo'));
      for (let i = 0; i < 4; i++) {
        const result = await client.callTool({ name: 'echo', arguments: { text: String(i) } });
        assert.deepEqual(result.content, [{ type: 'text', text: `[tools] ${i}` }]);
      }
      assert.ok(turn >= 6, 'the requests went to both replicas');
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});
