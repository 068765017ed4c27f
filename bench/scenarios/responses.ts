import { alternate } from '../lib/alternation.js';
import { gatewayConfig } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { round, summarizeLatency } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { runFirstTokens, runSequential, sequentialFigures } from '../lib/sequential.js';
import { renderTable } from '../lib/table.js';

// The Responses API on every provider: a Responses request translated to an Anthropic-type
// mock against the same request passed through to an OpenAI-type mock's own Responses API,
// in the same run; what continuing a stored three-turn chain adds over a first turn; and the
// store's write, which happens after the answer's last byte, against time to first token.

const THROUGHPUT_RATIO_TARGET = 0.8;
const CHAIN_ADDED_P50_TARGET_MS = 1;
const CONNECTIONS = 32;
const SEQUENTIAL_PER_HALF = 1000;
const STREAMS_PER_HALF = 500;

type Way = 'pass_through' | 'translated';
const WAYS: readonly Way[] = ['pass_through', 'translated'];
const LABELS: Record<Way, string> = {
  pass_through: 'Responses -> openai (its own Responses API, passed through)',
  translated: 'Responses -> anthropic (translated through the canonical form)',
};
const ROUTE: Record<Way, string> = { pass_through: 'resp-openai', translated: 'resp-anthropic' };
const HEADERS = { 'content-type': 'application/json' };

const body = (model: string, extra: Record<string, unknown> = {}) => JSON.stringify({ model, input: 'hello', ...extra });

export const responses: Scenario = {
  name: 'responses',
  summary:
    'the Responses API translated to anthropic against passed through to openai (req/s at c=32), a stored 3-turn chain, TTFT with the store',
  estimateS: (d) => 10 + WAYS.length * d + 2 * (SEQUENTIAL_PER_HALF / 500) * 2 + 4 * (STREAMS_PER_HALF / 500),
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const config = gatewayConfig({
      providers: {
        oai: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 10_000 },
        anth: { type: 'anthropic', base_url: mock.baseUrl, timeout_ms: 10_000 },
      },
      routes: {
        'resp-openai': { candidates: [{ provider: 'oai' }] },
        'resp-anthropic': { candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
      },
    });
    const gw = await ctx.fleet.startGateway('gateway', config, { cpuProfileDir: ctx.cpuProfileDir });
    const problems: string[] = [];
    const url = `${gw.url}/v1/responses`;

    // A two-turn chain to continue: every measured third turn reads it from the store.
    const first = await postJson(url, body(ROUTE.translated));
    const second = first === null ? null : await postJson(url, body(ROUTE.translated, { previous_response_id: first }));
    if (second === null) return { figures: { url: gw.url }, targets: [], tables: [], problems: ['could not build the chain to continue'] };

    ctx.progress(`warm-up: ${ctx.warmupS} s per way at c=${CONNECTIONS}`);
    for (const way of WAYS)
      await runLoad({ url, body: body(ROUTE[way]), headers: HEADERS, connections: CONNECTIONS, durationS: ctx.warmupS });

    ctx.progress(`non-streamed, c=${CONNECTIONS}: ${WAYS.length} ways x 2 halves of ${ctx.durationS / 2} s`);
    const cpuMs: Record<Way, number> = { pass_through: 0, translated: 0 };
    const loadRuns = await alternate(WAYS, async (way) => {
      const { result, cpuMs: used } = await cpuUsedDuring([gw.pid], () =>
        runLoad({ url, body: body(ROUTE[way]), headers: HEADERS, connections: CONNECTIONS, durationS: ctx.durationS / 2 }),
      );
      cpuMs[way] += used[0] ?? 0;
      return result;
    });
    const load = Object.fromEntries(WAYS.map((w) => [w, loadFigures(loadRuns[w])])) as Record<Way, LoadFigures>;
    for (const way of WAYS) {
      const problem = failuresOf(LABELS[way], load[way]);
      if (problem !== null) problems.push(problem);
    }
    const cpuUs = (w: Way) => (load[w].ok > 0 ? round((cpuMs[w] * 1000) / load[w].ok, 1) : Number.NaN);

    ctx.progress(`one at a time: a first turn against a third turn continued from the store, ${SEQUENTIAL_PER_HALF} each per half`);
    const turns = { first_turn: body(ROUTE.translated), third_turn: body(ROUTE.translated, { previous_response_id: second }) };
    const seqRuns = await alternate(['first_turn', 'third_turn'] as const, (k) => runSequential(url, turns[k], SEQUENTIAL_PER_HALF / 2));
    const seq = { first_turn: sequentialFigures(seqRuns.first_turn), third_turn: sequentialFigures(seqRuns.third_turn) };
    for (const [k, f] of Object.entries(seq)) if (f.failures > 0) problems.push(`${k}: ${f.failures} failed requests`);
    const chainAdded = round(seq.third_turn.latency_ms.p50Ms - seq.first_turn.latency_ms.p50Ms, 3);

    ctx.progress(`streamed, one at a time: time to first token with the store and without it, ${STREAMS_PER_HALF} per half`);
    const streams = {
      stored: body(ROUTE.translated, { stream: true }),
      not_stored: body(ROUTE.translated, { stream: true, store: false }),
    };
    const isFirstToken = (event: string) => event.startsWith('event: response.output_text.delta');
    const ttftRuns = await alternate(['stored', 'not_stored'] as const, (k) =>
      runFirstTokens(gw.url, { path: '/v1/responses', headers: HEADERS, body: streams[k], isFirstToken }, STREAMS_PER_HALF / 2),
    );
    const ttft = Object.fromEntries(
      (['stored', 'not_stored'] as const).map((k) => [
        k,
        {
          failures: ttftRuns[k].reduce((s, r) => s + r.failures, 0),
          latency_ms: summarizeLatency(ttftRuns[k].flatMap((r) => r.samplesMs)),
        },
      ]),
    ) as Record<'stored' | 'not_stored', { failures: number; latency_ms: ReturnType<typeof summarizeLatency> }>;
    for (const [k, f] of Object.entries(ttft)) if (f.failures > 0) problems.push(`streamed ${k}: ${f.failures} failed streams`);

    const ratio = round(load.translated.req_per_s / load.pass_through.req_per_s, 3);
    const targets = [
      checkTarget(`throughput ratio, Responses translated / passed through, c=${CONNECTIONS}`, ratio, '>=', THROUGHPUT_RATIO_TARGET, ''),
      checkTarget('a stored three-turn chain, added p50 over a first turn', chainAdded, '<=', CHAIN_ADDED_P50_TARGET_MS, 'ms'),
    ];
    const tables = [
      renderTable(
        `non-streamed at c=${CONNECTIONS} (ms)`,
        ['way', 'req/s', 'cpu µs/req', 'p50', 'p99', '2xx', 'failed'],
        WAYS.map((w) => {
          const f = load[w];
          return [LABELS[w], f.req_per_s, cpuUs(w), f.latency_ms.p50Ms, f.latency_ms.p99Ms, f.ok, f.errors + f.non2xx];
        }),
      ),
      renderTable(
        'one at a time on one connection, to the last byte (ms)',
        ['turn', 'requests', 'p50', 'p90', 'p99'],
        Object.entries(seq).map(([k, f]) => [k, f.latency_ms.count, f.latency_ms.p50Ms, f.latency_ms.p90Ms, f.latency_ms.p99Ms]),
      ),
      renderTable(
        'streamed, time to first token, the store write after the last byte (ms)',
        ['stream', 'streams', 'p50', 'p90', 'p99'],
        Object.entries(ttft).map(([k, f]) => [k, f.latency_ms.count, f.latency_ms.p50Ms, f.latency_ms.p90Ms, f.latency_ms.p99Ms]),
      ),
    ];
    return {
      figures: {
        connections: CONNECTIONS,
        load,
        cpu_us_per_request: { pass_through: cpuUs('pass_through'), translated: cpuUs('translated') },
        throughput_ratio: ratio,
        sequential: seq,
        chain_added_p50_ms: chainAdded,
        ttft,
        ttft_store_added_p50_ms: round(ttft.stored.latency_ms.p50Ms - ttft.not_stored.latency_ms.p50Ms, 3),
      },
      targets,
      tables,
      problems,
    };
  },
};

/** A response's id, or null when it was not created. */
async function postJson(url: string, text: string): Promise<string | null> {
  const res = await fetch(url, { method: 'POST', headers: HEADERS, body: text });
  if (res.status !== 200) return null;
  const json = (await res.json()) as { id?: unknown };
  return typeof json.id === 'string' ? json.id : null;
}
