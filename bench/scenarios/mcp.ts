import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { candidate, envelope } from '../../test/support/overlay.js';
import { writeByRename } from '../../test/support/overlay-gateway.js';
import { alternate, roundsFor } from '../lib/alternation.js';
import { type LoadFigures, type LoadRun, loadFigures, runLoad } from '../lib/load.js';
import { type LatencySummary, round, summarizeLatency } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// MCP: tools/call through the gateway against the mock MCP server directly, in the same run
// (throughput at a fixed concurrency as a ratio, and the latency the hop adds at concurrency
// 1), and the time from an overlay revision to notifications/tools/list_changed at an open
// client session. Both sides hold one MCP session each, opened over plain HTTP; the call
// body is constant, so autocannon drives it with the session's headers.

const CONNECTIONS = 16;
const VERSION = '2025-11-25';
const OVERLAY_DEBOUNCE_MS = 50;
const LIST_CHANGED_DEBOUNCE_MS = 100;
const REVISIONS = 30;
const WARMUP_REVISIONS = 3;
const GAP_MIN_MS = 100;
const GAP_JITTER_MS = 100;
const NOTICE_DEADLINE_MS = 5000;
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } } });
const ACCEPT = 'application/json, text/event-stream';

/** Opens an MCP session at `url` (initialize, then notifications/initialized); its id. */
async function openSession(url: string): Promise<string> {
  const post = (body: object, session?: string) =>
    fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: ACCEPT,
        ...(session === undefined ? {} : { 'mcp-session-id': session, 'mcp-protocol-version': VERSION }),
      },
      body: JSON.stringify(body),
    });
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  });
  await init.text();
  const session = init.headers.get('mcp-session-id');
  if (init.status !== 200 || session === null) throw new Error(`initialize at ${url} answered ${init.status}`);
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
  await initialized.text();
  return session;
}

function sessionHeaders(session: string): Record<string, string> {
  return { accept: ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': VERSION };
}

/** Polls tools/list on the session until `tool` is listed (the gateway lists its server's catalog at start). */
async function untilListed(url: string, session: string, tool: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...sessionHeaders(session) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    if ((await res.text()).includes(`"name":"${tool}"`)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${tool} was never listed at ${url}`);
}

/** One call at a time on one keep-alive connection, send to last byte, as runSequential does, with the session's headers. */
async function sequential(url: string, session: string, count: number): Promise<{ samplesMs: number[]; failures: number }> {
  const target = new URL(url);
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 30_000 });
  const samplesMs: number[] = [];
  let failures = 0;
  const headers = { 'content-type': 'application/json', ...sessionHeaders(session) };
  try {
    for (let i = 0; i < count; i++) {
      const t0 = process.hrtime.bigint();
      try {
        const res = await client.request({ method: 'POST', path: target.pathname, headers, body: CALL });
        const text = await res.body.text();
        const t1 = process.hrtime.bigint();
        if (res.statusCode === 200 && text.includes('"result"')) samplesMs.push(Number(t1 - t0) / 1e6);
        else failures += 1;
      } catch {
        failures += 1;
      }
    }
  } finally {
    await client.close().catch(() => undefined);
  }
  return { samplesMs, failures };
}

/**
 * A client session's GET stream at the gateway: resolves `next()` with the time each
 * notifications/tools/list_changed arrives.
 */
async function listenForChanges(url: string, session: string): Promise<{ next(): Promise<number>; close(): Promise<void> }> {
  const target = new URL(url);
  const client = new Client(target.origin);
  const res = await client.request({ method: 'GET', path: target.pathname, headers: sessionHeaders(session) });
  if (res.statusCode !== 200) throw new Error(`GET stream answered ${res.statusCode}`);
  const arrivals: number[] = [];
  const waiters: Array<(at: number) => void> = [];
  let text = '';
  res.body.setEncoding('utf8');
  res.body.on('data', (chunk: string) => {
    text += chunk;
    for (;;) {
      const end = text.indexOf('\n\n');
      if (end === -1) break;
      const event = text.slice(0, end);
      text = text.slice(end + 2);
      if (!event.includes('notifications/tools/list_changed')) continue;
      const at = performance.now();
      const waiter = waiters.shift();
      if (waiter !== undefined) waiter(at);
      else arrivals.push(at);
    }
  });
  res.body.on('error', () => undefined);
  return {
    next: () =>
      new Promise<number>((resolve, reject) => {
        const ready = arrivals.shift();
        if (ready !== undefined) return resolve(ready);
        const timer = setTimeout(() => reject(new Error('no list_changed within the deadline')), NOTICE_DEADLINE_MS);
        waiters.push((at) => {
          clearTimeout(timer);
          resolve(at);
        });
      }),
    close: async () => {
      res.body.destroy();
      await client.destroy().catch(() => undefined);
    },
  };
}

/** Revision `n`: echo always, weather on odd ones, so that every revision changes the list. */
function revision(n: number): string {
  const tools = n % 2 === 0 ? ['echo'] : ['echo', 'weather'];
  return JSON.stringify(
    envelope(
      tools.map((name) => candidate(name, 'tools', { kind: 'mcp_tool', rank: n })),
      { network: 'bench-net', localSite: 'east', sourceUid: 'bench-uid', sourceGeneration: n + 1, renderedAt: new Date().toISOString() },
    ),
  );
}

function gatewayServer(): Record<string, unknown> {
  return { listen: '127.0.0.1:0', drain_timeout_ms: 2000 };
}

export const mcp: Scenario = {
  name: 'mcp',
  summary: `tools/call through the gateway vs the mock MCP server (c=${CONNECTIONS} ratio, c=1 added p50), and overlay revision to list_changed (${REVISIONS} revisions)`,
  estimateS: (d) => 8 + 4 * d + ((REVISIONS + WARMUP_REVISIONS) * (GAP_MIN_MS + GAP_JITTER_MS / 2 + 200)) / 1000,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const problems: string[] = [];
    const mock = await ctx.fleet.startMock('tools', ['--protocol', 'mcp', '--mcp-response', 'json']);
    const mockUrl = mock.baseUrl;
    const server = { type: 'mcp', base_url: mockUrl, timeout_ms: 10_000 };
    const gw = await ctx.fleet.startGateway(
      'gateway-mcp',
      {
        server: gatewayServer(),
        log: { level: 'info', access: true },
        providers: { tools: server },
        routing: { tools: { echo: { candidates: [{ provider: 'tools' }] } } },
      },
      { cpuProfileDir: ctx.cpuProfileDir },
    );
    const gwUrl = `${gw.url}/mcp`;
    const sessions = { direct: await openSession(mockUrl), gateway: await openSession(gwUrl) };
    await untilListed(gwUrl, sessions.gateway, 'echo');
    const urls = { direct: mockUrl, gateway: gwUrl };
    const targets = ['direct', 'gateway'] as const;

    ctx.progress(`mcp: warm-up ${ctx.warmupS}s`);
    for (const t of targets)
      await runLoad({ url: urls[t], body: CALL, connections: CONNECTIONS, durationS: ctx.warmupS, headers: sessionHeaders(sessions[t]) });

    const rounds = roundsFor(ctx.durationS);
    const slice = Math.max(1, Math.round(ctx.durationS / rounds));
    ctx.progress(`mcp: tools/call at c=${CONNECTIONS}, ${rounds} rounds of ${slice}s per target`);
    const load = await alternate<(typeof targets)[number], LoadRun>(
      targets,
      (t) => runLoad({ url: urls[t], body: CALL, connections: CONNECTIONS, durationS: slice, headers: sessionHeaders(sessions[t]) }),
      rounds,
    );
    const figures: Record<string, LoadFigures> = {};
    for (const t of targets) figures[t] = loadFigures(load[t]);
    for (const t of targets) {
      const f = figures[t] as LoadFigures;
      if (f.errors + f.non2xx + f.timeouts > 0) problems.push(`${t}: ${f.errors} errors, ${f.non2xx} non-2xx, ${f.timeouts} timeouts`);
    }
    const ratio = round((figures.gateway as LoadFigures).req_per_s / (figures.direct as LoadFigures).req_per_s, 3);

    const count = Math.max(500, Math.round(ctx.durationS * 400));
    ctx.progress(`mcp: ${count} sequential calls per target at c=1, alternated`);
    const seq = await alternate(targets, (t) => sequential(urls[t], sessions[t], Math.round(count / 2)), 2);
    const c1: Record<string, LatencySummary> = {};
    for (const t of targets) {
      const runs = seq[t];
      const failures = runs.reduce((s, r) => s + r.failures, 0);
      if (failures > 0) problems.push(`${t} c=1: ${failures} failed calls`);
      c1[t] = summarizeLatency(runs.flatMap((r) => r.samplesMs));
    }
    const addedP50 = round((c1.gateway as LatencySummary).p50Ms - (c1.direct as LatencySummary).p50Ms, 3);

    // Part 2: an overlay revision to the client's notifications/tools/list_changed.
    const overlayFile = join(ctx.fleet.dir, 'mcp-overlay.json');
    writeFileSync(overlayFile, revision(0));
    const ogw = await ctx.fleet.startGateway('gateway-mcp-overlay', {
      server: gatewayServer(),
      log: { level: 'info', access: false },
      providers: { tools: server },
      routing: { overlay: { file: overlayFile, reload: { debounce_ms: OVERLAY_DEBOUNCE_MS, recheck_ms: 3_600_000 } } },
      mcp: { list_changed_debounce_ms: LIST_CHANGED_DEBOUNCE_MS },
    });
    const ogwUrl = `${ogw.url}/mcp`;
    const watcher = await openSession(ogwUrl);
    await untilListed(ogwUrl, watcher, 'echo');
    const stream = await listenForChanges(ogwUrl, watcher);
    const noticesMs: number[] = [];
    try {
      ctx.progress(`mcp: ${REVISIONS} overlay revisions, each to list_changed at an open session`);
      for (let n = 1; n <= REVISIONS + WARMUP_REVISIONS; n++) {
        await new Promise((r) => setTimeout(r, GAP_MIN_MS + Math.random() * GAP_JITTER_MS));
        const t0 = performance.now();
        writeByRename(overlayFile, revision(n));
        try {
          const at = await stream.next();
          if (n > WARMUP_REVISIONS) noticesMs.push(at - t0);
        } catch (err) {
          problems.push(`revision ${n}: ${(err as Error).message}`);
        }
      }
    } finally {
      await stream.close();
    }
    const notice = summarizeLatency(noticesMs);
    const budget = OVERLAY_DEBOUNCE_MS + LIST_CHANGED_DEBOUNCE_MS + 100;

    const table = renderTable(
      'MCP tools/call',
      ['target', `req/s c=${CONNECTIONS}`, 'p50 ms', 'p99 ms', 'c=1 p50 ms', 'c=1 p99 ms'],
      targets.map((t) => {
        const f = figures[t] as LoadFigures;
        const s = c1[t] as LatencySummary;
        return [t, f.req_per_s, f.latency_ms.p50Ms, f.latency_ms.p99Ms, s.p50Ms, s.p99Ms];
      }),
    );
    const noticeTable = renderTable(
      'MCP overlay revision to notifications/tools/list_changed',
      ['revisions', 'p50 ms', 'p99 ms', 'max ms', 'debounces ms'],
      [[noticesMs.length, notice.p50Ms, notice.p99Ms, notice.maxMs, `${OVERLAY_DEBOUNCE_MS} + ${LIST_CHANGED_DEBOUNCE_MS}`]],
    );
    return {
      figures: {
        tools_call: { ...figures, ratio_gateway_over_direct: ratio },
        sequential_c1: { ...c1, added_p50_ms: addedP50 },
        overlay_to_list_changed_ms: {
          ...notice,
          overlay_debounce_ms: OVERLAY_DEBOUNCE_MS,
          list_changed_debounce_ms: LIST_CHANGED_DEBOUNCE_MS,
        },
      },
      targets: [
        checkTarget(`tools/call throughput, gateway / direct (c=${CONNECTIONS})`, ratio, '>=', 0.7, 'x'),
        checkTarget('tools/call added p50 at c=1', addedP50, '<=', 0.5, 'ms'),
        checkTarget(
          `overlay revision to list_changed p99 (debounces ${OVERLAY_DEBOUNCE_MS} + ${LIST_CHANGED_DEBOUNCE_MS} ms + 100 ms)`,
          notice.p99Ms,
          '<=',
          budget,
          'ms',
        ),
      ],
      tables: [table, noticeTable],
      problems,
    };
  },
};
