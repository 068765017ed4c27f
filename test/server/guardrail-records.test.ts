import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { verifyAuditFile } from '../../src/audit/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { sqliteDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { postChat } from '../support/http.js';
import { v1 } from '../support/managed.js';
import { catalogsListed, mcpProvider } from '../support/mcp.js';
import { waitUntil } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// Guardrail verdicts through a real gateway, as every sink reports them: the access line
// names the guardrails that acted, the ledger row has the strongest action, the audit log a
// record per verdict that acted or failed, the metrics count them, and /admin/status keeps
// each guardrail's counts; none of them ever holds what a guardrail matched.

const resources = fileResources('switchyard-guardrail-records-');
const ADMIN = 'admin-token-for-the-guardrail-records-tests';
const KEY = 'sy-guardrail-records-key-of-team-platform';
const EMAIL = 'ada@example.com';
const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const auth = { authorization: `Bearer ${KEY}` };

type Row = Record<string, any>;

let east: MockProvider;
let tools: MockProvider;
let gw: GatewayProcess;
let dir: string;
before(async () => {
  [east, tools] = await Promise.all([
    resources.startMock({ name: 'east' }),
    resources.startMock({ name: 'tools', protocol: 'mcp', mcpResponse: 'json' }),
  ]);
  const database = sqliteDatabase();
  resources.addGateway(() => database.drop());
  dir = resources.tempDir();
  const config = baseConfig(
    { east: east.baseUrl },
    {
      guarded: { guardrails: { input: ['secrets', 'pii'] }, candidates: [{ provider: 'east' }] },
      reviewed: { guardrails: { input: ['review'] }, candidates: [{ provider: 'east' }] },
      judged: { guardrails: { input: ['judge'] }, candidates: [{ provider: 'east' }] },
      'judge-model': { candidates: [{ provider: 'east' }] },
    },
    {
      server: { admin_token: { env: 'ADMIN_TOKEN' } },
      log: { level: 'info', access: true },
      guardrails: {
        secrets: { type: 'secrets', action: 'block' },
        pii: { type: 'pii', action: 'mask' },
        // Nothing listens there: every check fails, and fail_open serves the request.
        review: { type: 'webhook', url: 'http://127.0.0.1:9/check', timeout_ms: 500, on_error: 'fail_open' },
        // The mock greets ("Hello from east."), which this judge reads as safe.
        judge: { type: 'judge', route: 'judge-model', prompt: { text: 'Safe? {{texts}}' }, timeout_ms: 5000 },
      },
      teams: { platform: {} },
      keys: [{ id: 'platform-a', team: 'platform', key: { env: 'KEY' } }],
      audit: { file: join(dir, 'audit.jsonl') },
      database: { url: database.url },
      mcp: { catalog_recheck_ms: 0, guardrails: { arguments: ['secrets'] } },
    },
  );
  (config.providers as Record<string, unknown>).tools = mcpProvider(tools);
  (config.routing as Record<string, unknown>).tools = { echo: { candidates: [{ provider: 'tools' }] } };
  gw = await resources.startGw(config, { dir, env: { ADMIN_TOKEN: ADMIN, KEY } });
  await catalogsListed(gw, 1);
});

const chat = (model: string, content: string, id: string) =>
  postChat(gw.url, { model, messages: [{ role: 'user', content }] }, { ...auth, 'x-request-id': id });

async function ledgerRows(): Promise<Row[]> {
  const page = await v1(gw.adminUrl as string, 'GET', 'usage/requests?limit=1000', { token: ADMIN });
  assert.equal(page.status, 200, page.text);
  return page.body.rows as Row[];
}

function auditRecords(): Row[] {
  return readFileSync(join(dir, 'audit.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row);
}

describe('guardrail verdicts through a gateway', { timeout: 60_000 }, () => {
  it('a mask, a block, a service that failed open and a clean request: each sink reports them, never the matched text', async () => {
    assert.equal((await chat('guarded', `write to ${EMAIL}`, 'gr-masked')).status, 200);
    assert.equal((await chat('guarded', `my key is ${AWS_KEY}`, 'gr-blocked')).status, 400);
    assert.equal((await chat('reviewed', 'hello', 'gr-failed-open')).status, 200);
    assert.equal((await chat('guarded', 'hello', 'gr-clean')).status, 200);

    const lineOf = (id: string) => gw.waitForLog((l) => l.msg === 'request' && l.request_id === id);
    assert.deepEqual((await lineOf('gr-masked')).guardrails, ['pii']);
    assert.deepEqual((await lineOf('gr-blocked')).guardrails, ['secrets']);
    assert.equal('guardrails' in (await lineOf('gr-failed-open')), false, 'a check that failed open did not act');
    assert.equal('guardrails' in (await lineOf('gr-clean')), false);

    let rows: Row[] = [];
    await waitUntil(async () => {
      rows = await ledgerRows();
      return rows.length >= 4;
    }, 'the four rows are written');
    const byId = new Map(rows.map((r) => [r.request_id, r.guardrail]));
    assert.deepEqual(
      ['gr-masked', 'gr-blocked', 'gr-failed-open', 'gr-clean'].map((id) => byId.get(id)),
      ['mask', 'block', null, null],
    );

    let verdicts: Row[] = [];
    await waitUntil(async () => {
      verdicts = auditRecords().filter((r) => r.event === 'guardrail_verdict');
      return verdicts.length >= 3;
    }, 'the verdict records are written');
    assert.deepEqual(
      verdicts.map((r) => [r.request_id, r.guardrail, r.phase, r.action, r.error?.outcome ?? null]),
      [
        ['gr-masked', 'pii', 'input', 'mask', null],
        ['gr-blocked', 'secrets', 'input', 'block', null],
        ['gr-failed-open', 'review', 'input', 'allow', 'fail_open'],
      ],
    );
    assert.deepEqual([verdicts[0]?.team, verdicts[0]?.key_id, verdicts[0]?.categories], ['platform', 'platform-a', { email: 1 }]);
    const chain = await verifyAuditFile(join(dir, 'audit.jsonl'));
    assert.ok(chain.ok, JSON.stringify(chain));

    const metrics = await (await fetch(`${gw.adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    assert.match(metrics, /switchyard_guardrail_verdicts_total\{guardrail="pii",phase="input",action="mask"\} 1/);
    assert.match(metrics, /switchyard_guardrail_verdicts_total\{guardrail="secrets",phase="input",action="block"\} 1/);
    assert.match(metrics, /switchyard_guardrail_verdicts_total\{guardrail="secrets",phase="input",action="allow"\} 2/);
    assert.match(metrics, /switchyard_guardrail_errors_total\{guardrail="review",outcome="fail_open"\} 1/);
    assert.match(metrics, /switchyard_guardrail_duration_seconds_count\{guardrail="pii",phase="input"\} 2/);

    const status = await fetch(`${gw.adminUrl}/admin/status`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const { guardrails } = (await status.json()) as { guardrails: Row[] };
    const byName = new Map(guardrails.map((g) => [g.name, g]));
    assert.deepEqual(byName.get('secrets')?.verdicts, { input: { allow: 2, block: 1 } });
    assert.deepEqual(byName.get('pii')?.verdicts, { input: { mask: 1, allow: 1 } });
    assert.deepEqual(byName.get('review')?.errors, { fail_open: 1, fail_closed: 0 });
    assert.ok(byName.get('review')?.latency_ms.p99 !== null);

    const everything = [JSON.stringify(gw.logs()), readFileSync(join(dir, 'audit.jsonl'), 'utf8'), JSON.stringify(rows), metrics];
    for (const text of everything) assert.ok(!text.includes(EMAIL) && !text.includes(AWS_KEY), 'no sink holds a matched text');
  });

  it('a tools/call whose arguments a guardrail blocked: its line, its ledger row and its audit record name the block', async () => {
    const client = new Client({ name: 'guardrail-records-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', gw.url), { requestInit: { headers: { ...auth, 'x-request-id': 'gr-tool' } } }),
    );
    try {
      const result = await client.callTool({ name: 'echo', arguments: { text: `use ${AWS_KEY}` } });
      assert.equal(result.isError, true);
    } finally {
      await client.close();
    }
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.mcp_method === 'tools/call');
    assert.deepEqual([line.tool, line.guardrails], ['echo', ['secrets']]);
    let row: Row | undefined;
    await waitUntil(async () => {
      row = (await ledgerRows()).find((r) => r.endpoint === '/mcp' && r.model === 'echo');
      return row !== undefined;
    }, 'the tools/call row is written');
    assert.equal(row?.guardrail, 'block');
    let verdict: Row | undefined;
    await waitUntil(async () => {
      verdict = auditRecords().find((r) => r.event === 'guardrail_verdict' && r.phase === 'arguments');
      return verdict !== undefined;
    }, 'the verdict record is written');
    assert.deepEqual([verdict?.guardrail, verdict?.action, verdict?.categories], ['secrets', 'block', { aws_access_key: 1 }]);
    assert.ok(!readFileSync(join(dir, 'audit.jsonl'), 'utf8').includes(AWS_KEY));
  });

  it('a judge’s question is billed to the caller’s team as a row of its own, endpoint guardrail', async () => {
    const r = await chat('judged', 'is this fine?', 'judged-1');
    assert.equal(r.status, 200, r.text);
    await waitUntil(async () => (await ledgerRows()).some((row) => row.request_id === 'judged-1'), 'the judged request is in the ledger');
    const rows = await ledgerRows();
    const question = rows.find((row) => row.endpoint === 'guardrail');
    assert.ok(question !== undefined, JSON.stringify(rows.map((row) => [row.request_id, row.endpoint])));
    assert.equal(question.team, 'platform');
    assert.equal(question.model, 'judge-model');
    assert.ok(question.input_tokens > 0, 'the question is billed on its own usage');
    const judged = rows.find((row) => row.request_id === 'judged-1');
    assert.equal(judged?.endpoint, '/v1/chat/completions');
  });
});
