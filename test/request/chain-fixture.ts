import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { MemoryOwnershipStore } from '../../src/a2a/index.js';
import { JwtAuthority } from '../../src/auth/index.js';
import { MemoryCacheStore } from '../../src/cache/index.js';
import { checkConfig } from '../../src/config/index.js';
import { createGovernanceStore, hashKey, type Principal, type Reservation } from '../../src/governance/index.js';
import {
  buildGeneration,
  buildKeyring,
  type Generation,
  type GenerationCandidate,
  GenerationHolder,
  type Keyring,
  KeyringHolder,
  prepareGeneration,
  readKeyringFile,
} from '../../src/live/index.js';
import type { Committed, Operation, Relayed, RelayResult } from '../../src/providers/index.js';
import { PoolRegistry, TokenSourceRegistry } from '../../src/providers/index.js';
import { preCheck } from '../../src/request/admission.js';
import type { Attempt, AttemptRequest, AttemptResult } from '../../src/request/attempt.js';
import { Exchange, type ModelRequest } from '../../src/request/exchange.js';
import { A2aService, KeysUsed, McpService } from '../../src/request/index.js';
import { ResponseOwners } from '../../src/request/response-owners.js';
import { type ChainRequest, serveChain } from '../../src/request/serve-chain.js';
import type { Services } from '../../src/request/services.js';
import { type BreakerOptions, BreakerRegistry, type FailureReason } from '../../src/resilience/index.js';
import { MemoryResponseStore } from '../../src/responses/index.js';
import { candidatesOf, RoundRobinCounters, SessionAffinity } from '../../src/routing/index.js';
import { AccessLog, CacheStats, createLogger, GuardrailStats, Metrics, RecentTraffic, type Span } from '../../src/telemetry/index.js';
import { candidate, envelope } from '../support/overlay.js';

// What the chain and wrap tests share: a real generation, real services (metrics, the
// memory governance store, a breaker registry on a clock the test moves), a real Exchange
// over a response double, and a scripted upstream: an Attempt that stands where the relay
// would, reporting each candidate's result as the test says, early (a microtask after it
// returned) or late (a turn of the event loop later), the way undici reports a dispatch.

export const pools = new PoolRegistry();

/** The upstream model every candidate of route `m` is sent, and its price (micro-USD per token: 1 in, 2 out). */
export const PRICED_MODEL = 'up-m';
const API_KEY = 'sk-chain-fixture-key-0123456789';
/** Route `long`'s length: enough that a chain taken by recursion would overflow the stack. */
export const LONG_CHAIN = 5000;

/**
 * A static generation: route `m` over four providers with distinct identities (so four
 * breakers), route `long` over one provider, team `acme` with a budget and its key `k1`.
 * `p0` adds settings to provider p0 (its `retry`, say).
 */
export function staticGeneration(p0: Record<string, unknown> = {}): Generation {
  const providers: Record<string, unknown> = {};
  for (const name of ['p0', 'p1', 'p2', 'p3', 'bulk']) providers[name] = { type: 'openai', base_url: `http://127.0.0.1:9/${name}/v1` };
  Object.assign(providers.p0 as object, p0);
  const doc = {
    server: { listen: '127.0.0.1:0' },
    providers,
    routing: {
      routes: {
        m: { candidates: ['p0', 'p1', 'p2', 'p3'].map((provider) => ({ provider, model: PRICED_MODEL })) },
        long: { candidates: Array.from({ length: LONG_CHAIN }, (_, i) => ({ provider: 'bulk', model: `long-${i}` })) },
      },
    },
    pricing: { models: { [PRICED_MODEL]: { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } } },
    teams: { acme: { rate_limit: { tpm: 1_000_000 }, budget: { usd_per_month: 100 } } },
    keys: [{ id: 'k1', team: 'acme', sha256: hashKey(API_KEY) }],
  };
  const checked = checkConfig(doc, 'chain-fixture');
  assert.ok(checked.ok, `the fixture config is invalid: ${JSON.stringify(checked)}`);
  const built = buildGeneration({
    config: checked.config,
    sourceHash: 'chain-fixture',
    number: 1,
    env: {},
    poolFor: (spec) => pools.acquire(spec),
  });
  assert.ok(built.ok, `the fixture generation did not build: ${JSON.stringify(built)}`);
  return built.generation;
}

/**
 * An overlay generation whose three candidates of model `m` each name a credential that
 * is not in the mount: built the way start-up builds it, so each carries its credentialProblem.
 */
export async function overlayWithoutCredentials(): Promise<Generation> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-chain-'));
  try {
    const mount = join(dir, 'mount');
    mkdirSync(mount);
    const credential = (name: string) => ({
      credential: { strategy: 'bearer_token', secretRef: { namespace: 'team-a', name, key: 'token' } },
    });
    const overlayFile = join(dir, 'overlay.json');
    const clusters = ['east', 'west', 'north'];
    writeFileSync(
      overlayFile,
      JSON.stringify(envelope(clusters.map((cluster) => candidate('m', cluster, credential(`${cluster}-creds`))))),
    );
    const providers = Object.fromEntries(clusters.map((c) => [c, { type: 'openai', base_url: `http://127.0.0.1:9/${c}/v1` }]));
    const configPath = join(dir, 'config.yaml');
    writeFileSync(
      configPath,
      stringify({
        server: { listen: '127.0.0.1:0' },
        providers,
        routing: { overlay: { file: overlayFile, credential_mount_base: mount, reload: { enabled: false } } },
      }),
    );
    const prepared = await prepareGeneration({
      configPath,
      env: {},
      serving: null,
      startupConfig: null,
      poolFor: (spec) => pools.acquire(spec),
    });
    assert.equal(prepared.outcome, 'built', JSON.stringify(prepared));
    return (prepared as Extract<typeof prepared, { outcome: 'built' }>).generation;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A route's candidates in their configured order. */
export function chainOf(gen: Generation, model: string): GenerationCandidate[] {
  const route = gen.routes[model];
  assert.ok(route !== undefined, `no route ${model}`);
  return [...candidatesOf(route)];
}

/** Breaker settings of the tests: one failure opens a breaker for 1 s (of the test's clock). */
export const ONE_STRIKE: BreakerOptions = { failureThreshold: 1, openBaseMs: 1000, openMaxMs: 30_000 };

/** A breaker registry on a clock the test moves, knowing every identity of the generation. */
export function breakersFor(
  gen: Generation,
  options: BreakerOptions = ONE_STRIKE,
): { breakers: BreakerRegistry; clock: { nowMs: number } } {
  const clock = { nowMs: 1_000_000 };
  const breakers = new BreakerRegistry(options, () => clock.nowMs);
  breakers.retain(gen.identities);
  return { breakers, clock };
}

const keyrings = new WeakMap<Generation, Keyring>();

/** The keyring built from a generation's config, as start-up builds it beside the generation (one per generation). */
export function keyringFor(gen: Generation): Keyring {
  let keyring = keyrings.get(gen);
  if (keyring === undefined) {
    keyring = buildKeyring(readKeyringFile(gen.config, gen.sourceHash, {}).file, null, gen.number);
    keyrings.set(gen, keyring);
  }
  return keyring;
}

/** The services the composition root builds, for this generation and these breakers. */
export function servicesFor(gen: Generation, breakers: BreakerRegistry): Services {
  const holder = new GenerationHolder();
  holder.swap(gen);
  const keyring = new KeyringHolder();
  keyring.swap(keyringFor(gen));
  const logger = createLogger({ level: 'silent' });
  const metrics = new Metrics(() => []);
  return {
    auth: new JwtAuthority({ fetched: () => undefined }),
    holder,
    keyring,
    breakers,
    counters: new RoundRobinCounters(),
    affinity: new SessionAffinity({ ttlMs: 60_000, maxEntries: 100 }),
    responses: new ResponseOwners({ ttlMs: 60_000, maxEntries: 100 }),
    responseStore: new MemoryResponseStore({ ttlMs: 60_000, maxEntries: 100 }),
    cache: new MemoryCacheStore({ maxBytes: 1024 * 1024 }),
    pools,
    tokens: new TokenSourceRegistry(),
    metrics,
    recent: new RecentTraffic(),
    guardrailStats: new GuardrailStats(),
    cacheStats: new CacheStats(),
    logger,
    accessLog: new AccessLog({ level: 'silent', flushMs: 1000 }),
    governance: createGovernanceStore({ store: 'memory' }, { onFailure: () => undefined }),
    audit: null,
    tracing: null,
    random: () => 0.5,
    mcp: new McpService(holder, keyring, logger, metrics, gen.config.mcp, 'test'),
    a2a: new A2aService(new MemoryOwnershipStore(), gen.config.a2a, logger, metrics),
    keysUsed: new KeysUsed(),
    ledger: null,
  };
}

/** The part of a ServerResponse the chain and an operation's own answer touch, recorded. */
export class ResponseDouble {
  statusCode = 200;
  headersSent = false;
  writableFinished = false;
  destroyed = false;
  body = '';
  readonly headers = new Map<string, string | number>();

  setHeader(name: string, value: string | number): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  writeHead(status: number, headers: Record<string, string | number> = {}): this {
    this.statusCode = status;
    for (const [name, value] of Object.entries(headers)) this.setHeader(name, value);
    this.headersSent = true;
    return this;
  }

  end(body: string | Buffer = ''): this {
    this.body += body.toString();
    this.writableFinished = true;
    return this;
  }

  destroy(): this {
    this.destroyed = true;
    return this;
  }
}

export interface Exchanged {
  readonly x: Exchange;
  readonly res: ResponseDouble;
}

/** An Exchange for one request, over a request with no headers and a response double. */
export function exchangeFor(
  gen: Generation,
  principal: Principal = { keyId: null, team: null },
  matched: { readonly operation?: Operation; readonly span?: Span } = {},
): Exchanged {
  const res = new ResponseDouble();
  const req = { headers: {}, url: '/v1/chat/completions', method: 'POST' } as unknown as IncomingMessage;
  const x = new Exchange(req, res as unknown as ServerResponse, () => undefined);
  x.matched({ path: 'none', operation: matched.operation }, matched.span ?? null);
  x.captured(gen, keyringFor(gen));
  x.authenticated(principal);
  return { x, res };
}

/** The parsed request, as admission would have built it. */
export function modelRequest(
  gen: Generation,
  model: string,
  more: { operation?: Operation; protocol?: 'openai' | 'anthropic'; stream?: boolean; principal?: Principal } = {},
): ModelRequest {
  const parsed = { model, stream: more.stream ?? false, max_tokens: 100, messages: [{ role: 'user', content: 'hello there' }] };
  return {
    gen,
    keyring: keyringFor(gen),
    principal: more.principal ?? { keyId: null, team: null },
    operation: more.operation ?? 'chat',
    protocol: more.protocol ?? 'openai',
    model,
    stream: more.stream ?? false,
    raw: Buffer.from(JSON.stringify(parsed)),
    parsed,
    stored: null,
  };
}

export interface ChainSetup {
  readonly svc: Services;
  readonly x: Exchange;
  readonly request: ModelRequest;
  readonly candidates: readonly GenerationCandidate[];
  readonly attempt: Attempt;
  readonly reservation?: Reservation | null;
  readonly deadlineAt?: number | null;
  readonly usage?: ChainRequest['usage'];
  readonly onCommit?: ChainRequest['onCommit'];
}

export function chainRequest(s: ChainSetup): ChainRequest {
  if (s.x.model === undefined) s.x.asked(s.request);
  return {
    x: s.x,
    request: s.request,
    limitHeaders: null,
    deadlineAt: s.deadlineAt ?? null,
    fallbackOn: null,
    outputCap: null,
    onResponseId: null,
    svc: s.svc,
    candidates: s.candidates,
    attempt: s.attempt,
    reservation: s.reservation ?? null,
    onCommit: s.onCommit ?? null,
    usage: s.usage ?? null,
    onRelayed: null,
  };
}

export interface Served {
  readonly err: unknown;
  /** How many times the chain's done was called, counted a few turns after the first. */
  readonly doneCalls: number;
}

/** Runs serveChain to its done, then waits a few turns of the event loop to see a second done, if any. */
export function serve(req: ChainRequest): Promise<Served> {
  return new Promise((resolve) => {
    let doneCalls = 0;
    serveChain(req, (err) => {
      doneCalls += 1;
      if (doneCalls > 1) return;
      setImmediate(() => setTimeout(() => setImmediate(() => resolve({ err, doneCalls })), 0));
    });
  });
}

/** The reservation the pre-check takes for team `acme`'s key `k1` on route `m`. */
export function reserveFor(x: Exchange, svc: Services, request: ModelRequest, candidates: readonly GenerationCandidate[]): Reservation {
  // As serve-model does: the request is noted before its pre-check.
  x.asked(request);
  const admitted = preCheck(x, svc, request, { bodyBytes: request.raw.length, maxTokens: 100 }, candidates);
  assert.ok(!(admitted instanceof Promise), 'the memory store answers at once');
  assert.ok(admitted.reservation !== null, 'a team caller is counted');
  return admitted.reservation;
}

export type Timing = 'early' | 'late';

/** What the scripted upstream does for one attempt. */
export type Step =
  | {
      readonly kind: 'failed';
      readonly reason: FailureReason;
      readonly detail?: string;
      readonly retryAfterMs?: number;
      readonly timing?: Timing;
    }
  | { readonly kind: 'aborted'; readonly timing?: Timing }
  | {
      readonly kind: 'committed';
      readonly status?: number;
      readonly timing?: Timing;
      /** How the relayed response ends; `held` = when the test calls finish(). */
      readonly relayed?: Partial<Relayed> | 'held';
    }
  /** Refused before anything was sent (the request cannot be written for this candidate). */
  | { readonly kind: 'throw'; readonly error: unknown }
  /** Reported when the test calls the call's report(). */
  | { readonly kind: 'held' };

/** The relay's committed result: observers hear the end once, in the order they were added. */
export class CommittedDouble implements Committed {
  readonly kind = 'committed' as const;
  readonly status: number;
  readonly headersAt = performance.now();
  #observers: ((r: Relayed) => void)[] = [];
  #relayed: Relayed | null = null;

  constructor(status: number) {
    this.status = status;
  }

  onFinished(observer: (relayed: Relayed) => void): void {
    if (this.#relayed !== null) observer(this.#relayed);
    else this.#observers.push(observer);
  }

  finish(relayed: Partial<Relayed> = {}): void {
    assert.equal(this.#relayed, null, 'a relayed response ends once');
    const r: Relayed = {
      outcome: 'complete',
      usage: { inputTokens: 10, outputTokens: 20 },
      firstByteAt: performance.now(),
      events: 0,
      ...relayed,
    };
    this.#relayed = r;
    for (const o of this.#observers) o(r);
    this.#observers = [];
  }
}

export interface UpstreamCall {
  readonly n: number;
  readonly a: AttemptRequest;
  readonly candidate: GenerationCandidate;
  /** The committed result this call reported, when it did. */
  committed: CommittedDouble | null;
  reported: boolean;
  /** Reports this call's result (for a `held` step); once. */
  report(r: RelayResult): void;
}

/**
 * The upstream, scripted: `script(a, n)` says what its n-th invocation (from 0, refusals
 * included) does. It keeps the calls that went upstream in order, an event log (`start` / `report` per call), and the most calls it ever
 * had open at once.
 */
export class ScriptedUpstream {
  readonly calls: UpstreamCall[] = [];
  readonly log: string[] = [];
  open = 0;
  maxOpen = 0;
  #invocations = 0;
  readonly #script: (a: AttemptRequest, n: number) => Step;

  constructor(script: (a: AttemptRequest, n: number) => Step) {
    this.#script = script;
  }

  /** The providers called, in order. */
  get providers(): string[] {
    return this.calls.map((c) => c.candidate.provider.name);
  }

  readonly attempt: Attempt = (a, done) => {
    const n = this.#invocations++;
    const step = this.#script(a, n);
    const name = a.candidate.provider.name;
    if (step.kind === 'throw') {
      this.log.push(`refuse ${name}`);
      throw step.error;
    }
    this.open += 1;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    this.log.push(`start ${name}`);
    const call: UpstreamCall = {
      n,
      a,
      candidate: a.candidate,
      committed: null,
      reported: false,
      report: (r) => {
        assert.equal(call.reported, false, `call ${n} (${name}) reported twice`);
        call.reported = true;
        this.open -= 1;
        this.log.push(`report ${name} ${r.kind}`);
        done(r);
      },
    };
    this.calls.push(call);
    if (step.kind === 'held') return;
    // Early: as soon as the attempt has returned; late: a turn of the event loop later, like a socket's answer.
    const when = step.timing === 'early' ? queueMicrotask : setImmediate;
    when(() => {
      if (step.kind === 'failed') {
        call.report({
          kind: 'failed',
          reason: step.reason,
          detail: step.detail ?? `${name} said ${step.reason}`,
          retryAfterMs: step.retryAfterMs,
        });
      } else if (step.kind === 'aborted') {
        call.report({ kind: 'aborted' });
      } else {
        const committed = new CommittedDouble(step.status ?? 200);
        call.committed = committed;
        call.report(committed);
        const relayed = step.relayed;
        if (relayed !== 'held') setImmediate(() => committed.finish(relayed));
      }
    });
  };
}

/** Every step the same. */
export const always = (step: Step) => (): Step => step;

/**
 * Wraps an attempt (outermost) to check the rule every attempt keeps: its callback never
 * runs while an attempt function (this one or any other) is still on the stack.
 */
export function watchReturns(inner: Attempt): { attempt: Attempt; readonly results: number; readonly beforeReturn: number } {
  let depth = 0;
  const seen = { results: 0, beforeReturn: 0 };
  const attempt: Attempt = (a, done) => {
    depth += 1;
    try {
      inner(a, (r: AttemptResult) => {
        seen.results += 1;
        if (depth > 0) seen.beforeReturn += 1;
        done(r);
      });
    } finally {
      depth -= 1;
    }
  };
  return {
    attempt,
    get results() {
      return seen.results;
    },
    get beforeReturn() {
      return seen.beforeReturn;
    },
  };
}
