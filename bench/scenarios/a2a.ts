import { readFileSync } from 'node:fs';
import { alternate, roundsFor } from '../lib/alternation.js';
import { failuresOf, type LoadFigures, type LoadRun, loadFigures, runLoad } from '../lib/load.js';
import { round, summarizeLatency } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import { checkTarget, monotonicUs, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { runSequential, type SequentialRun } from '../lib/sequential.js';
import { renderTable } from '../lib/table.js';

// A2A: SendMessage to the mock's instant agent through the gateway against the same call
// straight to the mock, in the same run: throughput at a fixed concurrency as a ratio, and
// the latency the hop adds at concurrency 1. The instant agent answers with a message (no
// task), so the gateway's work per call is the whole call path: authentication, the agent's
// route and card, the upstream exchange, the answer's context id taken into ownership, and
// the record. The body is constant; the mock gives every answer a fresh context id.

const CONNECTIONS = 32;
const THROUGHPUT_RATIO_TARGET = 0.8;
const ADDED_P50_TARGET_MS = 0.5;
const AGENT = 'instant';
const SEND = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: { message: { messageId: 'bench-message', role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
});
const HEADERS = { 'a2a-version': '1.0' };
const TARGETS = ['direct', 'gateway'] as const;
type Target = (typeof TARGETS)[number];

/** One call, checked: an answer that is a JSON-RPC error at HTTP 200 would count as served otherwise. */
async function smoke(url: string): Promise<string | null> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...HEADERS }, body: SEND });
  const text = await res.text();
  return res.status === 200 && text.includes('"echo: hello"') ? null : `${url} answered ${res.status}: ${text.slice(0, 200)}`;
}

/**
 * The gateway's calls that were not answered, by reason, from its access log. A call the
 * load generator left in flight when its run ended is `client_closed`: not a failure.
 */
function unanswered(logPath: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(logPath, 'utf8').split('\n')) {
    if (!line.includes('"msg":"request"') || line.includes('"outcome":"answered"')) continue;
    const reason = (JSON.parse(line) as { reason?: string }).reason ?? 'none';
    if (reason !== 'client_closed') out[reason] = (out[reason] ?? 0) + 1;
  }
  return out;
}

export const a2a: Scenario = {
  name: 'a2a',
  summary: `A2A SendMessage through the gateway vs the mock agent directly (c=${CONNECTIONS} ratio, c=1 added p50)`,
  estimateS: (d) => 6 + 2 * 1.5 + 2 * d + 4,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const problems: string[] = [];
    const mock = await ctx.fleet.startMock('agents', ['--protocol', 'a2a']);
    const agentUrl = `${mock.baseUrl}/${AGENT}`;
    const gw = await ctx.fleet.startGateway(
      'gateway-a2a',
      {
        server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
        log: { level: 'info', access: true },
        providers: { agents: { type: 'a2a', base_url: agentUrl, timeout_ms: 10_000 } },
        routing: { agents: { [AGENT]: { candidates: [{ provider: 'agents' }] } } },
      },
      { cpuProfileDir: ctx.cpuProfileDir },
    );
    const urls: Record<Target, string> = { direct: agentUrl, gateway: `${gw.url}/a2a/${AGENT}` };
    for (const t of TARGETS) {
      const problem = await smoke(urls[t]);
      if (problem !== null) return { figures: { urls }, targets: [], tables: [], problems: [problem] };
    }

    ctx.progress(`warm-up ${ctx.warmupS}s per target`);
    for (const t of TARGETS)
      await runLoad({ url: urls[t], body: SEND, headers: HEADERS, connections: CONNECTIONS, durationS: ctx.warmupS });

    const rounds = roundsFor(ctx.durationS);
    const slice = Math.max(1, Math.round(ctx.durationS / rounds));
    ctx.progress(`SendMessage at c=${CONNECTIONS}, ${rounds} rounds of ${slice}s per target`);
    const spansUs: Array<readonly [number, number]> = [];
    // CPU each process used per call: steadier than req/s on a shared machine, and it says which side pays.
    const cpuMs: Record<Target, { gateway: number; mock: number }> = { direct: { gateway: 0, mock: 0 }, gateway: { gateway: 0, mock: 0 } };
    const load = await alternate<Target, LoadRun>(
      TARGETS,
      async (t) => {
        const from = monotonicUs();
        const { result, cpuMs: used } = await cpuUsedDuring([gw.pid, mock.pid], () =>
          runLoad({ url: urls[t], body: SEND, headers: HEADERS, connections: CONNECTIONS, durationS: slice }),
        );
        if (t === 'gateway') spansUs.push([from, monotonicUs()]);
        cpuMs[t].gateway += used[0] ?? 0;
        cpuMs[t].mock += used[1] ?? 0;
        return result;
      },
      rounds,
    );
    const figures = {} as Record<Target, LoadFigures>;
    for (const t of TARGETS) {
      figures[t] = loadFigures(load[t]);
      const failed = failuresOf(t, figures[t]);
      if (failed !== null) problems.push(failed);
    }
    const ratio = round(figures.gateway.req_per_s / figures.direct.req_per_s, 3);
    const perCallUs = (ms: number, t: Target): number => (figures[t].ok === 0 ? 0 : round((ms * 1000) / figures[t].ok, 1));
    const cpuPerCall = {
      direct: { mock_us: perCallUs(cpuMs.direct.mock, 'direct') },
      gateway: { gateway_us: perCallUs(cpuMs.gateway.gateway, 'gateway'), mock_us: perCallUs(cpuMs.gateway.mock, 'gateway') },
    };

    const count = Math.max(500, Math.round(ctx.durationS * 400));
    ctx.progress(`${count} sequential SendMessage per target at c=1, alternated`);
    const seq = await alternate<Target, SequentialRun>(TARGETS, (t) => runSequential(urls[t], SEND, Math.round(count / 2)), 2);
    const c1 = {} as Record<Target, ReturnType<typeof summarizeLatency>>;
    for (const t of TARGETS) {
      const failures = seq[t].reduce((s, r) => s + r.failures, 0);
      if (failures > 0) problems.push(`${t} c=1: ${failures} failed calls`);
      c1[t] = summarizeLatency(seq[t].flatMap((r) => r.samplesMs));
    }
    const addedP50 = round(c1.gateway.p50Ms - c1.direct.p50Ms, 3);

    // A JSON-RPC error is an HTTP 200 too: the gateway's access log says every call was answered.
    const notAnswered = unanswered(gw.logPath);
    if (Object.keys(notAnswered).length > 0) problems.push(`gateway calls not answered, by reason: ${JSON.stringify(notAnswered)}`);

    const table = renderTable(
      'A2A SendMessage (instant agent)',
      ['target', `req/s c=${CONNECTIONS}`, 'p50 ms', 'p99 ms', 'c=1 p50 ms', 'c=1 p99 ms'],
      TARGETS.map((t) => [t, figures[t].req_per_s, figures[t].latency_ms.p50Ms, figures[t].latency_ms.p99Ms, c1[t].p50Ms, c1[t].p99Ms]),
    );
    const cpuTable = renderTable(
      `CPU per call at c=${CONNECTIONS} (µs, from /proc; 10 ms ticks)`,
      ['target', 'gateway µs/call', 'mock µs/call'],
      [
        ['direct', '-', cpuPerCall.direct.mock_us],
        ['gateway', cpuPerCall.gateway.gateway_us, cpuPerCall.gateway.mock_us],
      ],
    );
    return {
      figures: {
        send_message: { ...figures, ratio_gateway_over_direct: ratio, cpu_per_call: cpuPerCall },
        sequential_c1: { ...c1, added_p50_ms: addedP50 },
        gateway_unanswered: notAnswered,
      },
      targets: [
        checkTarget(`SendMessage throughput, gateway / direct (c=${CONNECTIONS})`, ratio, '>=', THROUGHPUT_RATIO_TARGET, 'x'),
        checkTarget('SendMessage added p50 at c=1', addedP50, '<=', ADDED_P50_TARGET_MS, 'ms'),
      ],
      tables: [table, cpuTable],
      problems,
      profileWindows: { 'gateway-a2a': { spansUs, requests: figures.gateway.ok } },
    };
  },
};
