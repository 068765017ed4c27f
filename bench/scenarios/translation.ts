import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { alternate } from '../lib/alternation.js';
import { gatewayConfig } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { round, summarizeLatency } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport, type TargetCheck } from '../lib/scenario.js';
import { runFirstTokens } from '../lib/sequential.js';
import { renderTable } from '../lib/table.js';

// The translation targets (ADR 0011): translation costs little next to a pass-through in the same run.
const THROUGHPUT_RATIO_TARGET = 0.8;
const ADDED_TTFT_P50_TARGET_MS = 1;
const CONNECTIONS = 32;
const STREAMS_PER_HALF = 750;

/**
 * Ways through one gateway to the mocks. Each OpenAI <-> Anthropic way is paired with the
 * pass-through that reaches the SAME upstream endpoint, so the pair differs only in the
 * gateway's work (the mock's chat and messages endpoints do not cost the same). The cloud
 * types (gemini, bedrock with its SigV4 signing, vertex with its bearer token) have no
 * pass-through of their own: each is paired with the client protocol's pass-through, so its
 * req/s ratio also holds the difference of the mock's endpoints, and the CPU ratio (the
 * gateway's own CPU per request) is the cleaner figure of what translating costs.
 */
type Way =
  | 'openai_pass'
  | 'anthropic_to_openai'
  | 'anthropic_pass'
  | 'openai_to_anthropic'
  | 'openai_to_gemini'
  | 'openai_to_bedrock'
  | 'openai_to_vertex_gemini'
  | 'anthropic_to_vertex_claude';
const WAYS: readonly Way[] = [
  'openai_pass',
  'anthropic_to_openai',
  'anthropic_pass',
  'openai_to_anthropic',
  'openai_to_gemini',
  'openai_to_bedrock',
  'openai_to_vertex_gemini',
  'anthropic_to_vertex_claude',
];
const LABELS: Record<Way, string> = {
  openai_pass: 'OpenAI client -> openai (pass-through)',
  anthropic_to_openai: 'Anthropic client -> openai (translated)',
  anthropic_pass: 'Anthropic client -> anthropic (pass-through)',
  openai_to_anthropic: 'OpenAI client -> anthropic (translated)',
  openai_to_gemini: 'OpenAI client -> gemini (translated)',
  openai_to_bedrock: 'OpenAI client -> bedrock (translated, SigV4-signed)',
  openai_to_vertex_gemini: 'OpenAI client -> vertex Gemini (translated, bearer token)',
  anthropic_to_vertex_claude: 'Anthropic client -> vertex Claude (rawPredict, body rewritten)',
};
const PAIRS: readonly { readonly translated: Way; readonly passThrough: Way }[] = [
  { translated: 'anthropic_to_openai', passThrough: 'openai_pass' },
  { translated: 'openai_to_anthropic', passThrough: 'anthropic_pass' },
  { translated: 'openai_to_gemini', passThrough: 'openai_pass' },
  { translated: 'openai_to_bedrock', passThrough: 'openai_pass' },
  { translated: 'openai_to_vertex_gemini', passThrough: 'openai_pass' },
  { translated: 'anthropic_to_vertex_claude', passThrough: 'anthropic_pass' },
];

/** The key pair the bench's Bedrock mock checks signatures with (not a real key). */
const BENCH_AWS = { accessKeyId: 'AKIABENCHMOCK0000001', secretAccessKey: 'bench/mock/secret/key/0000000000000000000' };

interface Request {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  body(stream: boolean): string;
  /** Whether one SSE event carries the first piece of answer text. */
  isFirstToken(event: string): boolean;
}

const MESSAGES = [{ role: 'user', content: 'hello' }];

function openaiRequest(model: string): Request {
  return {
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body: (stream) => JSON.stringify({ model, messages: MESSAGES, ...(stream ? { stream: true } : {}) }),
    isFirstToken: (event) => /"content":"[^"]/.test(event),
  };
}

function anthropicRequest(model: string): Request {
  return {
    path: '/v1/messages',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: (stream) => JSON.stringify({ model, max_tokens: 64, messages: MESSAGES, ...(stream ? { stream: true } : {}) }),
    isFirstToken: (event) => event.startsWith('event: content_block_delta'),
  };
}

const REQUESTS: Record<Way, Request> = {
  openai_pass: openaiRequest('via-openai'),
  anthropic_to_openai: anthropicRequest('via-openai'),
  anthropic_pass: anthropicRequest('via-anthropic'),
  openai_to_anthropic: openaiRequest('via-anthropic'),
  openai_to_gemini: openaiRequest('via-gemini'),
  openai_to_bedrock: openaiRequest('via-bedrock'),
  openai_to_vertex_gemini: openaiRequest('via-vertex-gemini'),
  anthropic_to_vertex_claude: anthropicRequest('via-vertex-claude'),
};

/**
 * What translating between the OpenAI and Anthropic protocols costs. Non-streamed
 * throughput at c=32, and time to first token of streams one at a time on one keep-alive
 * connection, each translated way against its pass-through twin, in A-B-C-D-D-C-B-A order.
 */
export const translation: Scenario = {
  name: 'translation',
  summary:
    'translation against pass-through (OpenAI <-> Anthropic, and to gemini, bedrock and vertex): req/s at c=32 and streamed time to first token',
  estimateS: (d) => 5 + WAYS.length * 1.5 + WAYS.length * d + WAYS.length * 3,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const aws = await ctx.fleet.startMock('bench-bedrock', [
      '--protocol',
      'bedrock',
      '--aws-access-key-id',
      BENCH_AWS.accessKeyId,
      '--aws-secret-access-key',
      BENCH_AWS.secretAccessKey,
    ]);
    const gcp = await ctx.fleet.startMock('bench-vertex', ['--protocol', 'vertex']);
    const origin = (baseUrl: string) => new URL(baseUrl).origin;
    const secret = (name: string, value: string) => {
      const file = join(ctx.fleet.dir, name);
      writeFileSync(file, value);
      return { file };
    };
    // A service account key made for the run; the mock's token endpoint takes any well-formed grant.
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keyFile = join(ctx.fleet.dir, 'bench-service-account.json');
    writeFileSync(
      keyFile,
      JSON.stringify({
        type: 'service_account',
        client_email: 'bench@bench-project.iam.gserviceaccount.com',
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      }),
    );
    const config = gatewayConfig({
      providers: {
        oai: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 10_000 },
        anth: { type: 'anthropic', base_url: mock.baseUrl, timeout_ms: 10_000 },
        gem: { type: 'gemini', base_url: origin(mock.baseUrl), timeout_ms: 10_000 },
        br: {
          type: 'bedrock',
          region: 'us-east-1',
          base_url: origin(aws.baseUrl),
          aws: {
            access_key_id: secret('aws-access-key-id', BENCH_AWS.accessKeyId),
            secret_access_key: secret('aws-secret-access-key', BENCH_AWS.secretAccessKey),
          },
          timeout_ms: 10_000,
        },
        vx: {
          type: 'vertex',
          project: 'bench-project',
          location: 'us-east5',
          base_url: origin(gcp.baseUrl),
          gcp: { service_account: { file: keyFile }, token_url: `${origin(gcp.baseUrl)}/token` },
          timeout_ms: 10_000,
        },
      },
      routes: {
        'via-openai': { candidates: [{ provider: 'oai' }] },
        'via-anthropic': { candidates: [{ provider: 'anth' }] },
        'via-gemini': { candidates: [{ provider: 'gem', model: 'gemini-2.5-flash' }] },
        'via-bedrock': { candidates: [{ provider: 'br', model: 'anthropic.claude-3-5-haiku-20241022-v1:0' }] },
        'via-vertex-gemini': { candidates: [{ provider: 'vx', model: 'gemini-2.5-flash' }] },
        'via-vertex-claude': { candidates: [{ provider: 'vx', model: 'claude-sonnet-4-5@20250929' }] },
      },
    });
    const gw = await ctx.fleet.startGateway('gateway', config, { cpuProfileDir: ctx.cpuProfileDir });
    const problems: string[] = [];

    for (const way of WAYS) {
      for (const stream of [false, true]) {
        const problem = await smokeTest(gw.url, way, stream);
        if (problem !== null) problems.push(problem);
      }
    }
    if (problems.length > 0) return { figures: { url: gw.url }, targets: [], tables: [], problems };

    ctx.progress(`warm-up: ${ctx.warmupS} s per way at c=${CONNECTIONS}`);
    for (const way of WAYS) await loadOnce(gw.url, way, ctx.warmupS);

    ctx.progress(`non-streamed, c=${CONNECTIONS}: ${WAYS.length} ways x 2 halves of ${ctx.durationS / 2} s`);
    // The gateway's own CPU per request: steadier than req/s on a shared machine (proc-cpu.ts).
    const cpuMs = Object.fromEntries(WAYS.map((w) => [w, 0])) as Record<Way, number>;
    const loadRuns = await alternate(WAYS, async (way) => {
      const { result: run, cpuMs: used } = await cpuUsedDuring([gw.pid], () => loadOnce(gw.url, way, ctx.durationS / 2));
      cpuMs[way] += used[0] ?? 0;
      return run;
    });
    const load = Object.fromEntries(WAYS.map((w) => [w, loadFigures(loadRuns[w])])) as Record<Way, LoadFigures>;
    for (const way of WAYS) {
      const problem = failuresOf(LABELS[way], load[way]);
      if (problem !== null) problems.push(problem);
    }

    ctx.progress(`streamed, one at a time: ${STREAMS_PER_HALF} streams per way and half`);
    const ttftRuns = await alternate(WAYS, (way) => firstTokenTimes(gw.url, way, STREAMS_PER_HALF));
    const ttft = Object.fromEntries(
      WAYS.map((w) => [
        w,
        {
          failures: ttftRuns[w].reduce((s, r) => s + r.failures, 0),
          latency_ms: summarizeLatency(ttftRuns[w].flatMap((r) => r.samplesMs)),
        },
      ]),
    ) as Record<Way, { failures: number; latency_ms: ReturnType<typeof summarizeLatency> }>;
    for (const way of WAYS) {
      if (ttft[way].failures > 0) problems.push(`${LABELS[way]}, streamed: ${ttft[way].failures} failed streams`);
    }

    const cpuUsPerRequest = (w: Way) => (load[w].ok > 0 ? round((cpuMs[w] * 1000) / load[w].ok, 1) : Number.NaN);
    const derived = PAIRS.map(({ translated, passThrough }) => ({
      translated,
      pass_through: passThrough,
      throughput_ratio: round(load[translated].req_per_s / load[passThrough].req_per_s, 3),
      cpu_ratio: round(cpuUsPerRequest(passThrough) / cpuUsPerRequest(translated), 3),
      added_ttft_p50_ms: round(ttft[translated].latency_ms.p50Ms - ttft[passThrough].latency_ms.p50Ms, 3),
    }));
    const targets: TargetCheck[] = derived.flatMap((d) => [
      checkTarget(
        `throughput ratio translated/pass-through, c=${CONNECTIONS}: ${LABELS[d.translated]}`,
        d.throughput_ratio,
        '>=',
        THROUGHPUT_RATIO_TARGET,
        '',
      ),
      checkTarget(
        `added time to first token p50, streamed: ${LABELS[d.translated]}`,
        d.added_ttft_p50_ms,
        '<=',
        ADDED_TTFT_P50_TARGET_MS,
        'ms',
      ),
    ]);

    const tables = [
      renderTable(
        `non-streamed at c=${CONNECTIONS} (ms)`,
        ['way', 'req/s', 'cpu µs/req', 'p50', 'p99', '2xx', 'failed'],
        WAYS.map((w) => {
          const f = load[w];
          return [LABELS[w], f.req_per_s, cpuUsPerRequest(w), f.latency_ms.p50Ms, f.latency_ms.p99Ms, f.ok, f.errors + f.non2xx];
        }),
      ),
      renderTable(
        'streamed, time to first token, one stream at a time (ms)',
        ['way', 'streams', 'p50', 'p90', 'p99', 'failed'],
        WAYS.map((w) => {
          const l = ttft[w].latency_ms;
          return [LABELS[w], l.count, l.p50Ms, l.p90Ms, l.p99Ms, ttft[w].failures];
        }),
      ),
      renderTable(
        'translated against the pass-through to the same upstream endpoint',
        ['translated', 'req/s ratio', 'cpu ratio (pass-through µs / translated µs)', '+TTFT p50 ms'],
        derived.map((d) => [LABELS[d.translated], d.throughput_ratio, d.cpu_ratio, d.added_ttft_p50_ms]),
      ),
    ];

    return {
      figures: {
        connections: CONNECTIONS,
        duration_s_per_way: ctx.durationS,
        streams_per_way: STREAMS_PER_HALF * 2,
        warmup_s: ctx.warmupS,
        load,
        cpu_us_per_request: Object.fromEntries(WAYS.map((w) => [w, cpuUsPerRequest(w)])),
        ttft,
        derived,
      },
      targets,
      tables,
      problems,
    };
  },
};

function loadOnce(base: string, way: Way, durationS: number) {
  const r = REQUESTS[way];
  return runLoad({ url: `${base}${r.path}`, body: r.body(false), headers: r.headers, connections: CONNECTIONS, durationS });
}

/** One request each way, plain and streamed, before anything is measured: a wrong setup fails loudly. */
async function smokeTest(base: string, way: Way, stream: boolean): Promise<string | null> {
  const r = REQUESTS[way];
  try {
    const res = await fetch(`${base}${r.path}`, { method: 'POST', headers: r.headers, body: r.body(stream) });
    const text = await res.text();
    if (res.status !== 200) return `${LABELS[way]}${stream ? ', streamed' : ''}: HTTP ${res.status}: ${text.slice(0, 200)}`;
    if (stream && !text.split('\n\n').some((e) => r.isFirstToken(e))) return `${LABELS[way]}, streamed: no answer text in the stream`;
    return null;
  } catch (err) {
    return `${LABELS[way]}: ${(err as Error).message}`;
  }
}

/** Streams one at a time on one keep-alive connection: hrtime from send to the event holding the first text. */
function firstTokenTimes(base: string, way: Way, count: number): Promise<{ failures: number; samplesMs: number[] }> {
  const r = REQUESTS[way];
  return runFirstTokens(base, { path: r.path, headers: r.headers, body: r.body(true), isFirstToken: r.isFirstToken }, count);
}
