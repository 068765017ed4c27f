import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { stableIdFor } from '../../src/contract/index.js';
import { candidate, envelope } from '../../test/support/overlay.js';
import { BENCH_MODEL, CHAT_BODY, mockProvider } from '../lib/gateway-config.js';
import { kubeletSwap } from '../lib/kubelet-volume.js';
import { overlayGatewayConfig } from '../lib/overlay-config.js';
import { type LatencySummary, percentile, round, summarizeLatency } from '../lib/percentiles.js';
import type { Scenario, ScenarioContext, ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// Overlay apply latency: 30 kubelet-style updates with debounce_ms 50. No target; the
// debounce is a floor under every figure.
const UPDATES = 30;
const WARMUP_UPDATES = 3;
const DEBOUNCE_MS = 50;
/** Quiet time between updates, jittered so no update keeps the same phase as a gateway timer. */
const GAP_MIN_MS = 100;
const GAP_JITTER_MS = 100;
const POLL_DEADLINE_MS = 5000;
const KEY = 'routing-overlay.json';
const CLUSTERS = ['alpha', 'beta'] as const;

interface UpdateSample {
  readonly revision: string;
  /** From just before the `..data` rename to the headers of the first response carrying the new revision. */
  readonly latencyMs: number;
  /** Requests sent until then, the attributed one included. */
  readonly polls: number;
}

interface ReloadLine {
  readonly msg?: string;
  readonly trigger?: string;
  readonly result?: string;
  readonly revision?: string;
  readonly duration_ms?: number;
}

/**
 * Update `n` of the projected volume: the candidate alternates between the two mocks and
 * its rank carries `n`, so every update is a new revision (source_generation alone is
 * outside the digest), published by a producer whose generation only moves forward.
 */
function render(n: number): { text: string; revision: string } {
  const cluster = CLUSTERS[n % 2] as string;
  const site = `${cluster}-1`;
  const c = candidate(BENCH_MODEL, cluster, { site, stable_id: stableIdFor('inference_model', BENCH_MODEL, site, cluster), rank: n });
  const env = envelope([c], {
    network: 'bench-net',
    localSite: 'east',
    sourceUid: 'bench-uid',
    sourceGeneration: n + 1,
    renderedAt: new Date().toISOString(),
  });
  return { text: JSON.stringify(env), revision: (env.revision as { value: string }).value };
}

/**
 * Apply latency: a gateway in overlay mode watches a kubelet-style projected
 * volume. For each update the bench swaps `..data` and then polls with chat requests, one
 * at a time on one keep-alive connection, until a response carries the new revision.
 */
export const overlayApplyLatency: Scenario = {
  name: 'overlay-apply-latency',
  summary: `${UPDATES} kubelet ..data swaps, time to the first response from the new revision (debounce ${DEBOUNCE_MS} ms)`,
  estimateS: () => 3 + ((UPDATES + WARMUP_UPDATES) * (GAP_MIN_MS + GAP_JITTER_MS / 2 + DEBOUNCE_MS + 20)) / 1000,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const problems: string[] = [];
    const mocks = await Promise.all(CLUSTERS.map((name) => ctx.fleet.startMock(name)));
    const providers = Object.fromEntries(CLUSTERS.map((name, i) => [name, mockProvider(mocks[i]!.baseUrl)]));
    const volume = join(ctx.fleet.dir, 'overlay-volume');
    let published = 0;
    const first = render(published);
    kubeletSwap(volume, { [KEY]: first.text });
    const gw = await ctx.fleet.startGateway(
      'gateway-overlay',
      overlayGatewayConfig({
        providers,
        // The safety-net re-check is pushed out of the way: every reload here comes from a watch event.
        overlay: { file: join(volume, KEY), reload: { debounce_ms: DEBOUNCE_MS, recheck_ms: 3_600_000 } },
      }),
      { cpuProfileDir: ctx.cpuProfileDir },
    );
    const origin = new URL(gw.url).origin;
    const client = new Client(origin, { pipelining: 1, keepAliveTimeout: 30_000 });
    const samples: UpdateSample[] = [];
    let failedPolls = 0;
    try {
      const smoke = await poll(client, first.revision, performance.now());
      if (smoke.sample === null) {
        problems.push(`the first revision never served: ${smoke.failures} failed requests, last revision seen ${smoke.lastRevision}`);
        return { figures: {}, targets: [], tables: [], problems };
      }

      ctx.progress(`${WARMUP_UPDATES} warm-up updates, then ${UPDATES} measured, ${GAP_MIN_MS}-${GAP_MIN_MS + GAP_JITTER_MS} ms apart`);
      for (let i = 0; i < WARMUP_UPDATES + UPDATES; i++) {
        await sleep(GAP_MIN_MS + Math.random() * GAP_JITTER_MS);
        published += 1;
        const next = render(published);
        const swappedAt = kubeletSwap(volume, { [KEY]: next.text });
        const outcome = await poll(client, next.revision, swappedAt);
        failedPolls += outcome.failures;
        if (outcome.sample === null) {
          problems.push(
            `update ${published}: revision ${next.revision.slice(0, 12)} not served within ${POLL_DEADLINE_MS} ms (last seen ${outcome.lastRevision?.slice(0, 12)})`,
          );
          continue;
        }
        if (i >= WARMUP_UPDATES) samples.push(outcome.sample);
      }
    } finally {
      await client.close().catch(() => undefined);
    }
    if (failedPolls > 0) problems.push(`${failedPolls} poll requests failed or answered non-200`);

    // The gateway's own reload lines: one applied overlay_watch reload per update is expected.
    const expectedApplied = published;
    const reloads = await waitForReloadLines(gw.logPath, expectedApplied);
    const applied = reloads.filter((l) => l.result === 'applied');
    const rejected = reloads.filter((l) => l.result === 'rejected');
    if (applied.length !== expectedApplied) problems.push(`${applied.length} overlay_watch reloads applied, expected ${expectedApplied}`);
    if (rejected.length > 0) problems.push(`${rejected.length} overlay_watch reloads were rejected`);
    const reloadByRevision = new Map(applied.map((l) => [l.revision, l.duration_ms ?? Number.NaN]));

    const latencies = samples.map((s) => s.latencyMs);
    const latency = summarizeLatency(latencies);
    const p95Ms = p95(latencies);
    const measuredReloadMs = samples.map((s) => reloadByRevision.get(s.revision) ?? Number.NaN);
    const reloadValues = measuredReloadMs.filter(Number.isFinite);
    const reloadMs = summarizeLatency(reloadValues);
    // What is neither the debounce nor the reload: event delivery, the writer's own tail
    // (the old folder's removal restarts the debounce), and the polling request.
    const rest = summarizeLatency(
      samples.map((s, i) => s.latencyMs - DEBOUNCE_MS - (measuredReloadMs[i] as number)).filter(Number.isFinite),
    );
    const polls = summarizeLatency(samples.map((s) => s.polls));
    const unchanged = reloads.filter((l) => l.result === 'unchanged').length;

    const row = (label: string, l: LatencySummary, p95: number | null) => [label, l.count, l.p50Ms, p95, l.p99Ms, l.maxMs, l.minMs];
    const tables = [
      renderTable(
        `apply latency: ..data rename -> first response from the new revision (ms; floor = debounce ${DEBOUNCE_MS} ms; p99 of ${samples.length} is the max)`,
        ['measure', 'updates', 'p50', 'p95', 'p99', 'max', 'min'],
        [
          row('rename -> attributed response', latency, p95Ms),
          row('  gateway reload duration_ms', reloadMs, p95(reloadValues)),
          row('  rest (latency - debounce - reload)', rest, null),
        ],
      ),
      // The gateway's start-up re-read (closing the start-up race) is one `unchanged` overlay_watch reload.
      renderTable(
        "polling, and the gateway's overlay_watch reloads",
        ['requests per update p50', 'max', 'failed', 'applied', 'unchanged', 'rejected'],
        [[polls.p50Ms, polls.maxMs, failedPolls, `${applied.length}/${expectedApplied}`, unchanged, rejected.length]],
      ),
    ];
    return {
      figures: {
        updates: samples.length,
        warmup_updates: WARMUP_UPDATES,
        debounce_ms: DEBOUNCE_MS,
        cpu_profiled: ctx.cpuProfileDir !== null,
        apply_latency_ms: { ...latency, p95Ms },
        gateway_reload_ms: { ...reloadMs, p95Ms: p95(reloadValues) },
        rest_ms: rest,
        polls_per_update: polls,
        failed_polls: failedPolls,
        watch_reloads: { applied: applied.length, unchanged, rejected: rejected.length, expected_applied: expectedApplied },
        samples_ms: latencies.map((l) => round(l)),
      },
      targets: [],
      tables,
      problems,
    };
  },
};

/** Sends chat requests back to back until one is attributed to `revision`, or the deadline passes. */
async function poll(
  client: Client,
  revision: string,
  since: number,
): Promise<{ sample: UpdateSample | null; failures: number; lastRevision: string | null }> {
  let failures = 0;
  let lastRevision: string | null = null;
  for (let polls = 1; performance.now() - since < POLL_DEADLINE_MS; polls++) {
    try {
      const res = await client.request({
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json' },
        body: CHAT_BODY,
      });
      const at = performance.now();
      await res.body.dump();
      if (res.statusCode !== 200) {
        failures += 1;
        continue;
      }
      const served = res.headers['x-switchyard-revision'];
      lastRevision = typeof served === 'string' ? served : null;
      if (lastRevision === revision) return { sample: { revision, latencyMs: at - since, polls }, failures, lastRevision };
    } catch {
      failures += 1;
      await sleep(10);
    }
  }
  return { sample: null, failures, lastRevision };
}

/** The overlay_watch reload lines in the gateway's log, once `expected` are applied or 3 s have passed (the log is flushed on a timer). */
async function waitForReloadLines(logPath: string, expected: number): Promise<ReloadLine[]> {
  const deadline = performance.now() + 3000;
  for (;;) {
    const lines: ReloadLine[] = [];
    for (const text of readFileSync(logPath, 'utf8').split('\n')) {
      if (!text.includes('"reload"')) continue;
      try {
        const line = JSON.parse(text) as ReloadLine;
        if (line.msg === 'reload' && line.trigger === 'overlay_watch') lines.push(line);
      } catch {
        // A line cut by a flush in progress: read again next round.
      }
    }
    if (lines.filter((l) => l.result === 'applied').length >= expected || performance.now() > deadline) return lines;
    await sleep(100);
  }
}

/** summarizeLatency has no p95; this scenario reports it. */
function p95(values: readonly number[]): number {
  return round(percentile(Float64Array.from(values).sort(), 0.95));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
