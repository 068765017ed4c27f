import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import type { MockProvider } from '../../src/mock/index.js';
import { POSTGRES_ADMIN_URL, postgresDatabase, sqliteDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess, runCli } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { v1 } from '../support/managed.js';
import { mcpProvider } from '../support/mcp.js';
import { waitUntil } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// The usage ledger through real gateway processes: after a mixed run (plain, streamed,
// refused, failed over, cut by the client, an Anthropic request, an MCP tools/call) the
// ledger holds one row per request of an authenticated caller, equal to the audit log and
// to the counters; a database outage during traffic costs no request, and the rows it
// could not keep are counted and summarized; the usage API by role, as CSV, with bad
// parameters; and `switchyard usage`.

const resources = fileResources('switchyard-ledger-');
const ADMIN = 'admin-token-for-the-ledger-tests';
const READER = 'read-only-token-for-the-ledger-tests';
const GROWTH_TOKEN = 'growth-team-token-for-the-ledger-tests';
const KEY_A = 'sy-ledger-key-of-team-platform-000000';
const KEY_B = 'sy-ledger-key-of-team-growth-0000000';
const ENV = { ADMIN_TOKEN: ADMIN, READER_TOKEN: READER, GROWTH_TOKEN, KEY_A, KEY_B };
const PRICE = { input_usd_per_mtok: 2, output_usd_per_mtok: 8 };

let east: MockProvider;
let flaky: MockProvider;
let west: MockProvider;
let tools: MockProvider;
let slow: MockProvider;
before(async () => {
  [east, flaky, west, tools, slow] = await Promise.all([
    resources.startMock({ name: 'east' }),
    resources.startMock({ name: 'flaky' }),
    resources.startMock({ name: 'west' }),
    resources.startMock({ name: 'tools', protocol: 'mcp', mcpResponse: 'json' }),
    resources.startMock({ name: 'slow', streamChunkDelayMs: 200, streamChunks: 30 }),
  ]);
});

function gatewayConfig(databaseUrl: string, dir: string, database: Record<string, unknown> = {}): Record<string, unknown> {
  const config = baseConfig(
    { east: east.baseUrl, flaky: flaky.baseUrl, west: west.baseUrl, slow: slow.baseUrl },
    {
      m: { candidates: [{ provider: 'east' }] },
      slow: { candidates: [{ provider: 'slow' }] },
      fo: { policy: 'ordered', candidates: [{ provider: 'flaky' }, { provider: 'west' }] },
      unpriced: { candidates: [{ provider: 'east' }] },
    },
    {
      server: {
        admin_token: { env: 'ADMIN_TOKEN' },
        admin_tokens: [
          { id: 'reader', token: { env: 'READER_TOKEN' }, role: 'read_only' },
          { id: 'growth-bot', token: { env: 'GROWTH_TOKEN' }, role: 'team:growth' },
        ],
      },
      teams: { platform: {}, growth: { allowed_models: ['m'] } },
      keys: [
        { id: 'platform-a', team: 'platform', key: { env: 'KEY_A' } },
        { id: 'growth-b', team: 'growth', key: { env: 'KEY_B' } },
      ],
      pricing: { models: { m: PRICE, fo: PRICE } },
      resilience: { breaker: { failure_threshold: 1000 } },
      audit: { file: join(dir, 'audit.jsonl') },
      database: { url: databaseUrl, ...database },
    },
  );
  (config.providers as Record<string, unknown>).tools = mcpProvider(tools);
  (config.routing as Record<string, unknown>).tools = { echo: { candidates: [{ provider: 'tools' }] } };
  return config;
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** A stream the client leaves after its first chunk. */
async function leaveMidStream(url: string, key: string): Promise<void> {
  const controller = new AbortController();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth(key) },
    body: chatBody('slow', { stream: true }),
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  controller.abort();
  await reader.cancel().catch(() => undefined);
}

async function callEcho(url: string, key: string): Promise<void> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers: auth(key) } });
  const client = new Client({ name: 'ledger-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  } finally {
    await client.close();
  }
}

type Row = Record<string, any>;

async function ledgerRows(admin: string, query = ''): Promise<Row[]> {
  const rows: Row[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await v1(admin, 'GET', `usage/requests?limit=1000${query}${after === null ? '' : `&after=${after}`}`, { token: ADMIN });
    assert.equal(page.status, 200, page.text);
    rows.push(...page.body.rows);
    after = page.body.next;
    if (after === null) return rows;
  }
}

function auditRecords(gw: GatewayProcess): Row[] {
  return readFileSync(join(gw.dir, 'audit.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row);
}

async function adminMetrics(gw: GatewayProcess): Promise<string> {
  const res = await fetch(`${gw.adminUrl}/metrics`, { headers: auth(ADMIN) });
  assert.equal(res.status, 200);
  return res.text();
}

/** The sum of every sample of `name` whose labels include `labels`. */
function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `)) sum += Object.keys(labels).length === 0 ? Number(line.slice(name.length)) : 0;
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const got = Object.fromEntries([...line.slice(name.length + 1, close).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(line.slice(close + 1).trim());
  }
  return sum;
}

async function mixedRun(gw: GatewayProcess): Promise<void> {
  assert.equal((await postChat(gw.url, chatBody('m'), auth(KEY_A))).status, 200);
  const streamed = await postChat(gw.url, chatBody('m', { stream: true }), auth(KEY_A));
  assert.equal(streamed.status, 200);
  assert.equal((await postChat(gw.url, chatBody('unpriced'), auth(KEY_A))).status, 200);
  const refused = await postChat(gw.url, chatBody('fo'), auth(KEY_B));
  assert.equal(refused.status, 403);
  assert.equal(refused.json().error.code, 'model_not_allowed');
  flaky.addFault({ mode: 'status', status: 500, count: 1 });
  const failedOver = await postChat(gw.url, chatBody('fo'), auth(KEY_A));
  assert.equal(failedOver.status, 200);
  assert.equal(failedOver.headers.get('x-switchyard-provider'), 'west');
  await leaveMidStream(gw.url, KEY_A);
  const messages = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY_B, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'm', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(messages.status, 200, await messages.text());
  assert.equal((await postChat(gw.url, chatBody('m'), auth('sy-not-a-key'))).status, 401);
  await callEcho(gw.url, KEY_B);
}

for (const engine of ['sqlite', 'postgres'] as const) {
  describe(`the usage ledger of a gateway on ${engine}`, () => {
    let gw: GatewayProcess;
    let skip: string | false = false;

    before(async () => {
      const made = engine === 'sqlite' ? sqliteDatabase() : await postgresDatabase();
      if ('skip' in made) {
        skip = made.skip;
        return;
      }
      resources.addGateway(() => made.drop());
      const dir = resources.tempDir();
      gw = await resources.startGw(gatewayConfig(made.url, dir), { dir, env: ENV });
    });

    it('holds one row per request of an authenticated caller, equal to the audit log and to the counters', async (t) => {
      if (skip) return t.skip(skip);
      await mixedRun(gw);
      const admin = gw.adminUrl as string;
      // Every audited request of a known caller, and the tools/call, once each in the ledger.
      let audited: Row[] = [];
      let rows: Row[] = [];
      await waitUntil(async () => {
        audited = auditRecords(gw).filter(
          (r) =>
            r.key_id !== null &&
            (r.event === 'request_completed' || r.event === 'tool_called' || (r.event === 'request_started' && r.decision === 'refused')),
        );
        rows = await ledgerRows(admin);
        return audited.length >= 8 && audited.every((a) => rows.some((r) => r.request_id === a.request_id));
      }, 'every audited request is in the ledger');

      const byId = new Map(rows.map((r) => [r.request_id, r]));
      assert.equal(byId.size, rows.length, 'one row per request');
      for (const a of audited) {
        const r = byId.get(a.request_id) as Row;
        assert.equal(r.team, a.team, a.request_id);
        assert.equal(r.key, a.key_id);
        assert.equal(r.guardrail, null, 'no guardrail acted');
        if (a.event === 'request_completed') {
          assert.equal(r.partial, a.partial);
          if (a.status !== 'partial') assert.equal(r.status, a.status);
          assert.equal(r.input_tokens, a.usage?.input_tokens ?? 0);
          assert.equal(r.output_tokens, a.usage?.output_tokens ?? 0);
          assert.equal(Math.round(r.cost_usd * 1e6), a.cost_micro_usd ?? 0);
          assert.equal(r.provider, a.provider ?? 'none');
        } else if (a.event === 'tool_called') {
          assert.equal(r.endpoint, '/mcp');
          assert.equal(r.model, 'echo');
          assert.equal(r.provider, 'tools');
        } else {
          assert.equal(r.status, 403);
          assert.equal(r.provider, 'none');
        }
      }
      const model = rows.filter((r) => r.endpoint === '/v1/chat/completions' || r.endpoint === '/v1/messages');
      assert.equal(model.length, 7, `the 401 has no row: ${JSON.stringify(model)}`);
      assert.ok(
        model.some((r) => r.status === 499 || r.partial === true),
        'the stream the client left',
      );
      assert.ok(model.some((r) => r.provider === 'west' && r.status === 200));
      assert.equal(model.filter((r) => r.endpoint === '/v1/messages').length, 1);
      assert.ok(model.some((r) => r.model === 'unpriced' && r.input_tokens > 0 && r.cost_usd === 0));

      const metrics = await adminMetrics(gw);
      const toolCalls = new Set(audited.filter((a) => a.event === 'tool_called').map((a) => a.request_id));
      for (const team of ['platform', 'growth']) {
        const mine = rows.filter((r) => r.team === team);
        assert.equal(
          metricSum(metrics, 'switchyard_requests_total', { team }),
          mine.filter((r) => !toolCalls.has(r.request_id)).length,
          `requests of ${team}`,
        );
        for (const [kind, field] of [
          ['input', 'input_tokens'],
          ['output', 'output_tokens'],
        ] as const) {
          assert.equal(
            metricSum(metrics, 'switchyard_tokens_total', { team, kind }),
            mine.reduce((s, r) => s + r[field], 0),
            `${kind} tokens of ${team}`,
          );
        }
      }
      assert.equal(metricSum(metrics, 'switchyard_requests_total', { team: 'none', status: '401' }), 1);
      assert.ok(metricSum(metrics, 'switchyard_requests_total', { endpoint: '/v1/messages' }) >= 1);
      assert.equal(metricSum(metrics, 'switchyard_ledger_rows_lost_total', {}), 0);

      const totals = await v1(admin, 'GET', 'usage?group_by=team', { token: ADMIN });
      assert.equal(totals.status, 200, totals.text);
      for (const total of totals.body.rows as Row[]) {
        const mine = rows.filter((r) => r.team === total.team);
        assert.equal(total.requests, mine.length);
        assert.equal(
          total.input_tokens,
          mine.reduce((s, r) => s + r.input_tokens, 0),
        );
        assert.equal(
          Math.round(total.cost_usd * 1e6),
          mine.reduce((s, r) => s + Math.round(r.cost_usd * 1e6), 0),
        );
      }
    });

    it('answers the usage API by role, as CSV, page by page, and names a bad parameter', async (t) => {
      if (skip) return t.skip(skip);
      const admin = gw.adminUrl as string;
      await waitUntil(async () => (await ledgerRows(admin)).length >= 8, 'the mixed run is written');
      const all = await v1(admin, 'GET', 'usage?group_by=team,model', { token: READER });
      assert.equal(all.status, 200, all.text);
      const teams = new Set((all.body.rows as Row[]).map((r) => r.team));
      assert.ok(teams.has('platform') && teams.has('growth'));

      const own = await v1(admin, 'GET', 'usage?group_by=team', { token: GROWTH_TOKEN });
      assert.equal(own.status, 200, own.text);
      assert.deepEqual(
        (own.body.rows as Row[]).map((r) => r.team),
        ['growth'],
      );
      const ownRows = await v1(admin, 'GET', 'usage/requests', { token: GROWTH_TOKEN });
      assert.ok((ownRows.body.rows as Row[]).length > 0);
      assert.ok((ownRows.body.rows as Row[]).every((r) => r.team === 'growth'));
      const other = await v1(admin, 'GET', 'usage?team=platform', { token: GROWTH_TOKEN });
      assert.equal(other.status, 403, other.text);
      assert.equal(other.body.error.code, 'forbidden');

      const csv = await fetch(`${admin}/admin/v1/usage?group_by=day,team&format=csv`, { headers: auth(ADMIN) });
      assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
      const lines = (await csv.text()).trim().split('\r\n');
      assert.equal(
        lines[0],
        'day,team,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,cache_hits,saved_usd',
      );
      const same = await v1(admin, 'GET', 'usage?group_by=day,team', { token: ADMIN });
      assert.equal(lines.length, 1 + (same.body.rows as Row[]).length);
      assert.ok(lines.slice(1).some((l) => l.includes(',platform,')));
      const rawCsv = await fetch(`${admin}/admin/v1/usage/requests?format=csv`, { headers: auth(ADMIN) });
      const rawLines = (await rawCsv.text()).trim().split('\r\n');
      assert.equal(
        rawLines[0],
        'at,request_id,team,key,endpoint,model,provider,candidate,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,status,partial,duration_ms,guardrail,cache,saved_usd',
      );
      assert.ok(
        rawLines.slice(1).every((l) => l.endsWith(',,0')),
        'no guardrail acted and no route has a cache: both fields are empty, and nothing was saved',
      );

      const first = await v1(admin, 'GET', 'usage/requests?limit=2', { token: ADMIN });
      assert.equal(first.body.rows.length, 2);
      const second = await v1(admin, 'GET', `usage/requests?limit=2&after=${first.body.next}`, { token: ADMIN });
      assert.equal(second.body.rows.length, 2);
      assert.ok(second.body.rows[0].at >= first.body.rows[1].at);
      assert.notEqual(second.body.rows[0].request_id, first.body.rows[1].request_id);

      const today = new Date().toISOString().slice(0, 10);
      const none = await v1(admin, 'GET', `usage?from=${today}&to=${today}T00:00:00Z`, { token: ADMIN });
      assert.equal(none.status, 400);
      assert.equal(none.body.error.param, 'to');
      for (const [query, param] of [
        ['usage?from=yesterday', 'from'],
        ['usage?to=2026-13-45', 'to'],
        ['usage?group_by=team,colour', 'group_by'],
        ['usage?group_by=team,team', 'group_by'],
        ['usage?format=xml', 'format'],
        ['usage?colour=red', 'colour'],
        ['usage/requests?limit=0', 'limit'],
        ['usage/requests?after=not-a-cursor', 'after'],
      ] as const) {
        const bad = await v1(admin, 'GET', query, { token: ADMIN });
        assert.equal(bad.status, 400, `${query}: ${bad.text}`);
        assert.equal(bad.body.error.code, 'invalid_request');
        assert.equal(bad.body.error.param, param, query);
      }
      assert.equal((await v1(admin, 'POST', 'usage', { token: ADMIN })).status, 405);
    });

    // The CLI reads what the API answers: once, on one engine, is enough.
    const cliIt = engine === 'sqlite' ? it : it.skip;
    cliIt('prints the totals with switchyard usage as a table, CSV and JSON', async (t) => {
      if (skip) return t.skip(skip);
      const admin = gw.adminUrl as string;
      const table = await runCli(['usage', '--admin-url', admin, '--group-by', 'team'], { SWITCHYARD_ADMIN_TOKEN: ADMIN });
      assert.equal(table.code, 0, table.stderr);
      const [header, ...body] = table.stdout.trim().split('\n');
      assert.match(header as string, /^team\s+requests\s+input_tokens/);
      assert.ok(body.some((l) => l.startsWith('platform ')));
      const csv = await runCli(['usage', '--admin-url', admin, '--format', 'csv', '--team', 'growth'], { SWITCHYARD_ADMIN_TOKEN: ADMIN });
      assert.equal(csv.code, 0, csv.stderr);
      assert.match(csv.stdout, /^team,model,requests,/);
      assert.ok(
        csv.stdout
          .trim()
          .split('\r\n')
          .slice(1)
          .every((l) => l.startsWith('growth,')),
      );
      const json = await runCli(['usage', '--admin-url', admin, '--format', 'json'], { SWITCHYARD_ADMIN_TOKEN: READER });
      assert.equal(json.code, 0, json.stderr);
      assert.ok((JSON.parse(json.stdout) as { rows: Row[] }).rows.length > 0);
      const denied = await runCli(['usage', '--admin-url', admin, '--team', 'platform'], { SWITCHYARD_ADMIN_TOKEN: GROWTH_TOKEN });
      assert.equal(denied.code, 1);
      assert.match(denied.stderr, /403/);
    });
  });
}

describe('a database outage during traffic', () => {
  it('answers every request, counts the rows it could not keep, and summarizes them in one row once writing works again', async (t) => {
    const made = await postgresDatabase();
    if ('skip' in made) return t.skip(made.skip);
    resources.addGateway(() => made.drop());
    const dir = resources.tempDir();
    const QUEUE = 20;
    const gw = await resources.startGw(gatewayConfig(made.url, dir, { ledger_queue: QUEUE, recheck_ms: 0 }), { dir, env: ENV });
    const admin = gw.adminUrl as string;
    for (let i = 0; i < 5; i++) assert.equal((await postChat(gw.url, chatBody('m'), auth(KEY_A))).status, 200);
    await waitUntil(async () => (await ledgerRows(admin)).length === 5, 'the first rows are written');

    const name = new URL(made.url).pathname.slice(1);
    const pgAdmin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await pgAdmin.connect();
    const during = 50;
    try {
      await pgAdmin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await pgAdmin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
      for (let i = 0; i < during; i++) assert.equal((await postChat(gw.url, chatBody('m'), auth(KEY_A))).status, 200, `request ${i}`);
      const lost = metricSum(await adminMetrics(gw), 'switchyard_ledger_rows_lost_total', {});
      assert.equal(lost, during - QUEUE, 'rows past the queue are counted lost');
    } finally {
      await pgAdmin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await pgAdmin.end();
    }
    let rows: Row[] = [];
    await waitUntil(
      async () => {
        rows = await ledgerRows(admin).catch(() => []);
        return rows.length === 5 + QUEUE + 1;
      },
      'the queued rows and one loss row are written',
      30_000,
    );
    const loss = rows.filter((r) => r.endpoint === 'ledger');
    assert.deepEqual(
      loss.map((r) => r.request_id),
      [`lost-${during - QUEUE}`],
    );
    assert.equal(loss[0]?.status, 0);
    const totals = await v1(admin, 'GET', 'usage', { token: ADMIN });
    assert.equal(totals.body.rows[0].requests, 5 + QUEUE, 'the rollups count the requests written');
  });
});
