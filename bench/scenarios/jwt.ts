import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { hashKey } from '../../src/governance/index.js';
import { alternate, roundsFor } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { type JwksServer, mintToken, type SigningKey, signingKey, startJwksServer } from '../lib/jwt-issuer.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { type LatencySummary, round, summarizeLatency } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// Callers who sign in with an issuer's JWT, against the same traffic from API keys, on one
// gateway over one mock: 1,000 principals' tokens (minted once, each request the next one)
// against 1,000 keys. Then key rotations under a storm: the JWKS starts publishing another
// key and 500 requests signed with it arrive at once; each storm must cost one JWKS fetch
// (single-flight), and its p99 is set beside that of 500 requests whose tokens are known.

const THROUGHPUT_RATIO_TARGET = 0.95;
const STORM_FETCHES_TARGET = 1;
const CONNECTIONS = 32;
const CALLERS = 1000;
const STORM = 500;
/** Rounds of bursts (known, fresh, storm; then reversed): one burst of each is too noisy on a shared machine. */
const BURST_ROUNDS = 3;
/** Unmeasured bursts first: the first bursts after the steady load ran slower than later ones, whatever their tokens. */
const WARM_BURSTS = 2;
const TEAM = 'bench';
const ISSUER_ID = 'bench';
const AUDIENCE = 'switchyard';
/** Shorter than the time from the gateway's start-up fetch to the first storm, so each storm may refetch once. */
const REFETCH_COOLDOWN_S = 2;
/** Longer than the scenario: no periodic refresh lands in it, so every fetch counted was the start or a kid's. */
const RECHECK_S = 3600;
const GENEROUS = { rpm: 100_000_000, tpm: 1_000_000_000 } as const;
/** A key and a principal carry the same limits, so both count the same windows and budget per request. */
const CALLER_LIMITS = { ...GENEROUS, budget_usd_per_month: 1_000_000 } as const;

type Caller = 'keys' | 'jwt';
const CALLER_KINDS: readonly Caller[] = ['keys', 'jwt'];
const LABELS: Record<Caller, string> = {
  keys: `${CALLERS} API keys (sha256), one team`,
  jwt: `${CALLERS} JWT principals (RS256), one issuer`,
};

type Burst = 'known' | 'fresh' | 'storm';
const BURSTS: readonly Burst[] = ['known', 'fresh', 'storm'];
const BURST_LABELS: Record<Burst, string> = {
  known: 'tokens already verified (cached)',
  fresh: 'new tokens, known kid',
  storm: 'new tokens, a new kid (refetch storm)',
};

export const jwt: Scenario = {
  name: 'jwt',
  summary: `req/s with ${CALLERS} JWT principals vs ${CALLERS} API keys at c=${CONNECTIONS}; key rotations under storms of ${STORM} new-kid tokens`,
  estimateS: (d) => 20 + 2 * 1.5 + 2 * d + BURST_ROUNDS * (REFETCH_COOLDOWN_S + 2),
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const first = await signingKey('bench-1');
    const jwks = await startJwksServer([first]);
    try {
      return await measure(ctx, jwks, first);
    } finally {
      await jwks.close();
    }
  },
};

async function measure(ctx: ScenarioContext, jwks: JwksServer, first: SigningKey): Promise<ScenarioReport> {
  const problems: string[] = [];
  ctx.progress(`minting ${CALLERS} tokens (sub p0..p${CALLERS - 1})`);
  const tokens = await mintAll(first, jwks.issuer, 0, CALLERS);
  const apiKeys = Array.from({ length: CALLERS }, (_, i) => `sy-bench-jwt-key-${i}-not-a-secret`);

  const mock = await ctx.fleet.startMock('bench');
  const config = {
    ...gatewayConfig({
      providers: { bench: mockProvider(mock.baseUrl) },
      routes: { [BENCH_MODEL]: { candidates: [{ provider: 'bench' }] } },
      pricing: { [BENCH_MODEL]: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } },
    }),
    teams: { [TEAM]: { rate_limit: GENEROUS, budget: { usd_per_month: 1_000_000 } } },
    keys: apiKeys.map((k, i) => ({ id: `k${i}`, team: TEAM, sha256: hashKey(k), ...CALLER_LIMITS })),
    governance: { store: 'memory' },
    auth: {
      jwt: {
        issuers: [
          {
            id: ISSUER_ID,
            issuer: jwks.issuer,
            audiences: [AUDIENCE],
            jwks: { url: jwks.url },
            jwks_recheck_s: RECHECK_S,
            jwks_refetch_cooldown_s: REFETCH_COOLDOWN_S,
            algorithms: ['RS256'],
            team: { claim: 'team' },
            principal: { claim: 'sub' },
          },
        ],
        principals: CALLER_LIMITS,
      },
    },
  };
  const gw = await ctx.fleet.startGateway('gateway', config, { cpuProfileDir: ctx.cpuProfileDir });
  const url = `${gw.url}/v1/chat/completions`;

  for (const [label, credential] of [
    ['an API key', apiKeys[0] as string],
    ['a JWT', tokens[0] as string],
  ] as const) {
    const refused = await smoke(url, credential);
    if (refused !== null) problems.push(`${label}: ${refused}`);
  }
  // Read after the smoke requests: a JWT was served, so the start-up fetch is done.
  const fetchesAtStart = jwks.fetches();
  if (problems.length > 0) return { figures: { jwks_fetches_at_start: fetchesAtStart }, targets: [], tables: [], problems };

  // Each request takes the next credential of its kind, across all connections: every principal and key is used in turn.
  const nextOf = (list: readonly string[]) => {
    let i = 0;
    return () => ({ authorization: `Bearer ${list[i++ % list.length]}` });
  };
  const headersFor: Record<Caller, () => Readonly<Record<string, string>>> = { keys: nextOf(apiKeys), jwt: nextOf(tokens) };
  const spec = (c: Caller, durationS: number) => ({ url, body: CHAT_BODY, connections: CONNECTIONS, durationS, headersFor: headersFor[c] });

  ctx.progress(`warm-up: ${ctx.warmupS} s per caller kind (every token verified once)`);
  for (const c of CALLER_KINDS) await runLoad(spec(c, ctx.warmupS));
  const rounds = roundsFor(ctx.durationS);
  ctx.progress(`c=${CONNECTIONS}: keys and JWTs x ${rounds} slices of ${ctx.durationS / rounds} s, order A-B-B-A-…`);
  const cpuMs: Record<Caller, number> = { keys: 0, jwt: 0 };
  const runs = await alternate(
    CALLER_KINDS,
    async (c) => {
      const { result, cpuMs: used } = await cpuUsedDuring([gw.pid], () => runLoad(spec(c, ctx.durationS / rounds)));
      cpuMs[c] += used[0] ?? 0;
      return result;
    },
    rounds,
  );
  const load = Object.fromEntries(CALLER_KINDS.map((c) => [c, loadFigures(runs[c])])) as Record<Caller, LoadFigures>;
  for (const c of CALLER_KINDS) {
    const problem = failuresOf(LABELS[c], load[c]);
    if (problem !== null) problems.push(problem);
  }
  const fetchesDuringLoad = jwks.fetches() - fetchesAtStart;
  const cpuUs = (c: Caller) => (load[c].ok > 0 ? round((cpuMs[c] * 1000) / load[c].ok, 1) : Number.NaN);
  const ratio = round(load.jwt.req_per_s / load.keys.req_per_s, 3);
  const cpuRatio = round(cpuUs('keys') / cpuUs('jwt'), 3);

  const bursts = await measureBursts(ctx, gw.url, jwks, first, tokens.slice(STORM, 2 * STORM));
  for (const b of BURSTS) {
    const f = bursts[b];
    if (f.failures > 0) problems.push(`bursts "${BURST_LABELS[b]}": ${f.failures} of ${f.requests} failed [${codes(f.status_codes)}]`);
  }
  bursts.storm.jwks_fetches_per_round.forEach((n, i) => {
    if (n === 0) problems.push(`storm ${i + 1} was served without a JWKS fetch: its tokens were never checked against the new key`);
  });
  const stormFetchesMost = Math.max(...bursts.storm.jwks_fetches_per_round);
  const stormP99Ratio = round(bursts.storm.latency_ms.p99Ms / bursts.known.latency_ms.p99Ms, 2);

  const targets = [
    checkTarget(
      `throughput ratio, ${CALLERS} JWT principals / ${CALLERS} API keys, c=${CONNECTIONS}`,
      ratio,
      '>=',
      THROUGHPUT_RATIO_TARGET,
      '',
    ),
    checkTarget(
      `JWKS fetches per storm of ${STORM} new-kid requests, the most of ${BURST_ROUNDS} (exactly 1)`,
      stormFetchesMost,
      '<=',
      STORM_FETCHES_TARGET,
      '',
    ),
  ];
  const tables = [
    renderTable(
      `chat completions at c=${CONNECTIONS}, one gateway (ms; the gateway's CPU per request in µs, keys CPU / this CPU)`,
      ['callers', 'req/s', '/keys', 'cpu µs/req', 'cpu ratio', 'p50', 'p99', '2xx', 'failed'],
      CALLER_KINDS.map((c) => [
        LABELS[c],
        load[c].req_per_s,
        round(load[c].req_per_s / load.keys.req_per_s, 3),
        cpuUs(c),
        c === 'keys' ? 1 : cpuRatio,
        load[c].latency_ms.p50Ms,
        load[c].latency_ms.p99Ms,
        load[c].ok,
        load[c].errors + load[c].non2xx,
      ]),
    ),
    renderTable(
      `${STORM} requests at once on ${STORM} warm connections, ${BURST_ROUNDS} bursts each, to the last byte (ms)`,
      ['bursts', 'p50', 'p90', 'p99', 'max', 'p99 of each', 'failed', 'JWKS fetches of each'],
      BURSTS.map((b) => {
        const f = bursts[b];
        return [
          BURST_LABELS[b],
          f.latency_ms.p50Ms,
          f.latency_ms.p90Ms,
          f.latency_ms.p99Ms,
          f.latency_ms.maxMs,
          f.p99_ms_per_round.join(' / '),
          f.failures,
          f.jwks_fetches_per_round.join(' / '),
        ];
      }),
    ),
    renderTable(
      'JWKS fetches',
      ['when', 'fetches'],
      [
        ['gateway start-up', fetchesAtStart],
        ['warm-up and throughput runs', fetchesDuringLoad],
        [
          `bursts of known and fresh tokens (${2 * BURST_ROUNDS})`,
          sum(bursts.known.jwks_fetches_per_round) + sum(bursts.fresh.jwks_fetches_per_round),
        ],
        [`storms (${BURST_ROUNDS})`, sum(bursts.storm.jwks_fetches_per_round)],
      ],
    ),
  ];
  return {
    figures: {
      connections: CONNECTIONS,
      callers: CALLERS,
      load,
      cpu_us_per_request: { keys: cpuUs('keys'), jwt: cpuUs('jwt') },
      throughput_ratio: ratio,
      cpu_ratio: cpuRatio,
      bursts,
      storm_p99_over_known_p99: stormP99Ratio,
      storm_added_p99_ms: round(bursts.storm.latency_ms.p99Ms - bursts.known.latency_ms.p99Ms, 3),
      jwks_fetches: { at_start: fetchesAtStart, during_load: fetchesDuringLoad, per_storm: bursts.storm.jwks_fetches_per_round },
      jwks_refetch_cooldown_s: REFETCH_COOLDOWN_S,
    },
    targets,
    tables,
    problems,
  };
}

interface BurstRun {
  readonly requests: number;
  readonly failures: number;
  readonly status_codes: Readonly<Record<string, number>>;
  /** Send to the last byte, 2xx only. */
  readonly samplesMs: readonly number[];
  readonly jwks_fetches: number;
}

interface BurstFigures {
  readonly requests: number;
  readonly failures: number;
  readonly status_codes: Readonly<Record<string, number>>;
  readonly latency_ms: LatencySummary;
  readonly p99_ms_per_round: readonly number[];
  readonly jwks_fetches_per_round: readonly number[];
}

/**
 * Rounds of three bursts of STORM requests at once, A-B-C then C-B-A: tokens the gateway has
 * verified, new tokens signed with a key it knows, and new tokens signed with a key it has not
 * seen, published just before (each storm its own new key, the earlier ones still published).
 */
async function measureBursts(
  ctx: ScenarioContext,
  origin: string,
  jwks: JwksServer,
  first: SigningKey,
  known: readonly string[],
): Promise<Record<Burst, BurstFigures>> {
  ctx.progress(`minting ${BURST_ROUNDS} x ${STORM} tokens of the known kid and ${BURST_ROUNDS} x ${STORM} of new kids`);
  const fresh: string[][] = [];
  const storms: Array<{ key: SigningKey; tokens: string[] }> = [];
  for (let r = 0; r < BURST_ROUNDS; r++) {
    fresh.push(await mintAll(first, jwks.issuer, CALLERS + 2 * r * STORM, STORM));
    const key = await signingKey(`bench-${r + 2}`);
    storms.push({ key, tokens: await mintAll(key, jwks.issuer, CALLERS + (2 * r + 1) * STORM, STORM) });
  }
  const published = [first];
  ctx.progress(`bursts of ${STORM} requests at once: ${BURSTS.join(', ')} x ${BURST_ROUNDS} rounds, order A-B-C-C-B-A-…`);
  const pool = new Pool(origin, { connections: STORM, pipelining: 1, keepAliveTimeout: 30_000 });
  try {
    // Unmeasured: opens the pool's connections, so no burst below pays for TCP set-up.
    for (let i = 0; i < WARM_BURSTS; i++) await burst(pool, known);
    const runs = await alternate(
      BURSTS,
      async (b, round) => {
        if (b === 'known') return counted(jwks, () => burst(pool, known));
        if (b === 'fresh') return counted(jwks, () => burst(pool, fresh[round] as string[]));
        const storm = storms[round] as { key: SigningKey; tokens: string[] };
        published.push(storm.key);
        jwks.publish(published);
        // The storm's one refetch is allowed only once the cooldown since the last fetch is over.
        const waitMs = jwks.lastFetchAt() + REFETCH_COOLDOWN_S * 1000 + 250 - performance.now();
        if (waitMs > 0) await sleep(waitMs);
        return counted(jwks, () => burst(pool, storm.tokens));
      },
      BURST_ROUNDS,
    );
    return Object.fromEntries(BURSTS.map((b) => [b, burstFigures(runs[b])])) as Record<Burst, BurstFigures>;
  } finally {
    await pool.close().catch(() => undefined);
  }
}

function burstFigures(runs: readonly BurstRun[]): BurstFigures {
  const statusCodes: Record<string, number> = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.status_codes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    requests: sum(runs.map((r) => r.requests)),
    failures: sum(runs.map((r) => r.failures)),
    status_codes: statusCodes,
    latency_ms: summarizeLatency(runs.flatMap((r) => r.samplesMs)),
    p99_ms_per_round: runs.map((r) => summarizeLatency(r.samplesMs).p99Ms),
    jwks_fetches_per_round: runs.map((r) => r.jwks_fetches),
  };
}

/** Tokens for principals p<from>..p<from+count-1>, all of one team. */
function mintAll(key: SigningKey, issuer: string, from: number, count: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) => mintToken(key, { iss: issuer, aud: AUDIENCE, sub: `p${from + i}`, team: TEAM })),
  );
}

/**
 * A refusal's status and body, or null when the credential was served. A 503 is retried for a
 * while: the gateway may be listening before its start-up JWKS fetch has answered.
 */
async function smoke(url: string, credential: string): Promise<string | null> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
      body: CHAT_BODY,
    });
    const text = await res.text();
    if (res.status === 200) return null;
    if (res.status !== 503 || attempt >= 50) return `the smoke request answered ${res.status}: ${text.slice(0, 300)}`;
    await sleep(100);
  }
}

/** Every token's request sent at once (one per pool connection), each timed from send to its last byte. */
async function burst(pool: Pool, tokens: readonly string[]): Promise<Omit<BurstRun, 'jwks_fetches'>> {
  const statusCodes: Record<string, number> = {};
  const samplesMs: number[] = [];
  const outcomes = await Promise.all(
    tokens.map(async (token) => {
      const t0 = process.hrtime.bigint();
      try {
        const res = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: CHAT_BODY,
        });
        await res.body.arrayBuffer();
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        statusCodes[res.statusCode] = (statusCodes[res.statusCode] ?? 0) + 1;
        if (res.statusCode !== 200) return false;
        samplesMs.push(ms);
        return true;
      } catch {
        statusCodes.error = (statusCodes.error ?? 0) + 1;
        return false;
      }
    }),
  );
  return { requests: tokens.length, failures: outcomes.filter((ok) => !ok).length, status_codes: statusCodes, samplesMs };
}

/** A burst, with the JWKS fetches made while it ran (and a moment after, for a fetch it set off late). */
async function counted(jwks: JwksServer, run: () => Promise<Omit<BurstRun, 'jwks_fetches'>>): Promise<BurstRun> {
  const before = jwks.fetches();
  const figures = await run();
  await sleep(250);
  return { ...figures, jwks_fetches: jwks.fetches() - before };
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function codes(statusCodes: Readonly<Record<string, number>>): string {
  return Object.entries(statusCodes)
    .map(([c, n]) => `${c}x${n}`)
    .join(' ');
}
