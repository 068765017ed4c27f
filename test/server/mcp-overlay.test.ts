import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { waitUntil } from '../support/observe.js';
import { candidate, envelope } from '../support/overlay.js';
import { revisionOf, waitForServing, writeByRename } from '../support/overlay-gateway.js';

// Tool routes from the overlay: every mcp_tool candidate names an exposed tool and an MCP
// server (its cluster), with the admission states, groups and revision semantics of model
// candidates. Published revisions that withdraw a tool, add one and move one to another
// server (with another schema) reach an open session as notifications/tools/list_changed,
// and its next call goes where the new revision says; existing_only keeps a session on its
// server; an empty revision withdraws every tool.

let alpha: MockProvider;
let bravo: MockProvider;
let gw: GatewayProcess;
let overlayFile: string;
const clients: Client[] = [];

const tool = (name: string, cluster: string, extra: Record<string, unknown> = {}) =>
  candidate(name, cluster, { kind: 'mcp_tool', ...extra });

function publish(candidates: unknown[]): string {
  const env = envelope(candidates);
  writeByRename(overlayFile, JSON.stringify(env));
  return revisionOf(env);
}

async function connect(): Promise<{ client: Client; changes: () => number }> {
  const client = new Client({ name: 'overlay-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', gw.url)));
  clients.push(client);
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes += 1;
  });
  return { client, changes: () => changes };
}

function text(result: unknown): string {
  return (result as { content: Array<{ text?: string }> }).content.map((c) => c.text ?? '').join('');
}

async function names(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((t) => t.name);
}

/** Waits until the gateway's GET stream to each server is open and each session's own stream is too. */
async function settled(): Promise<void> {
  await waitUntil(() => alpha.mcpStats().get_streams_open >= 1 && bravo.mcpStats().get_streams_open >= 1, 'the upstream streams are open');
  await new Promise((r) => setTimeout(r, 100));
}

before(async () => {
  alpha = await startMockProvider({ name: 'alpha', protocol: 'mcp' });
  bravo = await startMockProvider({ name: 'bravo', protocol: 'mcp', mcpResponse: 'json' });
  // One tool both list under one name, with another description on each: moving it changes its schema.
  alpha.mcpTools({ add: [{ name: 'lookup', description: 'alpha lookup', text: 'from alpha' }] });
  bravo.mcpTools({ add: [{ name: 'lookup', description: 'bravo lookup', text: 'from bravo' }] });
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-mcp-overlay-'));
  overlayFile = join(dir, 'overlay.json');
  const first = publish([tool('echo', 'alpha'), tool('weather', 'alpha'), tool('lookup', 'alpha')]);
  gw = await startGatewayProcess(
    {
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
      log: { level: 'info', access: false },
      providers: {
        alpha: { type: 'mcp', base_url: `${alpha.origin}/mcp`, timeout_ms: 2000 },
        bravo: { type: 'mcp', base_url: `${bravo.origin}/mcp`, timeout_ms: 2000 },
      },
      routing: { overlay: { file: overlayFile, reload: { debounce_ms: 30, recheck_ms: 3_600_000 } } },
      mcp: { catalog_recheck_ms: 0, list_changed_debounce_ms: 20 },
    },
    { dir },
  );
  await waitForServing(gw, first);
  await waitUntil(() => gw.logs().filter((l) => l.msg === 'MCP server catalog listed').length >= 2, 'both catalogs are listed');
});

after(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await gw?.stop();
  await alpha?.close();
  await bravo?.close();
});

describe('overlay mcp_tool candidates', () => {
  it('a revision that withdraws a tool, adds one and moves one reaches an open session, and the next call follows it', async () => {
    const { client, changes } = await connect();
    assert.deepEqual(await names(client), ['echo', 'lookup', 'weather']);
    assert.equal(text(await client.callTool({ name: 'lookup', arguments: {} })), 'from alpha');
    await settled();
    const revision = publish([tool('echo', 'alpha'), tool('write', 'alpha'), tool('lookup', 'bravo')]);
    await waitForServing(gw, revision);
    await waitUntil(() => changes() >= 1, 'list_changed reaches the session');
    const listed = (await client.listTools()).tools;
    assert.deepEqual(
      listed.map((t) => t.name),
      ['echo', 'lookup', 'write'],
    );
    assert.equal(listed.find((t) => t.name === 'lookup')?.description, 'bravo lookup', 'the moved tool has its new server s schema');
    assert.equal(text(await client.callTool({ name: 'lookup', arguments: {} })), 'from bravo', 'its bound server was withdrawn');
    await assert.rejects(
      client.callTool({ name: 'weather', arguments: { city: 'x' } }),
      (err: unknown) => err instanceof McpError && err.code === -32602,
    );
    assert.equal(text(await client.callTool({ name: 'write', arguments: { key: 'o', value: 'v' } })), 'wrote o (1)');
  });

  it('existing_only keeps a session on its server while new sessions go to the one that admits them', async () => {
    publish([tool('echo', 'alpha')]);
    const { client: old } = await connect();
    await waitUntil(async () => (await names(old)).join() === 'echo', 'only echo is routed');
    assert.equal(text(await old.callTool({ name: 'echo', arguments: { text: 'a' } })), '[alpha] a');
    const revision = publish([tool('echo', 'alpha', { admission_state: 'existing_only' }), tool('echo', 'bravo')]);
    await waitForServing(gw, revision);
    assert.equal(text(await old.callTool({ name: 'echo', arguments: { text: 'b' } })), '[alpha] b', 'the bound session stays');
    const { client: fresh } = await connect();
    assert.equal(text(await fresh.callTool({ name: 'echo', arguments: { text: 'c' } })), '[bravo] c', 'a new session goes to bravo');
  });

  it('an empty revision withdraws every tool: the list is empty and a call answers a JSON-RPC error naming the tool', async () => {
    publish([tool('echo', 'alpha')]);
    const { client, changes } = await connect();
    await waitUntil(async () => (await names(client)).join() === 'echo', 'echo is routed');
    await settled();
    const before = changes();
    const revision = publish([]);
    await waitForServing(gw, revision);
    await waitUntil(() => changes() > before, 'list_changed reaches the session');
    assert.deepEqual(await names(client), []);
    await assert.rejects(client.callTool({ name: 'echo', arguments: { text: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal(err.code, -32602);
      assert.match(err.message, /echo/);
      return true;
    });
  });

  it('a tool candidate on a cluster that is no MCP server is reported unroutable, and the rest of the revision serves', async () => {
    const revision = publish([tool('echo', 'alpha'), tool('ghost', 'nowhere')]);
    const status = await waitForServing(gw, revision);
    const overlay = status.overlay as unknown as {
      unroutable_candidates: Array<{ kind: string; model: string }>;
      candidates_per_tool: Record<string, number>;
    };
    assert.deepEqual(
      overlay.unroutable_candidates.map((u) => [u.kind, u.model]),
      [['mcp_tool', 'ghost']],
    );
    assert.deepEqual(overlay.candidates_per_tool, { echo: 1, ghost: 1 });
    const { client } = await connect();
    assert.deepEqual(await names(client), ['echo']);
  });
});
