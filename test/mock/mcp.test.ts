import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress, Tool } from '@modelcontextprotocol/sdk/types.js';
import { McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { MockProvider, MockProviderOptions } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

// The mock's MCP server against the official SDK client: if the SDK reads every answer,
// notification and refusal as it would a real server's, the gateway's MCP tests can trust it.

const started: MockProvider[] = [];
const clients: Client[] = [];

after(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(started.map((m) => m.close()));
});

async function mockWith(opts: Omit<MockProviderOptions, 'protocol'>): Promise<MockProvider> {
  const mock = await startMockProvider({ protocol: 'mcp', ...opts });
  started.push(mock);
  return mock;
}

function mcpUrl(mock: MockProvider): URL {
  return new URL('/mcp', mock.origin);
}

async function connect(
  mock: MockProvider,
  headers: Record<string, string> = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(mcpUrl(mock), {
    requestInit: { headers },
    // Quick reconnects keep the resumption test short; the bound below only catches a hang.
    reconnectionOptions: { initialReconnectionDelay: 20, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1.5, maxRetries: 20 },
  });
  const client = new Client({ name: 'mock-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

/** Connects, telling how many GET streams were open before, so the caller can wait for its own. */
async function connectListening(mock: MockProvider): Promise<{ client: Client; streams: number }> {
  const streams = mock.mcpStats().get_streams_open;
  const { client } = await connect(mock);
  return { client, streams };
}

/** Polls until `check` holds; a generous bound that only catches a hang. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting for ${what}`);
}

function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  assert.equal(content[0]?.type, 'text');
  return content[0]?.text ?? '';
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function rawPost(mock: MockProvider, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(mcpUrl(mock), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

function callBody(name: string, args: Record<string, unknown>): unknown {
  return { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } };
}

describe('mock MCP server', () => {
  let mock: MockProvider;

  before(async () => {
    mock = await mockWith({ name: 'alpha' });
  });

  it('initializes with its name and lists every tool with its annotations, title and output schema', async () => {
    const { client } = await connect(mock);
    assert.equal(client.getServerVersion()?.name, 'alpha');
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: true });
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    assert.deepEqual([...byName.keys()], ['echo', 'slow', 'fail', 'weather', 'progress', 'write']);
    assert.deepEqual(byName.get('echo')?.annotations, { readOnlyHint: true });
    assert.deepEqual(byName.get('slow')?.annotations, { readOnlyHint: true, idempotentHint: true });
    assert.deepEqual(byName.get('write')?.annotations, { destructiveHint: true, idempotentHint: false, readOnlyHint: false });
    const weather = byName.get('weather') as Tool;
    assert.equal(weather.title, 'Weather');
    assert.deepEqual(weather.annotations, { readOnlyHint: true, openWorldHint: false });
    assert.deepEqual(weather.outputSchema?.required, ['city', 'temperature_c', 'conditions']);
    const stats = mock.mcpStats();
    assert.ok(stats.sessions_open >= 1 && stats.initialize_count >= 1 && stats.list_count >= 1);
    assert.ok(stats.protocol_versions_seen.includes('2025-11-25'));
  });

  it('answers each built-in tool as documented', async () => {
    const { client } = await connect(mock);
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })), '[alpha] hi');
    assert.equal(textOf(await client.callTool({ name: 'slow', arguments: { ms: 5 } })), 'slept 5');
    const failed = await client.callTool({ name: 'fail', arguments: {} });
    assert.equal(failed.isError, true);
    await assert.rejects(client.callTool({ name: 'fail', arguments: { mode: 'throw' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal(err.code, -32603);
      return true;
    });
    await client.listTools(); // the client checks structuredContent against the listed output schema
    const weather = await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } });
    const report = weather.structuredContent as { city: string; temperature_c: number; conditions: string };
    assert.equal(report.city, 'Oslo');
    assert.equal(typeof report.temperature_c, 'number');
    assert.deepEqual(JSON.parse(textOf(weather)), report);
    const before = mock.mcpStats().writes.k1 ?? 0;
    assert.equal(textOf(await client.callTool({ name: 'write', arguments: { key: 'k1', value: 'v' } })), `wrote k1 (${before + 1})`);
    assert.equal(mock.mcpStats().writes.k1, before + 1);
    assert.ok((mock.mcpStats().calls.echo ?? 0) >= 1);
  });

  it('sends a progress notification per step to a caller with a progress token', async () => {
    const { client } = await connect(mock);
    const seen: Progress[] = [];
    const result = await client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => seen.push(p) });
    assert.equal(textOf(result), 'done 3');
    assert.deepEqual(
      seen.map((p) => [p.progress, p.total]),
      [
        [1, 3],
        [2, 3],
        [3, 3],
      ],
    );
  });

  it('refuses a request without a session id that is not an initialize, and ends a session on DELETE', async () => {
    const refused = await rawPost(mock, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    assert.equal(refused.status, 400);
    await refused.body?.cancel();
    const { transport } = await connect(mock);
    const id = transport.sessionId as string;
    await transport.terminateSession();
    const gone = await rawPost(
      mock,
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
    );
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
  });

  it('tells a connected client its tool list changed, and serves the added tool', async () => {
    const { client, streams } = await connectListening(mock);
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changes += 1;
    });
    // A notification sent before this client's GET stream opened would never reach it.
    await until(() => mock.mcpStats().get_streams_open > streams, 'the GET stream');
    mock.mcpTools({ add: [{ name: 'extra', text: 'extra answer' }] });
    await until(() => changes === 1, 'list_changed');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'extra'));
    assert.equal(textOf(await client.callTool({ name: 'extra', arguments: {} })), 'extra answer');
    mock.mcpTools({ remove: ['extra'] });
    await until(() => changes === 2, 'the second list_changed');
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'extra'));
  });

  it('replays to a reconnecting GET stream what was sent while it was down', async () => {
    const { client, streams } = await connectListening(mock);
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changes += 1;
    });
    // A notification sent before this client's GET stream opened would never reach it.
    await until(() => mock.mcpStats().get_streams_open > streams, 'the GET stream');
    mock.mcpTools({ add: [{ name: 'first' }] });
    await until(() => changes === 1, 'the first list_changed');
    // Dropped, then a change at once: the client's reconnect can only learn of it by Last-Event-ID.
    mock.mcpDropStreams();
    mock.mcpTools({ add: [{ name: 'second' }] });
    await until(() => changes === 2, 'the replayed list_changed');
    mock.mcpTools({ remove: ['first', 'second'] });
    await until(() => changes === 3, 'the last list_changed');
  });

  it('forgets every session on restart: an old session id gets 404', async () => {
    const { transport } = await connect(mock);
    const id = transport.sessionId as string;
    const opened = mock.mcpStats().sessions_opened;
    await mock.mcpRestart();
    assert.equal(mock.mcpStats().sessions_open, 0);
    assert.equal(mock.mcpStats().sessions_opened, opened);
    const res = await rawPost(
      mock,
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
    );
    assert.equal(res.status, 404);
    await res.body?.cancel();
  });
});

describe('mock MCP server options', () => {
  it('pages tools/list by the page size, and the client walks every page by cursor', async () => {
    const mock = await mockWith({ name: 'paged', mcpPageSize: 2 });
    const { client } = await connect(mock);
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      assert.ok(page.tools.length <= 2);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== undefined && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual(names, ['echo', 'slow', 'fail', 'weather', 'progress', 'write']);
  });

  it('serves only the chosen tools, under the prefix', async () => {
    const mock = await mockWith({ name: 'beta', mcpTools: ['echo', 'write'], mcpToolPrefix: 'b_' });
    const { client } = await connect(mock);
    assert.deepEqual(
      (await client.listTools()).tools.map((t) => t.name),
      ['b_echo', 'b_write'],
    );
    assert.equal(textOf(await client.callTool({ name: 'b_echo', arguments: { text: 'x' } })), '[beta] x');
    assert.deepEqual(mock.mcpStats().calls, { b_echo: 1 });
  });

  it('answers a POST with JSON or with an event stream, as configured', async () => {
    for (const [mode, type] of [
      ['json', 'application/json'],
      ['sse', 'text/event-stream'],
    ] as const) {
      const mock = await mockWith({ name: `mode-${mode}`, mcpResponse: mode });
      const res = await rawPost(mock, initialize);
      assert.equal(res.status, 200);
      assert.ok(res.headers.get('content-type')?.startsWith(type), `${mode}: ${res.headers.get('content-type')}`);
      assert.ok(res.headers.get('mcp-session-id'));
      assert.match(await res.text(), /"serverInfo"/);
      // The client works either way.
      const { client } = await connect(mock);
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: mode } })), `[mode-${mode}] ${mode}`);
    }
  });

  it('wants the bearer key on every request, and records the Authorization it saw', async () => {
    const mock = await mockWith({ name: 'locked', apiKey: 'sekrit' });
    const bare = await rawPost(mock, initialize);
    assert.equal(bare.status, 401);
    assert.equal(bare.headers.get('www-authenticate'), 'Bearer');
    assert.equal(((await bare.json()) as { jsonrpc: string }).jsonrpc, '2.0');
    const wrong = await rawPost(mock, initialize, { authorization: 'Bearer nope' });
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    const { client } = await connect(mock, { authorization: 'Bearer sekrit' });
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'in' } })), '[locked] in');
    const stats = mock.mcpStats();
    assert.deepEqual(stats.authorization_seen, ['Bearer nope', 'Bearer sekrit']);
    assert.equal(stats.last_call_headers?.authorization, 'Bearer sekrit');
  });

  it('refuses MCP options without protocol mcp, and unknown tools', () => {
    assert.throws(() => startMockProvider({ name: 'x', mcpPageSize: 2 }), /only applies with protocol mcp/);
    assert.throws(() => startMockProvider({ name: 'x', protocol: 'mcp', mcpTools: ['nope' as 'echo'] }), /mcpTools/);
    assert.throws(() => startMockProvider({ name: 'x', protocol: 'mcp', mcpResponse: 'xml' as 'json' }), /mcpResponse/);
  });
});

describe('mock MCP server faults', () => {
  let mock: MockProvider;

  before(async () => {
    mock = await mockWith({ name: 'faulty' });
  });

  it('answers a status fault on tools/call only, so initialize and list keep working', async () => {
    const { client } = await connect(mock);
    mock.addFault({ mode: 'status', status: 503, count: 1 });
    assert.equal((await client.listTools()).tools.length, 6);
    await assert.rejects(client.callTool({ name: 'echo', arguments: { text: 'x' } }), /503/);
    assert.equal(mock.mcpStats().calls.echo, undefined);
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'x' } })), '[faulty] x');
  });

  it('drops the connection on a close fault without running the tool', async () => {
    const { client } = await connect(mock);
    mock.addFault({ mode: 'close', count: 1 });
    await assert.rejects(client.callTool({ name: 'write', arguments: { key: 'closed', value: 'v' } }));
    assert.equal(mock.mcpStats().writes.closed, undefined);
  });

  it('runs the tool on a cut_stream fault, then drops the connection before the answer', async () => {
    const { transport } = await connect(mock);
    mock.addFault({ mode: 'cut_stream', count: 1 });
    const headers = { 'mcp-session-id': transport.sessionId as string, 'mcp-protocol-version': '2025-11-25' };
    await assert.rejects(async () => {
      const res = await rawPost(mock, callBody('write', { key: 'cut', value: 'v' }), headers);
      await res.text();
    });
    assert.equal(mock.mcpStats().writes.cut, 1);
  });

  it('delays a tools/call on a latency fault, then serves it', async () => {
    const { client } = await connect(mock);
    mock.addFault({ mode: 'latency', latency_ms: 20, count: 1 });
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'late' } })), '[faulty] late');
  });

  it('drops a JSON answer on cut_stream too, after the tool ran', async () => {
    const json = await mockWith({ name: 'faulty-json', mcpResponse: 'json' });
    const { client } = await connect(json);
    json.addFault({ mode: 'cut_stream', count: 1 });
    await assert.rejects(client.callTool({ name: 'write', arguments: { key: 'cut', value: 'v' } }));
    assert.equal(json.mcpStats().writes.cut, 1);
  });

  it('changes tools, restarts and drops streams through the HTTP control API', async () => {
    const { client, streams } = await connectListening(mock);
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changes += 1;
    });
    await until(() => mock.mcpStats().get_streams_open > streams, 'the GET stream');
    const control = (path: string, body = '{}'): Promise<Response> => fetch(new URL(path, mock.origin), { method: 'POST', body });
    const added = await control('/__mock/mcp/tools', JSON.stringify({ add: [{ name: 'via-http' }] }));
    assert.equal(added.status, 200);
    assert.ok(((await added.json()) as { tools: string[] }).tools.includes('via-http'));
    await until(() => changes === 1, 'list_changed');
    assert.equal(textOf(await client.callTool({ name: 'via-http', arguments: {} })), '[faulty] via-http');
    const bad = await control('/__mock/mcp/tools', JSON.stringify({ add: [{}] }));
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
    const dropped = await control('/__mock/mcp/drop-streams');
    assert.equal(dropped.status, 200);
    await dropped.body?.cancel();
    const restarted = await control('/__mock/mcp/restart');
    assert.equal(restarted.status, 200);
    await restarted.body?.cancel();
    assert.equal(mock.mcpStats().sessions_open, 0);
    const stats = await fetch(new URL('/__mock/mcp', mock.origin));
    assert.equal(((await stats.json()) as { get_streams_open: number }).get_streams_open, 0);
  });

  it('clears MCP stats, writes and tool changes on reset', async () => {
    mock.mcpTools({ add: [{ name: 'temp' }] });
    mock.reset();
    const stats = mock.mcpStats();
    assert.deepEqual(stats.writes, {});
    assert.deepEqual(stats.calls, {});
    assert.equal(stats.initialize_count, 0);
    assert.equal(stats.last_call_headers, null);
    const { client } = await connect(mock);
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'temp'));
    const res = await fetch(new URL('/__mock/mcp', mock.origin));
    assert.equal(((await res.json()) as { initialize_count: number }).initialize_count, 1);
  });
});
