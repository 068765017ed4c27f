import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ConfigIssue, formatIssue, type ServerConfig } from '../config/index.js';
import { GenerationHolder, ReloadCoordinator, type ReloadTrigger } from '../live/index.js';
import { PoolRegistry } from '../providers/index.js';
import { BreakerRegistry } from '../resilience/index.js';
import { RoundRobinCounters, SessionAffinity } from '../routing/index.js';
import { AccessLog, type BreakerStateCode, createLogger, flushLogger, type Logger, Metrics } from '../telemetry/index.js';
import { splitHostPort } from './address.js';
import { createAdminHandler } from './admin.js';
import { createApiHandler, type TrafficState } from './api.js';
import { FileWatch } from './file-watch.js';
import { Reloader, type ReloadResult } from './reload.js';
import type { Services } from './services.js';

export interface GatewayOptions {
  readonly configPath: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: Logger;
  /** Where log lines go (a file descriptor or path); stdout by default. */
  readonly logDestination?: number | string;
  /** Install SIGHUP (reload) and SIGTERM/SIGINT (drain, then exit 0) handlers. */
  readonly handleSignals?: boolean;
  readonly random?: () => number;
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
 * together. The first generation is built by the same reload path that every later
 * trigger uses, so start-up and reload accept and refuse exactly the same inputs.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const env = options.env ?? process.env;
  const holder = new GenerationHolder();
  const breakers = new BreakerRegistry({ failureThreshold: 5, openBaseMs: 1000, openMaxMs: 30_000 });
  const logger = options.logger ?? createLogger({ level: 'info', destination: options.logDestination });
  const accessLog = new AccessLog({ level: logger.level, destination: options.logDestination, flushMs: 200 });
  const svc: Services = {
    holder,
    breakers,
    counters: new RoundRobinCounters(),
    affinity: new SessionAffinity({ ttlMs: 3_600_000, maxEntries: 10_000 }),
    pools: new PoolRegistry(),
    metrics: new Metrics(() => breakerStates(holder, breakers)),
    logger,
    accessLog,
    random: options.random ?? Math.random,
  };
  // A caller that passes its own logger owns its level; otherwise `log.level` sets it.
  const reloader = new Reloader(svc, options.configPath, env, options.logger === undefined);
  const coordinator = new ReloadCoordinator(reloader.run);

  const first = await coordinator.request('startup');
  if (first.result !== 'applied') throw new StartupError(first.errors);
  const server: ServerConfig = reloader.startupConfig!.server;

  const traffic: TrafficState = { inflight: 0, draining: false };
  const api = createServer({ keepAliveTimeout: 65_000, requestTimeout: 120_000 }, createApiHandler(svc, { maxBodyBytes: server.max_body_bytes }, traffic));
  const startedAt = Date.now();
  const admin = server.admin_listen === undefined
    ? null
    : createServer(createAdminHandler({ svc, reloader, requestReload: () => coordinator.request('admin'), startedAt }));
  const url = await listen(api, server.listen);
  const adminUrl = admin === null || server.admin_listen === undefined ? null : await listen(admin, server.admin_listen).catch(async (err: unknown) => {
    await closeServer(api);
    throw err;
  });

  const watches: FileWatch[] = [];
  if (server.watch_config) {
    const watch = new FileWatch({
      file: options.configPath,
      debounceMs: server.watch_debounce_ms,
      recheckMs: 10_000,
      onChange: (cause) => void coordinator.request(cause === 'event' ? 'config_watch' : 'config_recheck').catch(() => undefined),
    });
    watch.start();
    watches.push(watch);
  }

  const overlay = reloader.startupConfig!.routing.overlay;
  if (overlay !== undefined && overlay.reload.enabled) {
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

  let closing: Promise<void> | null = null;
  // The handlers stay installed until the drain is over: a signal during the drain must
  // not fall back to Node's default action, which would kill the in-flight requests.
  const onHup = (): void => {
    if (closing === null) void coordinator.request('sighup').catch(() => undefined);
    else logger.info({ msg: 'SIGHUP ignored: shutting down' });
  };
  const onStop = (signal: NodeJS.Signals): void => {
    if (closing !== null) {
      logger.info({ msg: 'already shutting down', signal, inflight: traffic.inflight });
      return;
    }
    logger.info({ msg: 'shutting down', signal, inflight: traffic.inflight, drain_timeout_ms: server.drain_timeout_ms });
    void close().then(() => options.onShutdown?.());
  };
  if (options.handleSignals === true) {
    process.on('SIGHUP', onHup);
    process.on('SIGTERM', onStop);
    process.on('SIGINT', onStop);
  }

  const close = (): Promise<void> => {
    closing ??= (async () => {
      traffic.draining = true;
      for (const w of watches) w.close();
      await coordinator.stop();
      const apiClosed = closeServer(api);
      const adminClosed = admin === null ? Promise.resolve() : closeServer(admin);
      api.closeIdleConnections();
      admin?.closeIdleConnections();
      const drained = await waitFor(() => traffic.inflight === 0, server.drain_timeout_ms);
      if (!drained) logger.warn({ msg: 'drain timeout: closing connections with requests in flight', inflight: traffic.inflight });
      api.closeAllConnections();
      admin?.closeAllConnections();
      await Promise.all([apiClosed, adminClosed]);
      await svc.pools.destroyAll();
      accessLog.close();
      logger.info({ msg: 'stopped', drained });
      flushLogger(logger);
      if (options.handleSignals === true) {
        process.off('SIGHUP', onHup);
        process.off('SIGTERM', onStop);
        process.off('SIGINT', onStop);
      }
    })();
    return closing;
  };

  logger.info({ msg: 'listening', url, admin_url: adminUrl, generation: holder.current().number });
  return { url, adminUrl, services: svc, reload: (trigger = 'admin') => coordinator.request(trigger), close };
}

function* breakerStates(holder: GenerationHolder, breakers: BreakerRegistry): Generator<readonly [string, BreakerStateCode]> {
  if (!holder.ready) return;
  for (const p of Object.values(holder.current().providers)) {
    const state = breakers.stateOf(p.identity) ?? 'closed';
    yield [p.name, state === 'closed' ? 0 : state === 'open' ? 1 : 2];
  }
}

function listen(server: Server, hostPort: string): Promise<string> {
  const { host, port } = splitHostPort(hostPort);
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(new StartupError([{ path: 'server', message: `cannot listen on ${hostPort}: ${(err as NodeJS.ErrnoException).code ?? err.message}` }]));
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
