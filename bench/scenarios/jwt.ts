import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { Pool } from 'undici';
import { hashKey } from '../../src/governance/index.js';
import { alternate, roundsFor } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { type LatencySummary, round, summarizeLatency } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// Callers who sign in with an issuer's JWT, against the same traffic from API keys, on one
// gateway over one mock: 1,000 principals' tokens (minted once, each request the next one)
// against 1,000 keys. Then a key rotation under a storm: the JWKS starts publishing a second
// key and 500 requests signed with it arrive at once; the storm must cost one JWKS fetch
// (single-flight), and its p99 is set beside that of 500 requests whose tokens are known.

const THROUGHPUT_RATIO_TARGET = 0.95;
const STORM_FETCHES_TARGET = 1;
const CONNECTIONS = 32;
const CALLERS = 1000;
const STORM = 500;
const TEAM = 'bench';
const ISSUER_ID = 'bench';
const AUDIENCE = 'switchyard';
/** Shorter than the time from the gateway's start-up fetch to the storm, so the storm may refetch once. */
const REFETCH_COOLDOWN_S = 2;
/** Longer than the scenario: no periodic refresh lands in it, so every fetch counted was the start or a kid's. */
const RECHECK_S = 3600;
const GENEROUS = { rpm: 100_000_000, tpm: 1_000_000_000 } as const;

type Caller = 'keys' | 'jwt';
const CALLER_KINDS: readonly Caller[] = ['keys', 'jwt'];
const LABELS: Record<Caller, string> = {
  keys: `${CALLERS} API keys (sha256), one team`,
  jwt: `${CALLERS} JWT principals (RS256), one issuer`,
};

type Burst = 'known' | 'fresh' | 'storm';
const BURST_LABELS: Record<Burst, string> = {
  known: 'tokens already verified (cached)',
  fresh: 'new tokens, known kid',
  storm: 'new tokens, new kid (refetch storm)',
};

export const jwt: Scenario = {
  name: 'jwt',
  summary: `req/s with ${CALLERS} JWT principals vs ${CALLERS} API keys at c=${CONNECTIONS}; a rotation storm of ${STORM} new-kid tokens`,
  estimateS: (d) => 12 + 2 * 1.5 + 2 * d,
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
    keys: apiKeys.map((k, i) => ({ id: `k${i}`, team: TEAM, sha256: hashKey(k), rpm: GENEROUS.rpm })),
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
        principals: { ...GENEROUS, budget_usd_per_month: 1_000_000 },
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

  ctx.progress(`bursts of ${STORM} requests at once: known tokens, new tokens of the known kid, then a new kid`);
  const freshTokens = await mintAll(first, jwks.issuer, CALLERS, STORM);
  const second = await signingKey('bench-2');
  const stormTokens = await mintAll(second, jwks.issuer, CALLERS + STORM, STORM);
  const pool = new Pool(gw.url, { connections: STORM, pipelining: 1, keepAliveTimeout: 30_000 });
  const bursts = {} as Record<Burst, BurstFigures>;
  try {
    // Unmeasured: opens the pool's connections, so no burst below pays for TCP set-up.
    await burst(pool, tokens.slice(0, STORM));
    bursts.known = await counted(jwks, () => burst(pool, tokens.slice(STORM, 2 * STORM)));
    bursts.fresh = await counted(jwks, () => burst(pool, freshTokens));
    jwks.publish([first, second]);
    // The storm's one refetch is due only once the cooldown since the last fetch is over.
    const sinceLastMs = performance.now() - jwks.lastFetchAt();
    if (sinceLastMs < REFETCH_COOLDOWN_S * 1000 + 250) await sleep(REFETCH_COOLDOWN_S * 1000 + 250 - sinceLastMs);
    bursts.storm = await counted(jwks, () => burst(pool, stormTokens));
  } finally {
    await pool.close().catch(() => undefined);
  }
  for (const b of Object.keys(bursts) as Burst[]) {
    const f = bursts[b];
    if (f.failures > 0) problems.push(`burst "${BURST_LABELS[b]}": ${f.failures} of ${STORM} failed [${codes(f.status_codes)}]`);
  }
  if (bursts.storm.jwks_fetches === 0 && bursts.storm.failures === 0)
    problems.push('the storm was served without fetching the JWKS: its tokens were not checked against the new key');
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
      `JWKS fetches a storm of ${STORM} new-kid requests caused (exactly 1)`,
      bursts.storm.jwks_fetches,
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
      `${STORM} requests at once on ${STORM} warm connections, to the last byte (ms)`,
      ['burst', 'p50', 'p90', 'p99', 'max', 'failed', 'JWKS fetches'],
      (Object.keys(bursts) as Burst[]).map((b) => {
        const f = bursts[b];
        return [
          BURST_LABELS[b],
          f.latency_ms.p50Ms,
          f.latency_ms.p90Ms,
          f.latency_ms.p99Ms,
          f.latency_ms.maxMs,
          f.failures,
          f.jwks_fetches,
        ];
      }),
    ),
    renderTable(
      'JWKS fetches',
      ['when', 'fetches'],
      [
        ['gateway start-up', fetchesAtStart],
        ['warm-up and throughput runs', fetchesDuringLoad],
        ['the storm', bursts.storm.jwks_fetches],
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
      jwks_fetches: { at_start: fetchesAtStart, during_load: fetchesDuringLoad, storm: bursts.storm.jwks_fetches },
      jwks_refetch_cooldown_s: REFETCH_COOLDOWN_S,
    },
    targets,
    tables,
    problems,
  };
}

interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

/** Tokens for principals p<from>..p<from+count-1>, all of one team, valid for an hour. */
function mintAll(key: SigningKey, issuer: string, from: number, count: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      new SignJWT({ team: TEAM })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setSubject(`p${from + i}`)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(key.privateKey),
    ),
  );
}

interface JwksServer {
  /** The issuer (this server's origin) and its JWKS URL. */
  readonly issuer: string;
  readonly url: string;
  fetches(): number;
  /** performance.now() of the last fetch, or -Infinity. */
  lastFetchAt(): number;
  publish(keys: readonly SigningKey[]): void;
  close(): Promise<void>;
}

/** The issuer's JWKS on 127.0.0.1, in the bench process, counting every GET of it. */
async function startJwksServer(keys: readonly SigningKey[]): Promise<JwksServer> {
  let body = jwksBody(keys);
  let fetches = 0;
  let lastFetchAt = Number.NEGATIVE_INFINITY;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/jwks') {
      res.writeHead(404).end();
      return;
    }
    fetches += 1;
    lastFetchAt = performance.now();
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: origin,
    url: `${origin}/jwks`,
    fetches: () => fetches,
    lastFetchAt: () => lastFetchAt,
    publish: (next) => {
      body = jwksBody(next);
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function jwksBody(keys: readonly SigningKey[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.publicJwk) });
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

interface BurstFigures {
  readonly requests: number;
  readonly failures: number;
  readonly status_codes: Readonly<Record<string, number>>;
  /** Send to the last byte, 2xx only. */
  readonly latency_ms: LatencySummary;
  readonly jwks_fetches: number;
}

/** Every token's request sent at once (one per pool connection), each timed from send to its last byte. */
async function burst(pool: Pool, tokens: readonly string[]): Promise<Omit<BurstFigures, 'jwks_fetches'>> {
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
  return {
    requests: tokens.length,
    failures: outcomes.filter((ok) => !ok).length,
    status_codes: statusCodes,
    latency_ms: summarizeLatency(samplesMs),
  };
}

/** A burst, with the JWKS fetches made while it ran (and a moment after, for a fetch it set off late). */
async function counted(jwks: JwksServer, run: () => Promise<Omit<BurstFigures, 'jwks_fetches'>>): Promise<BurstFigures> {
  const before = jwks.fetches();
  const figures = await run();
  await sleep(250);
  return { ...figures, jwks_fetches: jwks.fetches() - before };
}

function codes(statusCodes: Readonly<Record<string, number>>): string {
  return Object.entries(statusCodes)
    .map(([c, n]) => `${c}x${n}`)
    .join(' ');
}
