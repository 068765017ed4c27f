import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { adminStatusBody } from '../support/admin.js';
import { postgresDatabase, sqliteDatabase } from '../support/databases.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { catalogsListed, mcpProvider } from '../support/mcp.js';
import { waitUntil } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// /mcp between tenants and against a server that never finishes, through real gateway
// processes and mock MCP servers: one key's sessions are capped without touching another
// key's, a revoked or expired key's open GET stream ends (on every replica), a call that
// its server keeps talking on ends at mcp.call_timeout_ms and is cancelled upstream, and a
// tool name a server lists twice is reported.

const resources = fileResources('switchyard-mcp-tenants-');
const KEY_A = 'sk-mcp-tenant-alpha-0123456789abcdef';
const KEY_B = 'sk-mcp-tenant-bravo-0123456789abcdef';
const ADMIN = 'admin-token-for-the-mcp-tenant-tests';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function gatewayConfig(alpha: MockProvider, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 1000 },
    log: { level: 'info', access: false },
    providers: { alpha: mcpProvider(alpha, { timeout_ms: 1500 }) },
    routing: { routes: {}, tools: { echo: { candidates: [{ provider: 'alpha' }] }, slow: { candidates: [{ provider: 'alpha' }] } } },
    mcp: { catalog_recheck_ms: 0, list_changed_debounce_ms: 20 },
    teams: { eng: {} },
    keys: [
      { id: 'a', team: 'eng', sha256: hashKey(KEY_A) },
      { id: 'b', team: 'eng', sha256: hashKey(KEY_B) },
    ],
    ...extra,
  };
}

function post(gw: GatewayProcess, key: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return fetch(new URL('/mcp', gw.url), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...headers,
    },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });
}

/** A raw initialize: the new session's id. */
async function openSession(gw: GatewayProcess, key: string): Promise<string> {
  const res = await post(gw, key, INIT);
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  return res.headers.get('mcp-session-id') as string;
}

async function ping(gw: GatewayProcess, key: string, session: string): Promise<number> {
  const res = await post(gw, key, { jsonrpc: '2.0', id: 9, method: 'ping' }, { 'mcp-session-id': session });
  await res.arrayBuffer();
  return res.status;
}

/** Opens the session's GET stream; `ended` settles when the gateway ends it. */
async function openStream(gw: GatewayProcess, key: string, session: string): Promise<{ ended: Promise<void>; abort: () => void }> {
  const controller = new AbortController();
  const res = await fetch(new URL('/mcp', gw.url), {
    headers: {
      authorization: `Bearer ${key}`,
      accept: 'text/event-stream',
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-06-18',
    },
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const ended = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })();
  ended.catch(() => undefined);
  return { ended, abort: () => controller.abort() };
}

/** Whether `p` settles within `ms` (a generous bound that only catches a hang). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const done = p.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([done, hang]);
  } finally {
    clearTimeout(timer);
  }
}

describe('MCP sessions per key (mcp.sessions.max_per_key)', () => {
  it('one key flooding initialize ends only its own idlest sessions; another key s sessions survive a full table', async () => {
    const alpha = await resources.startMock({ name: 'alpha', protocol: 'mcp' });
    const gw = await resources.startGw(
      gatewayConfig(alpha, { mcp: { catalog_recheck_ms: 0, sessions: { max_entries: 6, max_per_key: 3 } } }),
    );
    await catalogsListed(gw, 1);
    const bSessions = [await openSession(gw, KEY_B), await openSession(gw, KEY_B)];
    const aSessions: string[] = [];
    for (let i = 0; i < 20; i += 1) aSessions.push(await openSession(gw, KEY_A));
    for (const s of bSessions) assert.equal(await ping(gw, KEY_B, s), 200, 'key b s session is still open');
    const aOpen: string[] = [];
    for (const s of aSessions) if ((await ping(gw, KEY_A, s)) === 200) aOpen.push(s);
    assert.deepEqual(aOpen, aSessions.slice(-3), 'key a keeps its three newest sessions');
  });

  it('a key whose every session has a call in flight gets 429 rate_limit_exceeded for another, and evicts nothing', async () => {
    const alpha = await resources.startMock({ name: 'alpha', protocol: 'mcp' });
    const gw = await resources.startGw(gatewayConfig(alpha, { mcp: { catalog_recheck_ms: 0, sessions: { max_per_key: 2 } } }));
    await catalogsListed(gw, 1);
    const sessions = [await openSession(gw, KEY_A), await openSession(gw, KEY_A)];
    const stop = new AbortController();
    const calls = sessions.map((s, i) =>
      post(
        gw,
        KEY_A,
        { jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'slow', arguments: { ms: 30_000 } } },
        { 'mcp-session-id': s },
        stop.signal,
      ).catch(() => undefined),
    );
    try {
      await waitUntil(() => (alpha.mcpStats().calls.slow ?? 0) >= 2, 'both calls run at the server');
      const refused = await post(gw, KEY_A, INIT);
      assert.equal(refused.status, 429);
      assert.ok(refused.headers.get('retry-after'));
      const body = (await refused.json()) as { id: number; error: { message: string; data: { code: string } } };
      assert.equal(body.id, 1);
      assert.equal(body.error.data.code, 'rate_limit_exceeded');
      assert.match(body.error.message, /max_per_key/);
      assert.equal(await openSession(gw, KEY_B).then(() => 'opened'), 'opened', 'another key is not held by a s cap');
    } finally {
      stop.abort();
      await Promise.all(calls);
    }
  });
});

describe('a key that stops being accepted ends its MCP streams', () => {
  it('a managed key revoked through the admin API ends its open GET stream; an expired key s stream ends at its expires_at', async () => {
    const alpha = await resources.startMock({ name: 'alpha', protocol: 'mcp' });
    const db = sqliteDatabase();
    try {
      const gw = await resources.startGw(
        gatewayConfig(alpha, {
          server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', admin_token: { env: 'ADMIN_TOKEN' } },
          database: { url: db.url },
        }),
        { env: { ADMIN_TOKEN: ADMIN } },
      );
      const admin = gw.adminUrl as string;
      await catalogsListed(gw, 1);
      const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'eng' } });
      assert.equal(made.status, 201, made.text);
      const secret = made.body.key as string;
      const session = await openSession(gw, secret);
      const stream = await openStream(gw, secret, session);
      const other = await openStream(gw, KEY_B, await openSession(gw, KEY_B));

      assert.equal((await v1(admin, 'POST', `keys/${made.body.id}/revoke`, { token: ADMIN })).status, 200);
      assert.ok(await settlesWithin(stream.ended, 10_000), 'the revoked key s stream ended');
      assert.equal(await settlesWithin(other.ended, 200), false, 'another key s stream stays open');

      const expiring = await v1(admin, 'POST', 'keys', {
        token: ADMIN,
        body: { team: 'eng', expires_at: new Date(Date.now() + 3000).toISOString() },
      });
      assert.equal(expiring.status, 201, expiring.text);
      const short = expiring.body.key as string;
      const shortStream = await openStream(gw, short, await openSession(gw, short));
      assert.ok(await settlesWithin(shortStream.ended, 10_000), 'the expired key s stream ended');
      assert.equal(await settlesWithin(other.ended, 200), false, 'another key s stream is still open');
      other.abort();
    } finally {
      await db.drop();
    }
  });

  it('on PostgreSQL, a key revoked on one replica ends its stream on the other', async (t) => {
    const db = await postgresDatabase();
    if ('skip' in db) return t.skip(db.skip);
    try {
      const alpha = await resources.startMock({ name: 'alpha', protocol: 'mcp' });
      const config = gatewayConfig(alpha, {
        server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', admin_token: { env: 'ADMIN_TOKEN' } },
        database: { url: db.url, recheck_ms: 500 },
      });
      const a = await resources.startGw(config, { env: { ADMIN_TOKEN: ADMIN } });
      const b = await resources.startGw(config, { env: { ADMIN_TOKEN: ADMIN } });
      await catalogsListed(b, 1);
      const made = await v1(a.adminUrl as string, 'POST', 'keys', { token: ADMIN, body: { team: 'eng' } });
      assert.equal(made.status, 201, made.text);
      const secret = made.body.key as string;
      await waitUntil(async () => (await post(b, secret, INIT)).status === 200, 'the other replica knows the new key');
      const stream = await openStream(b, secret, await openSession(b, secret));
      assert.equal((await v1(a.adminUrl as string, 'POST', `keys/${made.body.id}/revoke`, { token: ADMIN })).status, 200);
      assert.ok(await settlesWithin(stream.ended, 10_000), 'the stream on the other replica ended');
      await a.stop();
      await b.stop();
    } finally {
      await db.drop();
    }
  });
});

describe('a tools/call deadline (mcp.call_timeout_ms)', () => {
  it('a server that sends notifications every 2 ms and never answers is cancelled at the deadline, and the client gets upstream_timeout', async () => {
    const alpha = await resources.startMock({ name: 'alpha', protocol: 'mcp', mcpTools: ['echo', 'chatter'] });
    const gw = await resources.startGw(
      gatewayConfig(alpha, {
        routing: { routes: {}, tools: { chatter: { candidates: [{ provider: 'alpha' }] } } },
        mcp: { catalog_recheck_ms: 0, call_timeout_ms: 500 },
        teams: { eng: { rate_limit: { rpm: 1000 } } },
      }),
    );
    await catalogsListed(gw, 1);
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url), {
      requestInit: { headers: { authorization: `Bearer ${KEY_A}` } },
    });
    const client = new Client({ name: 'deadline-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      for (const progress of [false, true]) {
        const error = await client
          .callTool({ name: 'chatter', arguments: { interval_ms: 2 } }, undefined, {
            timeout: 15_000,
            ...(progress ? { onprogress: () => undefined } : {}),
          })
          .then(
            () => null,
            (err: unknown) => err,
          );
        assert.ok(error instanceof McpError, `an McpError (progress: ${progress}): ${String(error)}`);
        assert.equal((error.data as { code: string }).code, 'upstream_timeout');
        assert.match(error.message, /call_timeout_ms/);
      }
      await waitUntil(() => (alpha.mcpStats().cancelled.chatter ?? 0) === 2, 'the server saw both calls cancelled');
    } finally {
      await client.close();
    }
  });
});

describe('a tool name listed twice by one server', () => {
  it('keeps the first definition, and reports the name in /admin/status mcp.skipped and in one warning line', async () => {
    const alpha = await resources.startMock({ name: 'alpha', protocol: 'mcp' });
    const gw = await resources.startGw(gatewayConfig(alpha));
    await catalogsListed(gw, 1);
    alpha.mcpTools({ add: [{ name: 'echo', description: 'the second echo' }] });
    type Skipped = { provider: string; tool: string; reason: string };
    const skipped = async (): Promise<Skipped[]> => ((await adminStatusBody(gw)) as unknown as { mcp: { skipped: Skipped[] } }).mcp.skipped;
    await waitUntil(async () => (await skipped()).length > 0, 'the duplicate is reported');
    assert.deepEqual(await skipped(), [{ provider: 'alpha', tool: 'echo', reason: 'duplicate_name' }]);
    // Another change to the listing is no new duplicate: no second warning.
    alpha.mcpTools({ add: [{ name: 'extra' }] });
    await catalogsListed(gw, 3);
    const warnings = gw.logs().filter((l) => l.level === 'warn' && String(l.msg).includes('more than once'));
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.equal(warnings[0]?.provider, 'alpha');
    assert.deepEqual(warnings[0]?.tools, ['echo']);

    const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url), {
      requestInit: { headers: { authorization: `Bearer ${KEY_A}` } },
    });
    const client = new Client({ name: 'duplicate-test', version: '1.0.0' });
    await client.connect(transport);
    const echo = (await client.listTools()).tools.filter((t) => t.name === 'echo');
    assert.equal(echo.length, 1);
    assert.notEqual(echo[0]?.description, 'the second echo', 'the first definition is listed');
    await client.close();
  });
});
