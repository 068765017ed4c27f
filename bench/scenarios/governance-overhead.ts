import { randomUUID } from 'node:crypto';
import { hashKey } from '../../src/governance/index.js';
import { alternate, roundsFor } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { round } from '../lib/percentiles.js';
import { cpuMsOf } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// Issue 9's targets: throughput with one key and generous limits, against the same gateway
// without keys, same run.
const TARGETS = { memory: 0.9, redis: 0.6 } as const;
const BENCH_KEY = 'sy-bench-key-not-a-secret';

type Key = 'open' | 'memory' | 'redis';
const LABELS: Record<Key, string> = { open: 'gateway without keys', memory: 'one key, memory store', redis: 'one key, redis store' };

/**
 * Issue 9: what authentication, the pre-check (a reservation) and the settle cost per
 * request. Three gateway processes over one mock: no keys, keys with the memory store,
 * keys with the redis store (the machine's Redis at 127.0.0.1:6379, a unique key prefix).
 */
export const governanceOverhead: Scenario = {
  name: 'governance-overhead',
  summary: 'req/s with one key and generous limits (memory and redis stores) vs without keys, c=32',
  estimateS: (d) => 6 + 3 * 1.5 + 3 * d,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const base = () =>
      gatewayConfig({
        providers: { bench: mockProvider(mock.baseUrl) },
        routes: { [BENCH_MODEL]: { candidates: [{ provider: 'bench' }] } },
      });
    const governed = (store: 'memory' | 'redis') => ({
      ...base(),
      teams: { bench: { rate_limit: { rpm: 100_000_000, tpm: 1_000_000_000 }, budget: { usd_per_month: 1_000_000 } } },
      keys: [{ id: 'bench', team: 'bench', sha256: hashKey(BENCH_KEY), rpm: 100_000_000 }],
      pricing: { models: { [BENCH_MODEL]: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
      governance:
        store === 'memory' ? { store } : { store, redis_url: 'redis://127.0.0.1:6379', key_prefix: `switchyard-bench-${randomUUID()}:` },
    });
    const gateways = {
      open: await ctx.fleet.startGateway('open', base(), { cpuProfileDir: ctx.cpuProfileDir }),
      memory: await ctx.fleet.startGateway('memory', governed('memory'), { cpuProfileDir: ctx.cpuProfileDir }),
      redis: await ctx.fleet.startGateway('redis', governed('redis'), { cpuProfileDir: ctx.cpuProfileDir }),
    };
    const keys = Object.keys(gateways) as Key[];
    const headers = { authorization: `Bearer ${BENCH_KEY}` };
    const spec = (k: Key, durationS: number) => ({
      url: `${gateways[k].url}/v1/chat/completions`,
      body: CHAT_BODY,
      connections: 32,
      durationS,
      headers,
    });

    ctx.progress(`warm-up: ${ctx.warmupS} s per gateway`);
    for (const k of keys) await runLoad(spec(k, ctx.warmupS));
    const rounds = roundsFor(ctx.durationS);
    ctx.progress(`c=32: ${keys.length} gateways x ${rounds} slices of ${ctx.durationS / rounds} s, order A-B-C-C-B-A-…`);
    const cpuMs: Record<Key, number> = { open: 0, memory: 0, redis: 0 };
    const runs = await alternate(
      keys,
      async (k) => {
        const before = cpuMsOf(gateways[k].pid);
        const run = await runLoad(spec(k, ctx.durationS / rounds));
        const after = cpuMsOf(gateways[k].pid);
        if (before !== null && after !== null) cpuMs[k] += after - before;
        return run;
      },
      rounds,
    );
    const load = Object.fromEntries(keys.map((k) => [k, loadFigures(runs[k])])) as Record<Key, LoadFigures>;
    const problems = keys.map((k) => failuresOf(LABELS[k], load[k])).filter((p): p is string => p !== null);
    const ratio = (k: Key) => round(load[k].req_per_s / load.open.req_per_s, 3);
    // The gateway's own CPU per request: steadier than req/s on a shared machine (see proc-cpu.ts).
    const served = (k: Key) => load[k].ok;
    const cpuUsPerRequest = (k: Key) => (served(k) > 0 ? round((cpuMs[k] * 1000) / served(k), 1) : null);
    const cpuRatio = (k: Key) => {
      const own = cpuUsPerRequest(k);
      const open = cpuUsPerRequest('open');
      return own === null || open === null || own === 0 ? null : round(open / own, 3);
    };
    const targets = [
      checkTarget('throughput ratio one key (memory store) / no keys, c=32', ratio('memory'), '>=', TARGETS.memory, ''),
      checkTarget('throughput ratio one key (redis store) / no keys, c=32', ratio('redis'), '>=', TARGETS.redis, ''),
    ];
    const rows = keys.map((k) => [
      LABELS[k],
      load[k].req_per_s,
      ratio(k),
      cpuUsPerRequest(k) ?? '-',
      cpuRatio(k) ?? '-',
      load[k].latency_ms.p50Ms,
      load[k].latency_ms.p99Ms,
      load[k].ok,
      load[k].errors + load[k].non2xx,
    ]);
    return {
      figures: {
        load,
        ratios: { memory: ratio('memory'), redis: ratio('redis') },
        cpu_us_per_request: { open: cpuUsPerRequest('open'), memory: cpuUsPerRequest('memory'), redis: cpuUsPerRequest('redis') },
        cpu_ratios: { memory: cpuRatio('memory'), redis: cpuRatio('redis') },
      },
      targets,
      tables: [
        renderTable(
          'governance at c=32 (ms; gateway CPU per request in µs, and no-keys CPU / this CPU)',
          ['gateway', 'req/s', '/no keys', 'cpu µs/req', 'cpu ratio', 'p50', 'p99', '2xx', 'failed'],
          rows,
        ),
      ],
      problems,
    };
  },
};
