import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { percentile, round } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport, type TargetCheck } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// How long a key written through the admin API takes to work: from `POST /admin/v1/keys` to
// the new key's first 200 on `POST /v1/chat/completions`, one write after the other, on a
// gateway with 10 routes and on one with 20,000 routes and 10,000 keys in its config file
// (SQLite database). A write builds and swaps only the keyring, so the time should not grow
// with the routes: p50 at most 50 ms on both, and the large one's p50 at most 1.5x the small one's.
const P50_TARGET_MS = 50;
const RATIO_TARGET = 1.5;
const LARGE_ROUTES = 20_000;
const LARGE_KEYS = 10_000;
/** The new key is tried this often until it works. */
const POLL_MS = 1;

interface Shape {
  readonly name: 'small' | 'large';
  readonly routes: number;
  readonly fileKeys: number;
}

const SHAPES: readonly Shape[] = [
  { name: 'small', routes: 10, fileKeys: 0 },
  { name: 'large', routes: LARGE_ROUTES, fileKeys: LARGE_KEYS },
];

export const keyWrite: Scenario = {
  name: 'key-write',
  summary: "POST /admin/v1/keys to the new key's first 200, at 10 routes and at 20,000 routes + 10,000 file keys (SQLite)",
  estimateS: (d) => 2 * (10 + 2 * d),
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const problems: string[] = [];
    const mock = await ctx.fleet.startMock('bench');
    const figures: Record<string, unknown> = {};
    const rows: Array<Array<string | number>> = [];
    const p50s: Record<string, number> = {};
    for (const shape of SHAPES) {
      const times = await measure(ctx, shape, mock.baseUrl, problems);
      const sorted = Float64Array.from(times).sort();
      const at = (q: number): number => round(percentile(sorted, q / 100), 1);
      figures[shape.name] = {
        routes: shape.routes,
        file_keys: shape.fileKeys,
        writes: times.length,
        ms: { p50: at(50), p90: at(90), max: at(100) },
      };
      p50s[shape.name] = at(50);
      rows.push([shape.name, shape.routes, shape.fileKeys, times.length, at(50), at(90), at(100)]);
    }
    const small = p50s.small ?? Number.NaN;
    const large = p50s.large ?? Number.NaN;
    const ratio = round(large / small, 2);
    figures.large_over_small_p50 = ratio;
    const targets: TargetCheck[] = [
      checkTarget('key write to first 200, p50, 10 routes', small, '<=', P50_TARGET_MS, 'ms'),
      checkTarget('key write to first 200, p50, 20,000 routes + 10,000 keys', large, '<=', P50_TARGET_MS, 'ms'),
      checkTarget('20,000-route p50 / 10-route p50', ratio, '<=', RATIO_TARGET, 'x'),
    ];
    const table = renderTable(
      "key write: POST /admin/v1/keys to the new key's first 200",
      ['gateway', 'routes', 'file keys', 'writes', 'p50 ms', 'p90 ms', 'max ms'],
      rows,
    );
    return { figures, targets, tables: [table], problems };
  },
};

function config(shape: Shape, mockUrl: string, databasePath: string): Record<string, unknown> {
  const routes: Record<string, unknown> = { [BENCH_MODEL]: { candidates: [{ provider: 'bench' }] } };
  // A fresh object each: one shared object would be written as YAML aliases.
  for (let i = 1; i < shape.routes; i += 1) routes[`bulk-model-${i}`] = { candidates: [{ provider: 'bench' }] };
  const keys: Array<Record<string, unknown>> = [];
  for (let i = 0; i < shape.fileKeys; i += 1) {
    keys.push({ id: `file-key-${i}`, team: 'bulk', sha256: createHash('sha256').update(`file-key-secret-${i}`).digest('hex') });
  }
  return {
    ...gatewayConfig({ providers: { bench: mockProvider(mockUrl) }, routes, accessLog: false, admin: true }),
    teams: { bulk: {} },
    ...(keys.length === 0 ? {} : { keys }),
    database: { url: `sqlite:${databasePath}` },
  };
}

async function measure(ctx: ScenarioContext, shape: Shape, mockUrl: string, problems: string[]): Promise<number[]> {
  ctx.progress(`${shape.name}: a gateway with ${shape.routes} routes and ${shape.fileKeys} file keys`);
  const database = join(ctx.fleet.dir, `key-write-${shape.name}.db`);
  const small: Shape = { name: shape.name, routes: 10, fileKeys: 0 };
  // Started small, then reloaded to its size: a large config parsed at start on a busy
  // machine can outlast the fleet's start timeout (the parse runs at the lowest priority).
  const gw = await ctx.fleet.startGateway(`key-write-${shape.name}`, config(small, mockUrl, database), {
    cpuProfileDir: ctx.cpuProfileDir,
  });
  if (shape.routes !== small.routes || shape.fileKeys !== small.fileKeys) {
    gw.writeConfig(config(shape, mockUrl, database));
    const reload = await fetch(`${gw.adminUrl as string}/admin/reload`, { method: 'POST' });
    const result = (await reload.json()) as { result?: string };
    if (result.result !== 'applied') {
      problems.push(`${shape.name}: the reload to ${shape.routes} routes did not apply: ${JSON.stringify(result).slice(0, 300)}`);
      return [];
    }
  }
  const admin = gw.adminUrl as string;
  const team = await fetch(`${admin}/admin/v1/teams`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'writers' }),
  });
  if (team.status !== 201) {
    problems.push(`${shape.name}: creating the team answered ${team.status}: ${(await team.text()).slice(0, 300)}`);
    return [];
  }
  // Warm-up writes are not measured: the first ones pay for compiling the code paths.
  const warmup = Math.max(3, Math.round(ctx.warmupS * 2));
  const writes = Math.max(20, Math.round(ctx.durationS * 10));
  const times: number[] = [];
  for (let i = 0; i < warmup + writes; i += 1) {
    const ms = await writeAndUse(gw.url, admin);
    if (typeof ms === 'string') {
      problems.push(`${shape.name}: ${ms}`);
      break;
    }
    if (i >= warmup) times.push(ms);
  }
  return times;
}

/** One key written, then tried until it works: the milliseconds between the two, or what went wrong. */
async function writeAndUse(url: string, admin: string): Promise<number | string> {
  const started = performance.now();
  const res = await fetch(`${admin}/admin/v1/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ team: 'writers' }),
  });
  const text = await res.text();
  if (res.status !== 201) return `the key write answered ${res.status}: ${text.slice(0, 300)}`;
  const key = (JSON.parse(text) as { key: string }).key;
  for (let tries = 0; tries < 5000; tries += 1) {
    const chat = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: CHAT_BODY,
    });
    await chat.arrayBuffer();
    if (chat.status === 200) return performance.now() - started;
    if (chat.status !== 401) return `the new key's request answered ${chat.status}`;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return 'the new key never worked';
}
