import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type Progress, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { waitUntil } from '../support/observe.js';

// The /mcp endpoint through a real gateway process, with the official MCP SDK client as the
// gateway's client and two mock MCP servers (the SDK's own server) as its providers: the
// handshake, tools listed with their schemas, calls routed by name (static routes and a
// tools_from source), progress relayed, careful failover, a server that restarts or
// changes its catalog, a reload, sessions bound to their key, the Origin and version
// checks, the allow-lists and rpm, and the caller's key never reaching a server.

const KEY_A = 'sk-mcp-test-key-alpha-0123456789';
const KEY_B = 'sk-mcp-test-key-bravo-0123456789';
const KEY_LIMITED = 'sk-mcp-test-key-limited-012345678';
const UPSTREAM_KEY = 'upstream-alpha-credential';

let alpha: MockProvider;
let bravo: MockProvider;
let charlie: MockProvider;
let gw: GatewayProcess;
const clients: Client[] = [];

function config(extraTools: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    log: { level: 'info', access: true },
    providers: {
      alpha: { type: 'mcp', base_url: `${alpha.origin}/mcp`, api_key: { env: 'ALPHA_KEY' }, timeout_ms: 1500 },
      bravo: { type: 'mcp', base_url: `${bravo.origin}/mcp`, timeout_ms: 1500, trust_annotations: true },
      charlie: { type: 'mcp', base_url: `${charlie.origin}/mcp`, timeout_ms: 1500 },
    },
    routing: {
      tools: {
        echo: { candidates: [{ provider: 'alpha' }, { provider: 'bravo' }] },
        weather: { candidates: [{ provider: 'alpha' }] },
        progress: { candidates: [{ provider: 'alpha' }] },
        write: { candidates: [{ provider: 'alpha' }, { provider: 'bravo' }] },
        slow: { retry_safe: true, candidates: [{ provider: 'alpha' }, { provider: 'bravo' }] },
        relay: {
          candidates: [
            { provider: 'charlie', tool: 'write' },
            { provider: 'bravo', tool: 'write' },
          ],
        },
        ...extraTools,
      },
      tools_from: [{ provider: 'bravo', prefix: 'b_' }],
    },
    mcp: { catalog_recheck_ms: 0, list_changed_debounce_ms: 20, allowed_origins: ['https://app.example.com'] },
    teams: {
      eng: {},
      limited: { allowed_tools: ['echo', 'b_*'], rate_limit: { rpm: 3 } },
    },
    keys: [
      { id: 'a', team: 'eng', sha256: hashKey(KEY_A) },
      { id: 'b', team: 'eng', sha256: hashKey(KEY_B) },
      { id: 'limited', team: 'limited', sha256: hashKey(KEY_LIMITED) },
    ],
    audit: { file: 'AUDIT' },
  };
}

function withAudit(c: Record<string, unknown>, dir: string): Record<string, unknown> {
  return { ...c, audit: { file: join(dir, 'audit.jsonl') } };
}

async function connect(key = KEY_A): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

function text(result: unknown): string {
  const content = (result as { content: Array<{ type: string; text?: string }> }).content;
  return content.map((c) => c.text ?? '').join('');
}

async function rawPost(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(new URL('/mcp', gw.url), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${KEY_A}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

before(async () => {
  alpha = await startMockProvider({ name: 'alpha', protocol: 'mcp', apiKey: UPSTREAM_KEY });
  bravo = await startMockProvider({ name: 'bravo', protocol: 'mcp', mcpResponse: 'json' });
  charlie = await startMockProvider({ name: 'charlie', protocol: 'mcp', mcpTools: ['write'] });
  const dir = (await import('node:fs')).mkdtempSync(join((await import('node:os')).tmpdir(), 'switchyard-mcp-'));
  gw = await startGatewayProcess(withAudit(config(), dir), { dir, env: { ALPHA_KEY: UPSTREAM_KEY } });
  // Both catalogs are listed before the first test.
  await waitUntil(() => gw.logs().filter((l) => l.msg === 'MCP server catalog listed').length >= 3, 'the catalogs are listed');
});

after(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await gw?.stop();
  await alpha?.close();
  await bravo?.close();
  await charlie?.close();
});

beforeEach(() => {
  alpha.clearFaults();
  bravo.clearFaults();
});

describe('the MCP endpoint', () => {
  it('initializes as a tools server that announces list changes, and lists routed tools with the schemas their servers published', async () => {
    const { client } = await connect();
    assert.equal(client.getServerVersion()?.name, 'switchyard');
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: true });
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ['echo', 'weather', 'progress', 'write', 'slow', 'b_echo', 'b_weather'])
      assert.ok(names.includes(name), `${name} is listed`);
    assert.deepEqual(names, [...names].sort(), 'in name order');
    const weather = tools.find((t) => t.name === 'weather');
    assert.equal(weather?.title, 'Weather');
    assert.equal((weather?.outputSchema as { required?: string[] })?.required?.includes('temperature_c'), true);
    assert.equal(tools.find((t) => t.name === 'echo')?.annotations?.readOnlyHint, true);
  });

  it('routes a call by name to its server, rewriting a tools_from name to the server s own', async () => {
    const { client } = await connect();
    assert.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })), '[alpha] hi');
    assert.equal(text(await client.callTool({ name: 'b_echo', arguments: { text: 'hi' } })), '[bravo] hi');
    const weather = await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } });
    assert.equal((weather.structuredContent as { city?: string })?.city, 'Oslo');
    const failed = await client.callTool({ name: 'b_fail', arguments: { mode: 'error' } });
    assert.equal(failed.isError, true, "a tool's own failure is its result");
  });

  it('relays progress notifications with the client s own token, then the result', async () => {
    const { client } = await connect();
    const seen: Progress[] = [];
    const result = await client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => seen.push(p) });
    assert.equal(text(result), 'done 3');
    assert.deepEqual(
      seen.map((p) => [p.progress, p.total]),
      [
        [1, 3],
        [2, 3],
        [3, 3],
      ],
    );
  });

  it('cancels upstream a call the client cancels (notifications/cancelled)', async () => {
    const { client } = await connect();
    const ran = alpha.mcpStats().calls.slow ?? 0;
    const controller = new AbortController();
    const pending = client.callTool({ name: 'slow', arguments: { ms: 20_000 } }, undefined, { signal: controller.signal });
    await waitUntil(() => (alpha.mcpStats().calls.slow ?? 0) > ran, 'the slow tool is running');
    controller.abort();
    await assert.rejects(pending);
    const line = await gw.waitForLog((l) => l.mcp_method === 'tools/call' && l.tool === 'slow' && l.reason === 'client_closed');
    assert.equal(line.provider, 'alpha');
    assert.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'after' } })), '[alpha] after', 'the session goes on');
  });

  it('never sends the caller s key upstream: a server sees only its own configured credential', async () => {
    const { client } = await connect(KEY_B);
    await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    await client.callTool({ name: 'b_echo', arguments: { text: 'x' } });
    assert.deepEqual(alpha.mcpStats().authorization_seen, [`Bearer ${UPSTREAM_KEY}`]);
    assert.deepEqual(bravo.mcpStats().authorization_seen, []);
    for (const mock of [alpha, bravo]) {
      const headers = JSON.stringify(mock.mcpStats().last_call_headers);
      assert.ok(!headers.includes(KEY_A) && !headers.includes(KEY_B), `${mock.name} saw no caller key`);
    }
  });

  it('answers an unknown tool, and another method, with JSON-RPC errors', async () => {
    const { client } = await connect();
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal(err.code, -32602);
      assert.match(err.message, /Unknown tool: nope/);
      assert.deepEqual((err.data as { code: string }).code, 'tool_not_found');
      return true;
    });
    await assert.rejects(client.listResources(), (err: unknown) => err instanceof McpError && err.code === -32601);
  });
});

describe('careful failover', () => {
  it('moves even a write that never reached its server (the connection refused, then its breaker open) to the next one', async () => {
    const { client } = await connect();
    assert.equal(text(await client.callTool({ name: 'relay', arguments: { key: 'r', value: '1' } })), 'wrote r (1)');
    assert.equal(charlie.mcpStats().writes.r, 1, 'charlie served while it was up');
    await charlie.close();
    // Its last catalog still lists the tool: the call is tried there, refused at connect, and moves on.
    assert.equal(text(await client.callTool({ name: 'relay', arguments: { key: 'r', value: '2' } })), 'wrote r (1)');
    assert.equal(bravo.mcpStats().writes.r, 1, 'bravo took the write charlie never received');
  });

  it('gives a non-retry-safe call that reached its server the error, and moves a retry-safe one on a 5xx', async () => {
    const { client } = await connect();
    // A fault that answers 503 for a call of a tool that is not retry-safe: the client gets the error, nothing moves on.
    alpha.addFault({ mode: 'status', status: 503, count: 1 });
    await assert.rejects(client.callTool({ name: 'echo', arguments: { text: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal((err.data as { code: string }).code, 'upstream_error');
      return true;
    });
    // A retry-safe route's 5xx does move on.
    alpha.addFault({ mode: 'status', status: 503, count: 1 });
    assert.equal(text(await client.callTool({ name: 'slow', arguments: { ms: 1 } })), 'slept 1');
    assert.equal(bravo.mcpStats().calls.slow, 1, 'bravo served the retry-safe call');
  });

  it('never sends a write twice: a write cut after it ran is the client s error, and the next server never sees it', async () => {
    const { client } = await connect();
    const before = { a: alpha.mcpStats().writes.k ?? 0, b: bravo.mcpStats().writes.k ?? 0 };
    alpha.addFault({ mode: 'cut_stream', count: 1 });
    await assert.rejects(client.callTool({ name: 'write', arguments: { key: 'k', value: 'v' } }), McpError);
    assert.equal(alpha.mcpStats().writes.k, before.a + 1, 'the write ran once on alpha');
    assert.equal(bravo.mcpStats().writes.k ?? 0, before.b, 'and was never sent to bravo');
  });

  it('re-initializes a server that restarted without the client noticing', async () => {
    const { client } = await connect();
    const opened = alpha.mcpStats().sessions_opened;
    await alpha.mcpRestart();
    assert.equal(text(await client.callTool({ name: 'echo', arguments: { text: 'again' } })), '[alpha] again');
    assert.ok(alpha.mcpStats().sessions_opened > opened, 'the gateway opened a new upstream session');
  });
});

describe('live tool lists', () => {
  it('a server s new tool reaches an open session as list_changed, and can be called', async () => {
    const { client } = await connect();
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed += 1;
    });
    // The GET stream is open before the change.
    await waitUntil(() => bravo.mcpStats().get_streams_open >= 1, 'the gateway holds bravo s stream');
    bravo.mcpTools({ add: [{ name: 'fresh', text: 'fresh answer' }] });
    await waitUntil(() => changed > 0, 'the session hears list_changed');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'b_fresh'));
    assert.equal(text(await client.callTool({ name: 'b_fresh', arguments: {} })), 'fresh answer');
    bravo.mcpTools({ remove: ['fresh'] });
    await waitUntil(async () => !(await client.listTools()).tools.some((t) => t.name === 'b_fresh'), 'the withdrawn tool is unlisted');
    await assert.rejects(
      client.callTool({ name: 'b_fresh', arguments: {} }),
      (err: unknown) => err instanceof McpError && err.code === -32602,
    );
  });

  it('a reload that adds a route reaches an open session as list_changed', async () => {
    const { client } = await connect();
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed += 1;
    });
    // The session's GET stream is open once the gateway has told it nothing (a priming event).
    await new Promise((r) => setTimeout(r, 100));
    gw.writeConfig(withAudit(config({ shout: { candidates: [{ provider: 'bravo', tool: 'echo' }] } }), gw.dir));
    gw.child.kill('SIGHUP');
    await waitUntil(() => changed > 0, 'the session hears list_changed after the reload');
    assert.equal(text(await client.callTool({ name: 'shout', arguments: { text: 'loud' } })), '[bravo] loud');
    gw.writeConfig(withAudit(config(), gw.dir));
    gw.child.kill('SIGHUP');
    await waitUntil(() => changed > 1, 'and again when it is removed');
  });
});

describe('sessions, origins and versions', () => {
  it('binds a session to the key that opened it: another key presenting its id gets 404', async () => {
    const init = await rawPost(INIT);
    assert.equal(init.status, 200);
    const id = init.headers.get('mcp-session-id');
    assert.ok(id !== null);
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    assert.equal((await rawPost(ping, { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' })).status, 200);
    const other = await rawPost(ping, { 'mcp-session-id': id, authorization: `Bearer ${KEY_B}` });
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as { error: { data: { code: string } } }).error.data.code, 'mcp_session_not_found');
    const ended = await fetch(new URL('/mcp', gw.url), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEY_A}`, 'mcp-session-id': id },
    });
    assert.equal(ended.status, 200);
    assert.equal((await rawPost(ping, { 'mcp-session-id': id })).status, 404, 'a deleted session is gone');
  });

  it('authenticates before reading the body, checks the Origin and the protocol version header', async () => {
    const anonymous = await rawPost(INIT, { authorization: '' });
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /Bearer/);
    assert.equal((await rawPost(INIT, { origin: 'https://evil.example' })).status, 403);
    assert.equal((await rawPost(INIT, { origin: 'https://app.example.com' })).status, 200);
    assert.equal((await rawPost(INIT, { origin: 'http://localhost:3000' })).status, 200);
    const version = await rawPost(INIT, { 'mcp-protocol-version': '1999-01-01' });
    assert.equal(version.status, 400);
    assert.equal(((await version.json()) as { error: { data: { code: string } } }).error.data.code, 'mcp_protocol_version_unsupported');
    // initialize answers the client's version when supported, else the newest.
    const old = await rawPost({ ...INIT, params: { ...INIT.params, protocolVersion: '2024-11-05' } });
    assert.equal(((await old.json()) as { result: { protocolVersion: string } }).result.protocolVersion, '2025-11-25');
    const noSession = await rawPost({ jsonrpc: '2.0', id: 3, method: 'tools/list' });
    assert.equal(noSession.status, 400);
  });
});

describe('governance', () => {
  it('lists and calls only the tools a team may use, and counts only tools/call against rpm', async () => {
    const { client } = await connect(KEY_LIMITED);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('echo') && names.includes('b_echo'));
    assert.ok(!names.includes('write') && !names.includes('weather'), 'tools outside allowed_tools are not listed');
    await assert.rejects(client.callTool({ name: 'weather', arguments: { city: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal((err.data as { code: string }).code, 'tool_not_allowed');
      return true;
    });
    // Listing again and pinging count nothing; three calls fit rpm 3 and the fourth is refused.
    await client.listTools();
    await client.ping();
    for (let i = 0; i < 3; i++) await client.callTool({ name: 'echo', arguments: { text: String(i) } });
    await assert.rejects(client.callTool({ name: 'echo', arguments: { text: 'over' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal((err.data as { code: string }).code, 'rate_limit_exceeded');
      assert.ok(typeof (err.data as { retry_after_s?: number }).retry_after_s === 'number');
      return true;
    });
  });

  it('writes one audit record and one access line per call, and counts calls by tool, provider and outcome', async () => {
    const { client } = await connect();
    const audited = (): Array<Record<string, unknown>> =>
      readFileSync(join(gw.dir, 'audit.jsonl'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('"tool_called"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const before = audited().length;
    await client.callTool({ name: 'echo', arguments: { text: 'audited secret-argument' } });
    await waitUntil(() => audited().length > before, 'the audit record is written');
    const records = audited();
    const last = records.at(-1) as Record<string, unknown>;
    assert.equal(last.tool, 'echo');
    assert.equal(last.provider, 'alpha');
    assert.equal(last.outcome, 'result');
    assert.equal(last.is_error, false);
    assert.equal(last.key_id, 'a');
    assert.ok(!JSON.stringify(records).includes('secret-argument'), 'never the arguments');
    await waitUntil(() => gw.logs().some((l) => l.mcp_method === 'tools/call' && l.tool === 'echo'), 'the access line');
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    assert.match(metrics, /switchyard_mcp_tool_calls_total\{tool="echo",provider="alpha",outcome="result"\} \d+/);
    assert.match(metrics, /switchyard_mcp_sessions \d+/);
    assert.match(metrics, /switchyard_mcp_catalog_tools\{provider="bravo"\} 6/);
    const status = (await (await fetch(`${gw.adminUrl}/admin/status`)).json()) as {
      mcp: { servers: Array<{ provider: string; tools: string[] | null; refreshed_at: string | null }> };
    };
    const bravoStatus = status.mcp.servers.find((s) => s.provider === 'bravo');
    assert.ok(bravoStatus?.tools?.includes('echo'));
    assert.ok(bravoStatus?.refreshed_at !== null);
  });
});

describe('shutdown', () => {
  it('ends open GET streams at the drain, so an MCP client never holds the drain to its limit', async () => {
    const { client } = await connect();
    await client.listTools();
    // The SDK client holds its session's GET stream open.
    await new Promise((r) => setTimeout(r, 100));
    const code = await gw.stop();
    assert.equal(code, 0);
    assert.ok(!gw.logs().some((l) => l.msg === 'drain timeout: ending the requests still in flight'), 'nothing was left in flight');
    assert.equal(gw.logs().find((l) => l.msg === 'stopped')?.drained, true);
  });
});
