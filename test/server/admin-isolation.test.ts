import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';
import { sqliteDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';
import { type FilledLedger, fillSqliteLedger, quantile, startProbes } from '../support/usage-fill.js';

// Invariant 13, the admin plane never stalls the data plane: a gateway on a SQLite ledger of
// a million raw rows and a year of rollups answers the largest usage query there is (every
// group field over the whole range, every page walked at limit=10000) while chat completions
// probe its API port from a thread of their own. The figures go to the test's diagnostics;
// `npm run bench -- --only admin-isolation` measures the same against its target.

const resources = fileResources('switchyard-admin-isolation-');
const RAW_ROWS = 1_000_000;
/** 365 days x 10 teams x 11 keys x 5 models x 2 providers: 401,500 rollup rows, 41 pages. */
const KEYS_PER_TEAM = 11;
/**
 * Only a hang fails this test: the loop held by the whole query, the fault it guards, costs
 * tens of seconds, while a busy 2-core machine alone can delay a probe by a second.
 */
const HANG_MS = 5000;

let mock: MockProvider;
let gw: GatewayProcess;
let ledger: FilledLedger;

before(async () => {
  mock = await resources.startMock({ name: 'east' });
  const made = sqliteDatabase();
  resources.addGateway(() => made.drop());
  ledger = await fillSqliteLedger(made.url.slice('sqlite:'.length), {
    rawRows: RAW_ROWS,
    rawDays: 20,
    days: 365,
    keysPerTeam: KEYS_PER_TEAM,
  });
  gw = await resources.startGw(
    baseConfig(
      { east: mock.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      { database: { url: made.url, usage_retention_days: 3650 } },
    ),
  );
});

/** The gateway's own event-loop delay since the last scrape (prom-client resets it on each), in ms. */
async function loopLagMs(admin: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const value = (name: string): number =>
    Number(new RegExp(`^\\w*nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1]) * 1000;
  return { p99: round(value('p99')), max: round(value('max')) };
}

const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

describe('the admin plane beside the data plane', () => {
  it('answers chat completions while the largest usage query is walked page by page (invariant 13)', async (t) => {
    const admin = gw.adminUrl as string;
    const pid = gw.child.pid as number;
    // Warm-up (connections, JIT), then the idle figures the walk's are compared with.
    const warmup = startProbes(gw.url, 'm', 5);
    await sleep(1000);
    await warmup.stop();
    const idleProbes = startProbes(gw.url, 'm', 5);
    await sleep(2000);
    const idle = await idleProbes.stop();
    const rssBeforeKb = rssKb(pid);

    const idleLag = await loopLagMs(admin);
    const probes = startProbes(gw.url, 'm', 5);
    let groups = 0;
    let pages = 0;
    let bytes = 0;
    let after: string | null = null;
    const query = `from=${ledger.fromDay}&to=${ledger.toDay}&group_by=day,team,key,model,provider&limit=10000`;
    let busy: number[];
    try {
      for (; pages < 1000; ) {
        const res: Response = await fetch(`${admin}/admin/v1/usage?${query}${after === null ? '' : `&after=${after}`}`);
        const text = await res.text();
        assert.equal(res.status, 200, text.slice(0, 500));
        pages++;
        bytes += text.length;
        const page = JSON.parse(text) as { rows: Array<{ team: string }>; next: string | null };
        assert.ok(page.rows.length <= 10_000);
        // The probes' own requests are booked too, under a team of their own.
        groups += page.rows.filter((r) => r.team.startsWith('team-')).length;
        after = page.next;
        if (after === null) break;
      }
    } finally {
      busy = await probes.stop();
    }
    const rssAfterKb = rssKb(pid);
    const busyLag = await loopLagMs(admin);
    assert.equal(groups, ledger.rollupRows, 'every group once');
    assert.ok(pages >= Math.ceil(ledger.rollupRows / 10_000));
    assert.ok(busy.length > 0, 'the probes ran during the walk');

    const idleP50 = quantile(idle, 0.5);
    const figures = {
      raw_rows: ledger.rawRows,
      rollup_rows: ledger.rollupRows,
      pages,
      answer_mb: Math.round(bytes / 1e5) / 10,
      probes_idle: idle.length,
      probes_during: busy.length,
      idle_p50_ms: round(idleP50),
      idle_p99_ms: round(quantile(idle, 0.99)),
      during_p50_ms: round(quantile(busy, 0.5)),
      during_p99_ms: round(quantile(busy, 0.99)),
      // Added: the same percentile, during the walk minus idle.
      added_p50_ms: round(quantile(busy, 0.5) - idleP50),
      added_p99_ms: round(quantile(busy, 0.99) - quantile(idle, 0.99)),
      during_max_ms: round(Math.max(...busy)),
      gateway_loop_lag_ms: { idle: idleLag, during: busyLag },
      load_average_1m: round(loadavg()[0] as number),
      gateway_rss_mb: { before: Math.round(rssBeforeKb / 1024), after: Math.round(rssAfterKb / 1024) },
    };
    t.diagnostic(JSON.stringify(figures));
    assert.ok(Math.max(...busy) < HANG_MS, `a probe waited ${round(Math.max(...busy))} ms: ${JSON.stringify(figures)}`);
  });
});

const round = (ms: number): number => Math.round(ms * 10) / 10;
