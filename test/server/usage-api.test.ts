import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { migrate, openDatabase, type UsageDailyTable } from '../../src/database/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { eachEngine } from '../support/databases.js';
import { baseConfig, type GatewayProcess, runCli } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';

// The usage API's totals through a real gateway on each engine, over rollups written
// straight into the database: walked page by page (JSON, and CSV with its cursor in a
// header) they are exactly the groups, in order; a range past database.usage_max_range_days,
// an impossible date, a NUL or a malformed path escape is a 400 naming the parameter; and a
// CSV field a spreadsheet would read as a formula is defused.

const resources = fileResources('switchyard-usage-api-');
const MAX_RANGE_DAYS = 30;
const DAYS = Array.from({ length: 10 }, (_, i) => `2026-01-${String(i + 1).padStart(2, '0')}`);
const TEAMS = ['alpha', 'beta', 'gamma'];
const MODELS = ['m-large', 'm-small'];
const RANGE = 'from=2026-01-01&to=2026-01-31';
/** Names a spreadsheet would run as formulas, each in its own rollup row on a day of their own. */
/** More groups than one page holds (10,000), on a day of their own: what `switchyard usage` must walk. */
const MANY_KEYS = 10_050;
const FORMULAS = ['=HYPERLINK("http://x","y")', '+1+1', '-2+3', '@SUM(A1)', '\tcmd', '\rcmd'];

type Row = Record<string, any>;

function rollups(): UsageDailyTable[] {
  const rows: UsageDailyTable[] = [];
  let n = 0;
  for (const day of DAYS) {
    for (const team of TEAMS) {
      for (const model of MODELS) {
        n++;
        rows.push({
          day,
          team,
          key_id: `${team}-key`,
          model,
          provider: 'east',
          requests: n,
          input_tokens: 10 * n,
          output_tokens: 3 * n,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          cost_micro_usd: 1000 * n,
          cache_hits: 0,
          saved_micro_usd: 0,
        });
      }
    }
  }
  for (const [i, name] of FORMULAS.entries()) {
    rows.push({
      day: '2025-12-20',
      team: 'formulas',
      key_id: name,
      model: name,
      provider: 'east',
      requests: i + 1,
      input_tokens: 1,
      output_tokens: 1,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      cost_micro_usd: 1,
      cache_hits: 0,
      saved_micro_usd: 0,
    });
  }
  for (let k = 0; k < MANY_KEYS; k++) {
    rows.push({
      day: '2025-11-15',
      team: 'many',
      key_id: `many-key-${String(k).padStart(5, '0')}`,
      model: 'm',
      provider: 'east',
      requests: 1,
      input_tokens: 1,
      output_tokens: 1,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      cost_micro_usd: 1,
      cache_hits: 0,
      saved_micro_usd: 0,
    });
  }
  return rows;
}

let mock: MockProvider;
before(async () => {
  mock = await resources.startMock({ name: 'east' });
});

async function walkJson(admin: string, query: string): Promise<{ rows: Row[]; pages: number }> {
  const rows: Row[] = [];
  let after: string | null = null;
  for (let pages = 1; pages <= 1000; pages++) {
    const page = await v1(admin, 'GET', `usage?${query}${after === null ? '' : `&after=${after}`}`);
    assert.equal(page.status, 200, page.text);
    rows.push(...page.body.rows);
    after = page.body.next;
    if (after === null) return { rows, pages };
  }
  throw new Error('the cursor never reached the end');
}

for (const { engine, open } of await eachEngine()) {
  describe(`the usage API's totals on ${engine}`, () => {
    let gw: GatewayProcess;
    let skip: string | false = false;

    before(async () => {
      const made = await open();
      if ('skip' in made) {
        skip = made.skip;
        return;
      }
      resources.addGateway(() => made.drop());
      const database = openDatabase({ url: made.url });
      try {
        const migrated = await migrate(database.db, database.engine);
        assert.ok(migrated.ok);
        const rows = rollups();
        // In slices: SQLite takes at most 32,766 bound values in one statement.
        for (let i = 0; i < rows.length; i += 1000)
          await database.db
            .insertInto('usage_daily')
            .values(rows.slice(i, i + 1000))
            .execute();
      } finally {
        await database.close();
      }
      const config = baseConfig(
        { east: mock.baseUrl },
        { m: { candidates: [{ provider: 'east' }] } },
        { database: { url: made.url, usage_max_range_days: MAX_RANGE_DAYS } },
      );
      gw = await resources.startGw(config);
    });

    it('walks the totals page by page, as JSON and as CSV, to exactly the groups in order', async (t) => {
      if (skip) return t.skip(skip);
      const admin = gw.adminUrl as string;
      const all = rollups().filter((r) => TEAMS.includes(r.team));
      const expected = all.map((r) => `${r.day}|${r.team}|${r.model}|${r.requests}`);
      const walked = await walkJson(admin, `${RANGE}&group_by=day,team,model&limit=7`);
      assert.equal(walked.pages, Math.ceil(expected.length / 7));
      assert.deepEqual(
        walked.rows.map((r) => `${r.day}|${r.team}|${r.model}|${r.requests}`),
        expected,
      );

      // Grouped coarser than the rollups: each page sums its groups whole.
      const byModel = await walkJson(admin, `${RANGE}&group_by=model&limit=1`);
      assert.equal(byModel.pages, MODELS.length);
      for (const model of MODELS) {
        const row = byModel.rows.find((r) => r.model === model) as Row;
        assert.equal(
          row.requests,
          all.filter((r) => r.model === model).reduce((s, r) => s + r.requests, 0),
        );
        assert.equal(
          Math.round(row.cost_usd * 1e6),
          all.filter((r) => r.model === model).reduce((s, r) => s + r.cost_micro_usd, 0),
        );
      }

      // CSV: the cursor in x-switchyard-next, the header on every page.
      const lines: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const res: Response = await fetch(
          `${admin}/admin/v1/usage?${RANGE}&group_by=day,team,model&limit=25&format=csv${after === null ? '' : `&after=${after}`}`,
        );
        assert.equal(res.status, 200);
        const [header, ...body] = (await res.text()).trimEnd().split('\r\n');
        assert.equal(
          header,
          'day,team,model,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,cache_hits,saved_usd',
        );
        lines.push(...body);
        after = res.headers.get('x-switchyard-next');
        if (after === null) break;
      }
      assert.deepEqual(
        lines.map((l) => l.split(',').slice(0, 4).join('|')),
        expected,
      );

      // A cursor belongs to its grouping.
      const first = await v1(admin, 'GET', `usage?${RANGE}&group_by=day,team&limit=2`);
      assert.equal(first.status, 200, first.text);
      const crossed = await v1(admin, 'GET', `usage?${RANGE}&group_by=team,day&limit=2&after=${first.body.next}`);
      assert.equal(crossed.status, 400, crossed.text);
      assert.equal(crossed.body.error.param, 'after');
      const tooLarge = await v1(admin, 'GET', `usage?${RANGE}&limit=10001`);
      assert.equal(tooLarge.status, 400);
      assert.equal(tooLarge.body.error.param, 'limit');
    });

    it('refuses a range longer than database.usage_max_range_days, naming to and the setting', async (t) => {
      if (skip) return t.skip(skip);
      const admin = gw.adminUrl as string;
      for (const query of [
        'usage?from=0001-01-01&to=9999-12-31',
        'usage?from=2026-01-01&to=2026-02-01',
        'usage/requests?from=2025-01-01',
      ]) {
        const refused = await v1(admin, 'GET', query);
        assert.equal(refused.status, 400, `${query}: ${refused.text}`);
        assert.equal(refused.body.error.code, 'invalid_request');
        assert.equal(refused.body.error.param, 'to');
        assert.match(refused.body.error.message, /database\.usage_max_range_days \(30 days\)/);
      }
      const longest = await v1(admin, 'GET', 'usage?from=2026-01-01&to=2026-01-31');
      assert.equal(longest.status, 200, longest.text);
    });

    it('answers an impossible date, a NUL or a malformed path escape with 400 naming the parameter', async (t) => {
      if (skip) return t.skip(skip);
      const admin = gw.adminUrl as string;
      const nulCursor = Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 'req\u0000'])).toString('base64url');
      for (const [path, param] of [
        ['usage?from=2026-02-30&to=2026-03-05', 'from'],
        ['usage?from=2026-02-01&to=2026-02-29T00:00:00Z', 'to'],
        ['usage?from=2026-01-01T24:00:00Z', 'from'],
        ['usage?from=2026-01-01T10:00:00%2B24:00', 'from'],
        ['usage?from=2026-00-10', 'from'],
        ['usage?key=a%00b', 'key'],
        ['usage?model=%00', 'model'],
        ['usage?after=%00', 'after'],
        ['usage?group_by=team&after=not%20base64', 'after'],
        ['usage/requests?model=m%00', 'model'],
        [`usage/requests?after=${nulCursor}`, 'after'],
        ['keys/%E0%A4%A', 'id'],
        ['teams/%E0%A4%A', 'id'],
        ['keys/k-1/%E0%A4%A', 'action'],
        ['keys/a%00b', 'id'],
      ] as const) {
        const bad = await v1(admin, 'GET', path);
        assert.equal(bad.status, 400, `${path}: ${bad.text}`);
        assert.equal(bad.body.error.code, 'invalid_request', path);
        assert.equal(bad.body.error.param, param, path);
      }
      // 2028 is a leap year: its 29 February is a real date.
      const leap = await v1(admin, 'GET', 'usage?from=2028-02-29&to=2028-03-01');
      assert.equal(leap.status, 200, leap.text);
    });

    it('prefixes a CSV field a spreadsheet would read as a formula with a single quote', async (t) => {
      if (skip) return t.skip(skip);
      const res = await fetch(`${gw.adminUrl}/admin/v1/usage?from=2025-12-20&to=2025-12-21&group_by=key,model&team=formulas&format=csv`);
      assert.equal(res.status, 200);
      const text = await res.text();
      for (const name of FORMULAS) {
        const quoted = /[",\r\n]/.test(name) ? `"'${name.replaceAll('"', '""')}"` : `'${name}`;
        assert.ok(text.includes(`${quoted},${quoted},`), `${JSON.stringify(name)} in ${JSON.stringify(text)}`);
      }
      // The same names as JSON are data, not cells: untouched.
      const json = await v1(gw.adminUrl as string, 'GET', 'usage?from=2025-12-20&to=2025-12-21&group_by=model&team=formulas');
      assert.deepEqual((json.body.rows as Row[]).map((r) => r.model).sort(), [...FORMULAS].sort());
    });

    // The CLI reads what the API answers: once, on one engine, is enough.
    const cliIt = engine === 'sqlite' ? it : it.skip;
    cliIt('walks every page with switchyard usage, as CSV, JSON and a table', async (t) => {
      if (skip) return t.skip(skip);
      const args = ['usage', '--admin-url', gw.adminUrl as string, '--from', '2025-11-15', '--to', '2025-11-16', '--group-by', 'key'];
      const csv = await runCli([...args, '--format', 'csv']);
      assert.equal(csv.code, 0, csv.stderr);
      const lines = csv.stdout.trimEnd().split('\r\n');
      assert.equal(lines[0], 'key,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,cache_hits,saved_usd');
      assert.equal(lines.length, 1 + MANY_KEYS, 'one header, then every group once');
      assert.equal(new Set(lines.slice(1).map((l) => l.split(',')[0])).size, MANY_KEYS);
      const json = await runCli([...args, '--format', 'json']);
      assert.equal(json.code, 0, json.stderr);
      assert.equal((JSON.parse(json.stdout) as { rows: Row[] }).rows.length, MANY_KEYS);
      const table = await runCli(args);
      assert.equal(table.code, 0, table.stderr);
      assert.equal(table.stdout.trimEnd().split('\n').length, 1 + MANY_KEYS);
    });
  });
}
