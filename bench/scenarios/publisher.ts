import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { stringify } from 'yaml';
import { type Inventory, type Output, parseInventory, publishOverlay, renderOverlay } from '../../src/publisher/index.js';
import { BENCH_MODEL, CHAT_BODY, mockProvider } from '../lib/gateway-config.js';
import { overlayGatewayConfig } from '../lib/overlay-config.js';
import { type LatencySummary, round, summarizeLatency } from '../lib/percentiles.js';
import type { Scenario, ScenarioContext, ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// The overlay publisher (ADR 0010). Two figures, no target:
// 1. render + publish (kubelet layout, fsyncs included) of a 1024-candidate inventory, in process;
// 2. an inventory edit -> the gateway serving the new revision: `switchyard grid` watches the
//    inventory (debounce 100 ms) and publishes; the gateway watches the overlay (debounce 50 ms).
//    Both debounces are a floor under every sample.
const PUBLISHES = 40;
const EDITS = 20;
const WARMUP_EDITS = 3;
const GAP_MS = 150;
const POLL_DEADLINE_MS = 10_000;
const GATEWAY_DEBOUNCE_MS = 50;
const GRID_DEBOUNCE_MS = 100;
const CLUSTERS = ['alpha', 'beta'] as const;

/** 32 providers x 32 models = 1024 candidates, the contract's maximum. */
function bigInventory(weight: number): Inventory {
  const models = Array.from({ length: 32 }, (_, i) => `model-${String(i).padStart(2, '0')}`);
  return parseInventory(
    stringify({
      network: 'bench-net',
      gateway: 'bench-gw',
      namespace: 'ai',
      local_site: 'site-00',
      local_region: 'region-0',
      selection_policy: { mode: 'weightedRandom' },
      providers: Array.from({ length: 32 }, (_, i) => ({
        cluster: `p-${String(i).padStart(2, '0')}`,
        site: `site-${String(i).padStart(2, '0')}`,
        region: `region-${i % 4}`,
        models,
        weight: i === 0 ? weight : 1 + (i % 10),
        credential: { name: `cred-${i}`, namespace: 'ai', key: 'token' },
      })),
    }),
  );
}

/** The small inventory the grid publishes; edit n alternates the weights so each edit is a new revision. */
function smallInventory(n: number): string {
  return stringify({
    network: 'bench-net',
    gateway: 'bench-gw',
    namespace: 'ai',
    local_site: 'east',
    selection_policy: { mode: 'weightedRandom' },
    providers: CLUSTERS.map((cluster, i) => ({
      cluster,
      site: `${cluster}-1`,
      region: 'r',
      models: [BENCH_MODEL],
      weight: i === 0 ? 1 + (n % 500) : 1,
    })),
  });
}

function writeByRename(file: string, text: string): number {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, text);
  const at = performance.now();
  renameSync(tmp, file);
  return at;
}

export const publisher: Scenario = {
  name: 'publisher',
  summary: `render + publish of 1024 candidates (x${PUBLISHES}), and inventory edit -> new revision serving (x${EDITS}) through grid and a gateway`,
  estimateS: () => 6 + ((EDITS + WARMUP_EDITS) * (GAP_MS + GRID_DEBOUNCE_MS + GATEWAY_DEBOUNCE_MS + 50)) / 1000,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const problems: string[] = [];

    // 1. In process: render alone, and render + publish.
    const out: Output = { layout: 'kubelet', dir: mkdtempSync(join(ctx.fleet.dir, 'publish-')), key: 'routing-overlay.json' };
    const renderMs: number[] = [];
    const publishMs: number[] = [];
    let candidates = 0;
    for (let i = 0; i < PUBLISHES + 3; i++) {
      const inventory = bigInventory(1 + i);
      const t0 = performance.now();
      const rendered = renderOverlay(inventory);
      const t1 = performance.now();
      const outcome = await publishOverlay(inventory, rendered, out, { producerVersion: 'bench' });
      const t2 = performance.now();
      if (outcome.result !== 'written') problems.push(`publish ${i}: ${outcome.result}, expected written`);
      candidates = rendered.payload.candidates.length;
      if (i >= 3) {
        renderMs.push(t1 - t0);
        publishMs.push(t2 - t0);
      }
    }
    if (candidates !== 1024) problems.push(`rendered ${candidates} candidates, expected 1024`);
    rmSync(out.dir, { recursive: true, force: true });
    ctx.progress(`render + publish of ${candidates} candidates: done`);

    // 2. Real processes: two mocks, grid, and a gateway watching grid's output.
    const mocks = await Promise.all(CLUSTERS.map((name) => ctx.fleet.startMock(name)));
    const inventoryDir = join(ctx.fleet.dir, 'inventory');
    mkdirSync(inventoryDir);
    const inventoryPath = join(inventoryDir, 'inventory.yaml');
    let edit = 0;
    writeByRename(inventoryPath, smallInventory(edit));
    const volume = join(ctx.fleet.dir, 'overlay-volume');
    await ctx.fleet.startGrid('grid', inventoryPath, volume);
    const gw = await ctx.fleet.startGateway(
      'gateway-overlay',
      overlayGatewayConfig({
        providers: Object.fromEntries(CLUSTERS.map((name, i) => [name, mockProvider(mocks[i]!.baseUrl)])),
        overlay: { file: join(volume, 'routing-overlay.json'), reload: { debounce_ms: GATEWAY_DEBOUNCE_MS, recheck_ms: 3_600_000 } },
        accessLog: false,
      }),
      { cpuProfileDir: ctx.cpuProfileDir },
    );
    const client = new Client(new URL(gw.url).origin, { pipelining: 1, keepAliveTimeout: 30_000 });
    const editMs: number[] = [];
    let failedPolls = 0;
    try {
      const first = await poll(client, revisionOf(smallInventory(edit)), performance.now());
      failedPolls += first.failures;
      if (first.latencyMs === null) problems.push('the first revision never served');
      for (let i = 0; i < WARMUP_EDITS + EDITS && first.latencyMs !== null; i++) {
        await new Promise((r) => setTimeout(r, GAP_MS + Math.random() * 50));
        edit += 1;
        const text = smallInventory(edit);
        const at = writeByRename(inventoryPath, text);
        const outcome = await poll(client, revisionOf(text), at);
        failedPolls += outcome.failures;
        if (outcome.latencyMs === null) problems.push(`edit ${edit}: the new revision did not serve within ${POLL_DEADLINE_MS} ms`);
        else if (i >= WARMUP_EDITS) editMs.push(outcome.latencyMs);
      }
    } finally {
      await client.close().catch(() => undefined);
    }
    if (failedPolls > 0) problems.push(`${failedPolls} poll requests failed or answered non-200`);

    const render = summarizeLatency(renderMs);
    const publish = summarizeLatency(publishMs);
    const edits = summarizeLatency(editMs);
    const row = (label: string, l: LatencySummary) => [label, l.count, l.p50Ms, l.p99Ms, l.maxMs, l.minMs];
    return {
      figures: {
        candidates,
        render_ms: render,
        render_publish_ms: publish,
        edit_to_serving_ms: edits,
        floors_ms: { grid_debounce: GRID_DEBOUNCE_MS, gateway_debounce: GATEWAY_DEBOUNCE_MS },
        edit_samples_ms: editMs.map((v) => round(v)),
        failed_polls: failedPolls,
      },
      targets: [],
      tables: [
        renderTable(
          `publisher (ms; ${candidates} candidates; edit -> serving has a floor of ${GRID_DEBOUNCE_MS} + ${GATEWAY_DEBOUNCE_MS} ms of debounce)`,
          ['measure', 'n', 'p50', 'p99', 'max', 'min'],
          [
            row('render (1024 candidates)', render),
            row('render + publish (kubelet, fsync)', publish),
            row('inventory edit -> new revision serving', edits),
          ],
        ),
      ],
      problems,
    };
  },
};

function revisionOf(inventoryText: string): string {
  return renderOverlay(parseInventory(inventoryText)).revision;
}

/** Chat requests back to back until one is attributed to `revision`; the time from `since` to its headers. */
async function poll(client: Client, revision: string, since: number): Promise<{ latencyMs: number | null; failures: number }> {
  let failures = 0;
  while (performance.now() - since < POLL_DEADLINE_MS) {
    try {
      const res = await client.request({
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json' },
        body: CHAT_BODY,
      });
      const at = performance.now();
      await res.body.dump();
      if (res.statusCode !== 200) failures += 1;
      else if (res.headers['x-switchyard-revision'] === revision) return { latencyMs: at - since, failures };
    } catch {
      failures += 1;
    }
  }
  return { latencyMs: null, failures };
}
