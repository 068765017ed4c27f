import { alternate, roundsFor } from '../lib/alternation.js';
import { gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { ANSWER, lastUpstreamMasked, PIECES, type StreamShape, sayBody, streamShape } from '../lib/guardrail-answer.js';
import { scanLargePrompt } from '../lib/guardrail-scan.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { type LatencySummary, round, summarizeLatency } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { runFirstTokens } from '../lib/sequential.js';
import { renderTable } from '../lib/table.js';

// What guardrails cost a streamed answer, against the same route without them, on one gateway
// over one mock: pii masking of the prompt with restore, plus a pii mask on the answer; and a
// blocking regex on the answer judged per window of text. The mock says back exactly what it
// is told (its say: trigger), so the masked prompt's placeholders come back in the stream and
// the gateway restores them (guardrail-answer.ts). Then a 1 MB prompt through every built-in
// guardrail, timed in this process (guardrail-scan.ts).

const THROUGHPUT_RATIO_TARGET = 0.85;
const ADDED_TTFT_P50_TARGET_MS = 1;
const SCAN_TARGET_MS = 20;
const CONNECTIONS = 32;
const STREAMS_PER_HALF = 500;
const SCAN_CHARS = 1_000_000;
const SCAN_RUNS = 20;
const SCAN_WARMUP = 3;
const WINDOW_CHARS = 400;
/**
 * Milliseconds between the paced mock's deltas. Back to back, a stream's deltas reach the
 * gateway together and time to first token measures only its work; paced, it also shows
 * how much of the answer a guardrail holds back before the client's first token.
 */
const PACE_MS = 2;
const PACED_STREAMS_PER_HALF = 25;
const REGEX_RULES = ['(?i)ignore (all|previous) instructions', 'sk-[A-Za-z0-9]{20,}', '(?i)\\bconfidential\\b'];

type Way = 'plain' | 'masked' | 'window';
const WAYS: readonly Way[] = ['plain', 'masked', 'window'];
const LABELS: Record<Way, string> = {
  plain: 'B: no guardrails',
  masked: 'A: pii mask+restore in, pii mask out',
  window: `C: blocking regex out, window ${WINDOW_CHARS}`,
};
const ATTACHED: Record<Way, Record<string, string[]> | null> = {
  plain: null,
  masked: { input: ['pii_in'], output: ['pii_out'] },
  window: { output: ['deny_window'] },
};
const HEADERS = { 'content-type': 'application/json' };
const isFirstToken = (event: string) => /"content":"[^"]/.test(event);
/** Each way's route on the mock as it is, and on the same mock paced. */
const routeName = (way: Way, paced: boolean) => (paced ? `${way}-paced` : way);

type Ttft = { readonly failures: number; readonly latency_ms: LatencySummary };

export const guardrails: Scenario = {
  name: 'guardrails',
  summary: `streamed answers through pii mask+restore and a windowed regex block against no guardrails (req/s at c=${CONNECTIONS}, TTFT); a 1 MB prompt through every built-in`,
  estimateS: (d) =>
    8 + WAYS.length * (1.5 + d + 2 * (STREAMS_PER_HALF / 250) + (2 * PACED_STREAMS_PER_HALF * (PIECES.length + 2) * PACE_MS * 1.5) / 1000),
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    ctx.progress(`a ${SCAN_CHARS / 1e6} MB prompt through pii, secrets and regex in-process: ${SCAN_RUNS} runs after ${SCAN_WARMUP}`);
    const scan = scanLargePrompt(SCAN_CHARS, SCAN_RUNS, SCAN_WARMUP);

    const mock = await ctx.fleet.startMock('bench');
    const routeOf = (way: Way, paced: boolean) => {
      const guardrails = ATTACHED[way];
      return { candidates: [{ provider: paced ? 'paced' : 'bench' }], ...(guardrails === null ? {} : { guardrails }) };
    };
    const config = {
      ...gatewayConfig({
        providers: {
          bench: mockProvider(mock.baseUrl),
          // The same mock, asked to wait between deltas as a model does while it writes.
          paced: { ...mockProvider(mock.baseUrl), headers: { 'x-mock-chunk-delay-ms': String(PACE_MS) } },
        },
        routes: Object.fromEntries(WAYS.flatMap((w) => [false, true].map((paced) => [routeName(w, paced), routeOf(w, paced)] as const))),
      }),
      guardrails: {
        pii_in: { type: 'pii', action: 'mask', restore: true },
        pii_out: { type: 'pii', action: 'mask' },
        deny_window: { type: 'regex', patterns: REGEX_RULES, action: 'block', stream: 'window', window_chars: WINDOW_CHARS },
      },
    };
    const gw = await ctx.fleet.startGateway('gateway', config, { cpuProfileDir: ctx.cpuProfileDir });
    const url = `${gw.url}/v1/chat/completions`;
    const problems: string[] = [];

    // Once, before anything is measured: every route answers the prompt's text with the
    // originals in it, and the masked one sent the mock placeholders instead.
    const shapes = {} as Record<Way, StreamShape>;
    for (const way of WAYS) {
      const shape = await streamShape(url, sayBody(routeName(way, false)));
      if (typeof shape === 'string') problems.push(`${LABELS[way]}: ${shape}`);
      else shapes[way] = shape;
      const upstream = way === 'masked' ? await lastUpstreamMasked(new URL(mock.baseUrl).origin) : null;
      if (upstream !== null) problems.push(`${LABELS[way]}: ${upstream}`);
    }
    if (problems.length > 0) return { figures: { url: gw.url }, targets: [], tables: [], problems };

    const spec = (way: Way, durationS: number) => ({
      url,
      body: sayBody(routeName(way, false)),
      headers: HEADERS,
      connections: CONNECTIONS,
      durationS,
    });
    ctx.progress(`warm-up: ${ctx.warmupS} s per route at c=${CONNECTIONS}`);
    for (const way of WAYS) await runLoad(spec(way, ctx.warmupS));
    const rounds = roundsFor(ctx.durationS);
    ctx.progress(
      `streamed, c=${CONNECTIONS}: ${WAYS.length} routes x ${rounds} slices of ${ctx.durationS / rounds} s, order A-B-C-C-B-A-…`,
    );
    const cpuMs: Record<Way, number> = { plain: 0, masked: 0, window: 0 };
    const loadRuns = await alternate(
      WAYS,
      async (way) => {
        const { result, cpuMs: used } = await cpuUsedDuring([gw.pid], () => runLoad(spec(way, ctx.durationS / rounds)));
        cpuMs[way] += used[0] ?? 0;
        return result;
      },
      rounds,
    );
    const load = Object.fromEntries(WAYS.map((w) => [w, loadFigures(loadRuns[w])])) as Record<Way, LoadFigures>;
    for (const way of WAYS) {
      const problem = failuresOf(LABELS[way], load[way]);
      if (problem !== null) problems.push(problem);
    }
    const cpuUs = (w: Way) => (load[w].ok > 0 ? round((cpuMs[w] * 1000) / load[w].ok, 1) : Number.NaN);

    const firstTokens = async (paced: boolean, perHalf: number): Promise<Record<Way, Ttft>> => {
      const runs = await alternate(WAYS, (way) =>
        runFirstTokens(
          gw.url,
          { path: '/v1/chat/completions', headers: HEADERS, body: sayBody(routeName(way, paced)), isFirstToken },
          perHalf,
        ),
      );
      const out = {} as Record<Way, Ttft>;
      for (const w of WAYS) {
        const failures = runs[w].reduce((s, r) => s + r.failures, 0);
        if (failures > 0) problems.push(`${LABELS[w]}, ${paced ? 'paced ' : ''}time to first token: ${failures} failed streams`);
        out[w] = { failures, latency_ms: summarizeLatency(runs[w].flatMap((r) => r.samplesMs)) };
      }
      return out;
    };
    ctx.progress(`streamed, one at a time: time to first token, ${STREAMS_PER_HALF} streams per route and half`);
    const ttft = await firstTokens(false, STREAMS_PER_HALF);
    ctx.progress(`paced (${PACE_MS} ms between deltas), one at a time: time to first token, ${PACED_STREAMS_PER_HALF} per route and half`);
    const pacedTtft = await firstTokens(true, PACED_STREAMS_PER_HALF);

    const ratio = (w: Way) => round(load[w].req_per_s / load.plain.req_per_s, 3);
    const added = (t: Record<Way, Ttft>, w: Way) => round(t[w].latency_ms.p50Ms - t.plain.latency_ms.p50Ms, 3);
    const targets = [
      checkTarget(
        `throughput ratio, ${LABELS.masked} / no guardrails, streamed, c=${CONNECTIONS}`,
        ratio('masked'),
        '>=',
        THROUGHPUT_RATIO_TARGET,
        '',
      ),
      checkTarget(`added time to first token p50: ${LABELS.masked}`, added(ttft, 'masked'), '<=', ADDED_TTFT_P50_TARGET_MS, 'ms'),
      checkTarget(
        `throughput ratio, ${LABELS.window} / no guardrails, streamed, c=${CONNECTIONS}`,
        ratio('window'),
        '>=',
        THROUGHPUT_RATIO_TARGET,
        '',
      ),
      checkTarget(
        `a ${SCAN_CHARS / 1e6} MB prompt through pii, secrets and regex, in-process, p50 of ${SCAN_RUNS}`,
        scan.total_ms.p50,
        '<=',
        SCAN_TARGET_MS,
        'ms',
      ),
    ];
    const tables = [
      renderTable(
        `streamed chat completions (${ANSWER.length} characters in ${PIECES.length} deltas from the mock) at c=${CONNECTIONS}, to the last byte (ms; the gateway's CPU per request in µs)`,
        ['route', 'req/s', '/B', 'cpu µs/req', 'p50', 'p99', '2xx', 'failed'],
        WAYS.map((w) => {
          const f = load[w];
          return [LABELS[w], f.req_per_s, ratio(w), cpuUs(w), f.latency_ms.p50Ms, f.latency_ms.p99Ms, f.ok, f.errors + f.non2xx];
        }),
      ),
      renderTable(
        'streamed, time to first token, one stream at a time (ms); the content deltas the client got of one answer',
        ['route', 'streams', 'p50', 'p90', 'p99', '+p50 over B', 'deltas', 'first delta chars'],
        WAYS.map((w) => {
          const l = ttft[w].latency_ms;
          return [LABELS[w], l.count, l.p50Ms, l.p90Ms, l.p99Ms, added(ttft, w), shapes[w].deltas, shapes[w].firstDeltaChars];
        }),
      ),
      renderTable(
        `streamed from the paced mock (${PACE_MS} ms before each delta), time to first token (ms; held: the added p50 in deltas)`,
        ['route', 'streams', 'p50', 'p90', 'p99', '+p50 over B', 'held'],
        WAYS.map((w) => {
          const l = pacedTtft[w].latency_ms;
          return [LABELS[w], l.count, l.p50Ms, l.p90Ms, l.p99Ms, added(pacedTtft, w), round(added(pacedTtft, w) / PACE_MS, 1)];
        }),
      ),
      renderTable(
        `a ${SCAN_CHARS / 1e6} MB prompt through every built-in guardrail, in-process (ms, ${SCAN_RUNS} runs after ${SCAN_WARMUP})`,
        ['p50', 'min', 'max', ...Object.keys(scan.per_guardrail_p50_ms).map((g) => `${g} p50`), 'blocked'],
        [[scan.total_ms.p50, scan.total_ms.min, scan.total_ms.max, ...Object.values(scan.per_guardrail_p50_ms), scan.blocked ?? 'no']],
      ),
    ];
    return {
      figures: {
        connections: CONNECTIONS,
        answer_chars: ANSWER.length,
        answer_deltas: PIECES.length,
        window_chars: WINDOW_CHARS,
        load,
        cpu_us_per_request: Object.fromEntries(WAYS.map((w) => [w, cpuUs(w)])),
        throughput_ratio: { masked: ratio('masked'), window: ratio('window') },
        ttft,
        added_ttft_p50_ms: { masked: added(ttft, 'masked'), window: added(ttft, 'window') },
        stream_shapes: shapes,
        paced: {
          chunk_delay_ms: PACE_MS,
          ttft: pacedTtft,
          added_ttft_p50_ms: { masked: added(pacedTtft, 'masked'), window: added(pacedTtft, 'window') },
        },
        large_prompt: scan,
      },
      targets,
      tables,
      problems,
    };
  },
};
