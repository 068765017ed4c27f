import { createServer, type Server, type ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { AuditWriter } from '../audit/index.js';
import { JwtAuthority } from '../auth/index.js';
import {
  type AuditConfig,
  type ConfigIssue,
  formatIssue,
  type GatewayConfig,
  isLoopback,
  responsesDefaults,
  type ServerConfig,
  sessionAffinityDefaults,
  splitHostPort,
} from '../config/index.js';
import { Ledger } from '../database/index.js';
import { governanceNow, governanceStatus, type PolicedStore } from '../governance/index.js';
import {
  type Generation,
  GenerationHolder,
  KeyringHolder,
  prepareGeneration,
  ReloadCoordinator,
  type ReloadTrigger,
} from '../live/index.js';
import { PoolRegistry, type TokenEvent, TokenSourceRegistry } from '../providers/index.js';
import { A2aService, KeysUsed, McpService, policyOf, ResponseOwners, type Services } from '../request/index.js';
import { BreakerRegistry } from '../resilience/index.js';
import { RedisResponseStore } from '../responses/index.js';
import { RoundRobinCounters, SessionAffinity, seededRandom } from '../routing/index.js';
import {
  AccessLog,
  type BreakerStateCode,
  CacheStats,
  createLogger,
  flushLogger,
  GuardrailStats,
  type Logger,
  Metrics,
  RecentTraffic,
  Tracing,
} from '../telemetry/index.js';
import { FileWatch } from '../watch/index.js';
import { buildOwnershipStore } from './a2a-owners.js';
import { type AdminContext, createAdminHandler } from './admin.js';
import { createApiHandler, type TrafficState } from './api.js';
import { logBreakerTransition } from './breaker-log.js';
import { buildCacheStore } from './cache-store.js';
import { DatabaseLink } from './database-link.js';
import { buildGovernanceStore, GovernanceStoreSettingsError } from './governance-store.js';
import { ReplicaHeartbeat } from './heartbeat.js';
import { OpenExchanges } from './open-exchanges.js';
import { Reloader, type ReloadResult } from './reload.js';
import { buildReplicaRecords } from './replica-records.js';
import { buildResponseStore, pruneResponses } from './response-store.js';

export interface GatewayOptions {
  readonly configPath: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: Logger;
  /** Where log lines go (a file descriptor or path); stdout by default. */
  readonly logDestination?: number | string;
  /** Install SIGHUP (reload), SIGUSR1 (reopen the audit file) and SIGTERM/SIGINT (drain, then exit 0) handlers. */
  readonly handleSignals?: boolean;
  readonly random?: () => number;
  /** The gateway's version, for `service.version` on traces. */
  readonly version?: string;
  /** Called after a signal-initiated shutdown has drained; the CLI exits the process here. */
  readonly onShutdown?: () => void;
}

export interface Gateway {
  readonly url: string;
  readonly adminUrl: string | null;
  readonly services: Services;
  reload(trigger?: ReloadTrigger): Promise<ReloadResult>;
  /** Stops accepting, lets in-flight requests finish within drain_timeout_ms, then closes everything. */
  close(): Promise<void>;
}

/** A start-up failure: the config or a listener is unusable. The CLI prints it and exits 1. */
export class StartupError extends Error {
  readonly issues: readonly ConfigIssue[];
  constructor(issues: readonly ConfigIssue[]) {
    super(issues.map(formatIssue).join('\n'));
    this.name = 'StartupError';
    this.issues = issues;
  }
}

/**
 * The composition root: the only place that builds the stateful services and wires them
 * together. The first generation is prepared by the same function every reload runs
 * (prepareGeneration), so start-up and reload accept and refuse exactly the same inputs;
 * the services are then built from that first config, never from placeholder values.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const env = options.env ?? process.env;
  const started = performance.now();
  const pools = new PoolRegistry();
  // The first fetches start while the config is built, before the logger exists: what they
  // report waits for it.
  const tokenEvents: TokenEvent[] = [];
  let tokenLog: (e: TokenEvent) => void = (e) => tokenEvents.push(e);
  const tokens = new TokenSourceRegistry((e) => tokenLog(e));
  // Opened (and migrated) when the first generation reads its teams and keys, if the config has a database.
  const database = new DatabaseLink(env);
  const first = await prepareGeneration({
    configPath: options.configPath,
    env,
    serving: null,
    startupConfig: null,
    poolFor: (spec) => pools.acquire(spec),
    cloudAuth: tokens,
    managed: database.snapshot,
    topology: database.topology,
  });
  if (first.outcome !== 'built') {
    tokens.stopAll();
    await pools.destroyAll();
    await database.close();
    throw new StartupError(first.outcome === 'rejected' ? first.issues : []);
  }
  const config = first.generation.config;
  const svc = await buildServices(first.generation, pools, tokens, options, database).catch(async (err: unknown) => {
    tokens.stopAll();
    await pools.destroyAll();
    await database.close();
    throw err;
  });
  if (database.migration?.ok && database.migration.applied.length > 0) {
    svc.logger.info({
      msg: 'database schema migrated',
      from: database.migration.from,
      to: database.migration.to,
      applied: database.migration.applied,
    });
  }
  tokenLog = (e) => logTokenEvent(svc.logger, e);
  for (const e of tokenEvents.splice(0)) tokenLog(e);
  // Each fetch is bounded: an authority that is down delays the start by that much, and its
  // provider then fails over until a retry gets a token.
  await tokens.settled();
  // The same for the trusted issuers' keys: an issuer that cannot be had by then starts
  // unavailable (its tokens get 503) and is served as soon as a retry gets its keys.
  await svc.auth.ready(JWKS_READY_TIMEOUT_MS);
  for (const issuer of svc.auth.issuers) {
    if (issuer.keys.state !== 'ready')
      svc.logger.warn({
        msg: "a trusted issuer's signing keys could not be fetched at start: its tokens get 503 until a retry gets them; API keys and other issuers serve",
        issuer: issuer.id,
        error: issuer.keys.lastError,
      });
  }
  // A remote store gets a moment to connect before the listener opens, so the first requests
  // are not refused (fail_closed) only because the connection was still being made. One that
  // is not there by then is logged; the store policy decides meanwhile, and it reconnects.
  if (config.governance.store === 'redis' && !(await svc.governance.ready(STORE_READY_TIMEOUT_MS))) {
    svc.logger.warn({
      msg: 'governance store not reachable at start: serving by governance.on_store_error until it is',
      on_store_error: config.governance.on_store_error,
      waited_ms: STORE_READY_TIMEOUT_MS,
    });
  }
  if (svc.responseStore instanceof RedisResponseStore && !(await svc.responseStore.ready(STORE_READY_TIMEOUT_MS))) {
    svc.logger.warn({
      msg: 'response store not reachable at start: stored responses answer 503 until it is',
      waited_ms: STORE_READY_TIMEOUT_MS,
    });
  }
  svc.metrics.trackBudgets(
    async () => {
      const status = await governanceStatus(svc.governance, policyOf(svc.keyring.current()), governanceNow());
      return Object.entries(status.teams).map(([team, s]) => ({
        team,
        spentUsd: s.spendThisMonthMicroUsd.used / 1e6,
        limitUsd: s.spendThisMonthMicroUsd.limit === null ? null : s.spendThisMonthMicroUsd.limit / 1e6,
      }));
    },
    () => svc.governance.health.up,
  );
  const openToAnyone = first.keyring.keys.length === 0 && (config.auth?.jwt === undefined || config.auth.jwt.mode === 'optional');
  if (openToAnyone && !isLoopback(splitHostPort(config.server.listen).host)) {
    svc.logger.warn({
      msg: `no keys are configured and ${config.server.listen} is not a loopback address: anyone who reaches it may call it`,
    });
  }
  // A caller that passes its own logger owns its level; otherwise `log.level` sets it.
  const reloader = new Reloader(svc, options.configPath, env, options.logger === undefined, database.snapshot, {
    snapshot: database.topology,
    version: database.topologyVersion,
  });
  const announce = reloader.adopt(first, started);
  const heartbeat = new ReplicaHeartbeat(svc.holder, svc.logger, svc.metrics, config.database?.recheck_ms ?? null);
  // Every reload's outcome reaches the heartbeat, which writes at once what it changed.
  const coordinator = new ReloadCoordinator(async (trigger: ReloadTrigger) => {
    const result = await reloader.run(trigger);
    heartbeat.afterReload(result);
    return result;
  });

  const traffic: TrafficState = { inflight: 0, draining: false, open: new OpenExchanges() };
  const listeners = await startListeners(
    config.server,
    svc,
    traffic,
    {
      svc,
      reloader,
      requestReload: () => coordinator.request('admin'),
      startedAt: Date.now(),
      database,
      // A write's answer names the topology it left serving, beside the generation.
      reloadForDatabase: () => coordinator.request('database').then((r) => Object.assign({}, r, { topology: svc.holder.current().digest })),
      replicas: heartbeat,
      env,
      configPath: options.configPath,
    },
    options.version ?? 'dev',
  ).catch(async (err: unknown) => {
    // Nothing served: what was built is let go, so the process can exit with the reason.
    await releaseServices(svc, database);
    throw err;
  });
  // Only now, bound: a start that cannot listen reports that, not a generation that never served.
  announce();
  const replicaRecords = buildReplicaRecords(config, database, svc.logger, env, heartbeat.timing.goneAfterMs);
  heartbeat.start(replicaRecords.records, replicaRecords.close);
  const responsePrune = pruneResponses(svc.responseStore, svc.logger);
  const watches = await watchInputs(options.configPath, config, coordinator);
  const lastUsed = database.records === null ? null : trackLastUsed(svc, database);
  const ledger = svc.ledger instanceof Ledger ? svc.ledger : null;
  if (config.database !== undefined) {
    database.watch({
      recheckMs: config.database.recheck_ms,
      servingVersion: () => svc.keyring.current().managed?.version ?? null,
      onChange: () => void coordinator.request('database').catch(() => undefined),
      onProblem: (message) => svc.logger.warn({ msg: 'database', problem: message }),
    });
  }

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      traffic.draining = true;
      for (const w of watches) w.close();
      await coordinator.stop();
      await drain(listeners, traffic, config.server, svc);
      if (lastUsed !== null) {
        clearInterval(lastUsed.timer);
        await lastUsed.flush();
      }
      // After the drain: every request's row is queued by now.
      await ledger?.close(LEDGER_CLOSE_MS);
      if (responsePrune !== null) clearInterval(responsePrune);
      // Before the database: the database store writes through its connection.
      await svc.responseStore.close();
      await svc.cache.close();
      // Its record is deleted before the database closes: a replica that stopped is not listed as behind.
      await heartbeat.stop();
      await database.close();
      signals?.uninstall();
    })();
    return closing;
  };
  const signals =
    options.handleSignals === true
      ? installSignals(svc.logger, {
          reload: () => void coordinator.request('sighup').catch(() => undefined),
          reopenAudit: () => void reopenAudit(svc),
          stop: () => close().then(() => options.onShutdown?.()),
          closing: () => closing !== null,
          inflight: () => traffic.inflight,
          drainTimeoutMs: config.server.drain_timeout_ms,
        })
      : null;

  svc.logger.info({ msg: 'listening', url: listeners.url, admin_url: listeners.adminUrl, generation: svc.holder.current().number });
  return {
    url: listeners.url,
    adminUrl: listeners.adminUrl,
    services: svc,
    reload: (trigger = 'admin') => coordinator.request(trigger),
    close,
  };
}

/** A start that failed after the services were built: each is closed, as a drain would, with no listener to drain. */
async function releaseServices(svc: Services, database: DatabaseLink): Promise<void> {
  await svc.mcp.close();
  await svc.a2a.close();
  svc.tokens.stopAll();
  svc.auth.close();
  await svc.pools.destroyAll();
  await svc.governance.close();
  await svc.audit?.close();
  if (svc.ledger instanceof Ledger) await svc.ledger.close(LEDGER_CLOSE_MS);
  await svc.responseStore.close();
  await svc.cache.close();
  await database.close();
  await svc.tracing?.shutdown().catch(() => undefined);
  svc.accessLog.close();
  flushLogger(svc.logger);
}

/** Writes when keys were last used, once a minute, off the request path; a failed write is tried again next time. */
function trackLastUsed(svc: Services, database: DatabaseLink): { timer: NodeJS.Timeout; flush: () => Promise<void> } {
  const flush = async (): Promise<void> => {
    const records = database.records;
    const uses = svc.keysUsed.take();
    if (records === null || uses.size === 0) return;
    const managed = new Set(svc.keyring.current().managed?.keys.map((k) => k.id) ?? []);
    for (const id of uses.keys()) if (!managed.has(id)) uses.delete(id);
    try {
      await records.touchKeys(uses);
    } catch (err) {
      svc.keysUsed.restore(uses);
      svc.logger.warn({ msg: 'database', problem: `last_used_at could not be written: ${(err as Error).message}` });
    }
  };
  const timer = setInterval(() => void flush(), KeysUsed.EVERY_MS);
  timer.unref();
  return { timer, flush };
}

/** How long shutdown gives the usage ledger to write what it still holds. */
const LEDGER_CLOSE_MS = 5000;

/** How long start-up waits for the trusted issuers' first key fetches. */
const JWKS_READY_TIMEOUT_MS = 5000;

/** How long start-up waits for a remote governance store to connect. */
const STORE_READY_TIMEOUT_MS = 5000;

/** The stateful services, built once from the first generation's config and never rebuilt by a reload. */
async function buildServices(
  gen: Generation,
  pools: PoolRegistry,
  tokens: TokenSourceRegistry,
  options: GatewayOptions,
  database: DatabaseLink,
): Promise<Services> {
  const config = gen.config;
  const holder = new GenerationHolder();
  const keyring = new KeyringHolder();
  const b = config.resilience.breaker;
  const breakers = new BreakerRegistry({ failureThreshold: b.failure_threshold, openBaseMs: b.open_base_ms, openMaxMs: b.open_max_ms });
  const sessions = config.routing.session_affinity ?? sessionAffinityDefaults;
  const responses = config.routing.responses ?? responsesDefaults;
  const logger = options.logger ?? createLogger({ level: config.log.level, destination: options.logDestination });
  breakers.observe((t) => logBreakerTransition(logger, holder, t));
  const metrics = new Metrics(() => breakerStates(holder, breakers));
  // Before the audit file is opened: a credential that cannot be read stops the start first.
  const governance = governanceStore(config, logger, metrics, options.env ?? process.env);
  const audit = config.audit === undefined ? null : await openAudit(config.audit, logger, metrics);
  const ledger = await startLedger(database, config, logger, metrics);
  const responseStore = buildResponseStore(config, database.database, logger, options.env ?? process.env);
  const cache = buildCacheStore(config, logger, options.env ?? process.env);
  // switchyard_cache_bytes: read from the store at each scrape.
  metrics.cacheBytes = () => cache.bytes();
  const auth = new JwtAuthority({
    fetched: (issuer, result, d) => {
      metrics.jwksFetches.inc({ issuer, result, reason: d.reason });
      if (result === 'ok') logger.debug({ msg: 'jwks fetched', issuer, reason: d.reason, keys: d.keys });
      else
        logger.warn({
          msg: "an issuer's signing keys could not be fetched: the last good keys serve (its tokens get 503 until it has some)",
          issuer,
          reason: d.reason,
          error: d.error,
          retry_in_ms: d.retryInMs,
        });
    },
  });
  auth.configure(config.auth?.jwt);
  return {
    auth,
    holder,
    keyring,
    breakers,
    counters: new RoundRobinCounters(),
    affinity: new SessionAffinity({ ttlMs: sessions.ttl_s * 1000, maxEntries: sessions.max_entries }),
    // Shared by the replicas of a redis store, so that any of them routes a follow-up.
    responses: new ResponseOwners({ ttlMs: responses.ttl_s * 1000, maxEntries: responses.max_entries }, governance.sharedRecords),
    responseStore,
    cache,
    pools,
    tokens,
    metrics,
    recent: new RecentTraffic(),
    guardrailStats: new GuardrailStats(),
    cacheStats: new CacheStats(),
    logger,
    governance,
    audit,
    tracing: await startTracing(gen, options),
    accessLog: new AccessLog({ level: logger.level, destination: options.logDestination, flushMs: 200 }),
    random: options.random ?? randomSource(options.env ?? process.env, logger),
    // Sessions shared by the replicas of a redis store, so that any of them serves a session.
    mcp: new McpService(holder, keyring, logger, metrics, config.mcp, options.version ?? 'dev', governance.sharedRecords),
    a2a: new A2aService(buildOwnershipStore(config, logger, options.env ?? process.env), config.a2a, logger, metrics),
    keysUsed: new KeysUsed(),
    ledger,
  };
}

/** The usage ledger's writer, when a database is configured: its partitions made ahead before the first request. */
async function startLedger(database: DatabaseLink, config: GatewayConfig, logger: Logger, metrics: Metrics): Promise<Ledger | null> {
  const settings = config.database;
  const db = database.database;
  if (settings === undefined || db === null) return null;
  const ledger = new Ledger(db, {
    queueRows: settings.ledger_queue,
    retentionDays: settings.usage_retention_days,
    onLost: (rows) => metrics.ledgerRowsLost.inc(rows),
    onProblem: (problem) => logger.warn({ msg: 'usage ledger', problem }),
  });
  await ledger.start();
  return ledger;
}

/** Traces when `telemetry.otlp` is set; its headers were resolved with the generation. */
async function startTracing(gen: Generation, options: GatewayOptions): Promise<Tracing | null> {
  const otlp = gen.config.telemetry.otlp;
  if (otlp === undefined) return null;
  const headers: Record<string, string> = {};
  for (const [name, credential] of Object.entries(gen.otlpHeaders ?? {})) headers[name] = credential.apiKey();
  return Tracing.start({
    endpoint: otlp.endpoint,
    headers,
    serviceName: otlp.service_name,
    serviceVersion: options.version ?? 'dev',
    instance: `${hostname()}:${process.pid}`,
    sampleRatio: otlp.sample_ratio,
  });
}

/**
 * SWITCHYARD_RANDOM_SEED, a testing aid: `random` and `weighted` selection draw from a
 * seeded generator, so a test or benchmark replays the same choices. Unset: Math.random.
 */
function randomSource(env: NodeJS.ProcessEnv, logger: Logger): () => number {
  const seed = env.SWITCHYARD_RANDOM_SEED;
  if (seed === undefined || seed === '') return Math.random;
  if (!/^\d{1,10}$/.test(seed) || Number(seed) > 0xffffffff) {
    throw new StartupError([{ path: 'SWITCHYARD_RANDOM_SEED', message: 'must be a whole number 0-4294967295' }]);
  }
  logger.warn({ msg: 'random selection is seeded (SWITCHYARD_RANDOM_SEED): a testing aid, not for production', seed: Number(seed) });
  return seededRandom(Number(seed));
}

/** The governance store; settings it cannot read (a secret, a TLS file) stop the start, naming each key. */
function governanceStore(config: GatewayConfig, logger: Logger, metrics: Metrics, env: NodeJS.ProcessEnv): PolicedStore {
  try {
    return buildGovernanceStore(config, logger, metrics, env);
  } catch (err) {
    if (err instanceof GovernanceStoreSettingsError) throw new StartupError([...err.issues]);
    throw err;
  }
}

/** The audit writer, continuing the file's chain (a torn last record is cut, and a gap record says so); a file it cannot open stops the start. */
async function openAudit(settings: AuditConfig, logger: Logger, metrics: Metrics): Promise<AuditWriter> {
  try {
    const writer = await AuditWriter.open({
      path: settings.file,
      ...(settings.max_bytes === undefined ? {} : { maxBytes: settings.max_bytes }),
      instance: `${hostname()}:${process.pid}`,
      onFailure: (f) => {
        metrics.auditFailures.inc();
        if (f.kind === 'dropped') metrics.auditRecordsLost.inc(f.records);
        logger.warn({ msg: 'audit append failed', error: f.message });
      },
      // Repaired: a torn tail cut at start-up, a failed write cut back (a gap record says so).
      // Reopened: the file was rotated away under the writer, which went on in an anchored new one.
      // Rotated: the writer moved a file at audit.max_bytes aside itself.
      onNotice: (n) => logger[n.level]({ msg: `audit file ${n.kind}`, detail: n.message }),
    });
    metrics.auditHead = () => writer.seq;
    return writer;
  } catch (err) {
    throw new StartupError([{ path: 'audit.file', message: (err as Error).message }]);
  }
}

interface Listeners {
  readonly api: Server;
  readonly admin: Server | null;
  readonly url: string;
  readonly adminUrl: string | null;
}

/** The API listener and, when configured, the admin listener; both or neither. */
async function startListeners(
  server: ServerConfig,
  svc: Services,
  traffic: TrafficState,
  admin: AdminContext,
  version: string,
): Promise<Listeners> {
  const api = limited(
    createServer(serverOptions(server), createApiHandler(svc, { maxBodyBytes: server.max_body_bytes, version }, traffic)),
    server,
  );
  const url = await listen(api, server.listen, 'server.listen');
  if (server.admin_listen === undefined) return { api, admin: null, url, adminUrl: null };
  const adminServer = limited(createServer(serverOptions(server), createAdminHandler(admin)), server);
  const adminUrl = await listen(adminServer, server.admin_listen, 'server.admin_listen').catch(async (err: unknown) => {
    await closeServer(api);
    throw err;
  });
  return { api, admin: adminServer, url, adminUrl };
}

/** The config watch (server.watch_config) and the overlay watch (routing.overlay.reload). */
async function watchInputs(configPath: string, config: GatewayConfig, coordinator: ReloadCoordinator<ReloadResult>): Promise<FileWatch[]> {
  const watches: FileWatch[] = [];
  const server = config.server;
  if (server.watch_config) {
    const watch = new FileWatch({
      file: configPath,
      debounceMs: server.watch_debounce_ms,
      recheckMs: 10_000,
      onChange: (cause) => void coordinator.request(cause === 'event' ? 'config_watch' : 'config_recheck').catch(() => undefined),
    });
    watch.start();
    watches.push(watch);
  }
  const overlay = config.routing.overlay;
  if (overlay?.reload.enabled === true) {
    const watch = new FileWatch({
      file: overlay.file,
      debounceMs: overlay.reload.debounce_ms,
      recheckMs: overlay.reload.recheck_ms,
      onChange: (cause) => void coordinator.request(cause === 'event' ? 'overlay_watch' : 'overlay_recheck').catch(() => undefined),
    });
    watch.start();
    watches.push(watch);
    // The start-up race: the file may have changed between the first read and the watch
    // being registered. One more read now (a no-op when the bytes are the same) closes it.
    await coordinator.request('overlay_watch');
  }
  return watches;
}

/** SIGUSR1 (logrotate's postrotate): the audit file at its path is opened again; logged either way. */
async function reopenAudit(svc: Services): Promise<void> {
  if (svc.audit === null) {
    svc.logger.info({ msg: 'SIGUSR1 ignored: no audit log is configured' });
    return;
  }
  const r = await svc.audit.reopen();
  svc.logger.info({ msg: 'audit file reopen', trigger: 'sigusr1', file: r.file, reopened: r.reopened, head_seq: r.head.seq });
}

interface SignalActions {
  reload(): void;
  reopenAudit(): void;
  stop(): Promise<void>;
  closing(): boolean;
  inflight(): number;
  readonly drainTimeoutMs: number;
}

/**
 * SIGHUP reloads; SIGTERM and SIGINT drain, then call stop's continuation. The handlers
 * stay installed until the drain is over: a signal during the drain must not fall back to
 * Node's default action, which would kill the in-flight requests.
 */
function installSignals(logger: Logger, actions: SignalActions): { uninstall(): void } {
  const onHup = (): void => {
    if (!actions.closing()) actions.reload();
    else logger.info({ msg: 'SIGHUP ignored: shutting down' });
  };
  // Without a handler SIGUSR1 would start Node's inspector; with one it reopens the audit file.
  const onUsr1 = (): void => {
    if (!actions.closing()) actions.reopenAudit();
    else logger.info({ msg: 'SIGUSR1 ignored: shutting down' });
  };
  const onStop = (signal: NodeJS.Signals): void => {
    if (actions.closing()) {
      logger.info({ msg: 'already shutting down', signal, inflight: actions.inflight() });
      return;
    }
    logger.info({ msg: 'shutting down', signal, inflight: actions.inflight(), drain_timeout_ms: actions.drainTimeoutMs });
    void actions.stop();
  };
  process.on('SIGHUP', onHup);
  process.on('SIGUSR1', onUsr1);
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  return {
    uninstall() {
      process.off('SIGHUP', onHup);
      process.off('SIGUSR1', onUsr1);
      process.off('SIGTERM', onStop);
      process.off('SIGINT', onStop);
    },
  };
}

/**
 * The drain Kubernetes expects: /readyz already answers 503 (traffic.draining).
 * For drain_delay_ms the listener still accepts, answering with Connection: close, while
 * endpoints stop sending traffic here; then it stops accepting and in-flight requests have
 * drain_timeout_ms to finish. Those its limit catches are ended in their own protocol: a
 * stream with its SSE error event, a request still waiting on a candidate with 503
 * shutting_down. Then everything closes.
 */
async function drain(listeners: Listeners, traffic: TrafficState, server: ServerConfig, svc: Services): Promise<void> {
  const { api, admin } = listeners;
  if (server.drain_delay_ms > 0) {
    svc.logger.info({ msg: 'drain delay: still accepting, /readyz answers 503', drain_delay_ms: server.drain_delay_ms });
    await new Promise((r) => setTimeout(r, server.drain_delay_ms));
  }
  const closed = Promise.all([closeServer(api), admin === null ? undefined : closeServer(admin)]);
  api.closeIdleConnections();
  admin?.closeIdleConnections();
  // An MCP session's GET stream never ends by itself: ended now, its client reconnects
  // (elsewhere, the connection closing) instead of holding the drain to its limit.
  svc.mcp.endStreams();
  const drained = await waitFor(() => traffic.inflight === 0, server.drain_timeout_ms);
  if (!drained) {
    svc.logger.warn({ msg: 'drain timeout: ending the requests still in flight', inflight: traffic.inflight });
    const why = `drain_timeout_ms (${server.drain_timeout_ms} ms) ran out`;
    for (const x of traffic.open) x.interrupt(why);
    // Their last words (an SSE error event, a 503) go out before the sockets close.
    await waitFor(() => traffic.inflight === 0, 1000);
  }
  // Before the connections close: the MCP clients end their upstream sessions.
  await svc.mcp.close();
  await svc.a2a.close();
  api.closeAllConnections();
  admin?.closeAllConnections();
  await closed;
  svc.tokens.stopAll();
  svc.auth.close();
  await svc.pools.destroyAll();
  await svc.governance.close();
  await svc.audit?.close();
  // What the last requests traced goes out before the process exits (bounded by the export timeout).
  await svc.tracing?.shutdown().catch(() => undefined);
  svc.accessLog.close();
  svc.logger.info({ msg: 'stopped', drained });
  flushLogger(svc.logger);
}

function* breakerStates(holder: GenerationHolder, breakers: BreakerRegistry): Generator<readonly [string, BreakerStateCode]> {
  if (!holder.ready) return;
  const gen = holder.current();
  for (const p of [...Object.values(gen.providers), ...Object.values(gen.tools.servers)]) {
    const state = breakers.stateOf(p.identity) ?? 'closed';
    yield [p.name, state === 'closed' ? 0 : state === 'open' ? 1 : 2];
  }
}

/**
 * A client that trickles its headers or its body is cut at the limit (about 76 s
 * and 136 s with Node's defaults, as Node checks only every 30 s). Both listeners get the
 * same limits.
 */
function serverOptions(server: ServerConfig): ServerOptions {
  return {
    headersTimeout: server.headers_timeout_ms,
    requestTimeout: Math.max(server.body_timeout_ms, server.headers_timeout_ms),
    keepAliveTimeout: server.keep_alive_timeout_ms,
    // How often Node looks for connections past those limits: often enough that a limit is
    // kept to within a second or a tenth of it.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(server.headers_timeout_ms / 10))),
  };
}

function limited(s: Server, server: ServerConfig): Server {
  s.maxConnections = server.max_connections;
  return s;
}

/** Why a listener could not bind, in words, with the system's code for a search. */
function why(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    EADDRINUSE: 'the address is already in use by another process',
    EACCES: 'permission denied (a port below 1024 needs privileges)',
    EADDRNOTAVAIL: 'no network interface here has that address',
  };
  const said = code === undefined ? undefined : words[code];
  return said === undefined ? (code ?? err.message) : `${said} (${code})`;
}

/** `key` is the config key that names the address, for the error's path. */
function listen(server: Server, hostPort: string, key: 'server.listen' | 'server.admin_listen'): Promise<string> {
  const { host, port } = splitHostPort(hostPort);
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(new StartupError([{ path: key, message: `cannot listen on ${hostPort}: ${why(err)}` }]));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const address = server.address() as AddressInfo;
      const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve(`http://${shown}:${address.port}`);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/**
 * A cloud credential fetched or refused, by provider (`Entra ID token fetched`, `AWS
 * credentials unavailable: ...`); the message names the authority's answer, never a secret,
 * a key or a token.
 */
function logTokenEvent(logger: Logger, e: TokenEvent): void {
  if (e.kind === 'fetched')
    logger.info({ msg: `${e.what} fetched`, provider: e.provider, lifetime_s: e.lifetimeS, refresh_in_ms: e.refreshInMs });
  else logger.warn({ msg: `${e.what} unavailable: ${e.message}`, provider: e.provider, retry_in_ms: e.retryInMs });
}
