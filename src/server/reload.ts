import { reload as auditReload } from '../audit/index.js';
import { type ConfigIssue, type DatabaseConfig, type GatewayConfig, responsesDefaults } from '../config/index.js';
import type { ManagedSnapshot, TopologySnapshot } from '../database/index.js';
import {
  diffGenerations,
  diffGenerationsInSlices,
  diffKeyrings,
  type Generation,
  type GenerationChanges,
  type InputsRead,
  type Keyring,
  type Preparation,
  prepareGeneration,
  prepareKeyring,
  type ReloadTrigger,
} from '../live/index.js';
import type { TokenSource } from '../providers/index.js';
import { policyOf, type Services } from '../request/index.js';

export type ReloadOutcome = 'applied' | 'unchanged' | 'rejected';

export interface ReloadResult {
  readonly trigger: ReloadTrigger;
  readonly result: ReloadOutcome;
  /** The generation serving after this reload. */
  readonly generation: number;
  readonly previous_generation: number | null;
  /** The keyring serving after this reload, and before it. */
  readonly keyring: number;
  readonly previous_keyring: number | null;
  /**
   * What this reload built and swapped: both for a config file's change, the keyring only
   * for a database change (trigger `database`), the generation only for an overlay's; none
   * when nothing was applied.
   */
  readonly built: ReadonlyArray<'generation' | 'keyring'>;
  readonly at: string;
  readonly duration_ms: number;
  readonly changes: GenerationChanges | null;
  readonly warnings: readonly string[];
  readonly errors: readonly ConfigIssue[];
  /** For a rejected overlay: the contract's reason category (digest_mismatch, rollback, …). */
  readonly reason?: string;
  /** The overlay revision serving after this reload (overlay mode). */
  readonly revision?: string | null;
}

const HISTORY = 20;

/**
 * Triggers an operator fired on purpose: they re-read everything and rebuild even when no
 * byte changed (a referenced secret file may have been rotated). Watcher triggers no-op
 * on identical bytes.
 */
const EXPLICIT_TRIGGERS: ReadonlySet<ReloadTrigger> = new Set(['startup', 'sighup', 'admin']);

/** The slow safety-net timers: most of their runs find nothing new. */
const RECHECK_TRIGGERS: ReadonlySet<ReloadTrigger> = new Set(['config_recheck', 'overlay_recheck']);

/**
 * The reload path: prepareGeneration() reads, validates and builds (the same function that
 * `switchyard validate` runs), then this class swaps and keeps the books; any failure keeps
 * the serving generation. Runs only through the ReloadCoordinator, so two reloads never interleave.
 * An explicit trigger (SIGHUP, the admin API) always rebuilds even when the config bytes
 * are unchanged, because a referenced secret file may have been rotated.
 */
/** How the reloader reads the database's providers, routes and prices: all of them, or only their version. */
export interface TopologyReads {
  readonly snapshot: (settings: DatabaseConfig) => Promise<TopologySnapshot>;
  readonly version: (settings: DatabaseConfig) => Promise<number>;
}

export class Reloader {
  readonly #svc: Services;
  readonly #configPath: string;
  readonly #env: NodeJS.ProcessEnv;
  /** The config the listeners were started with: restart-only keys are compared to it. */
  #startupConfig: GatewayConfig | null = null;
  readonly history: ReloadResult[] = [];
  /** The last overlay revision that passed contract validation. */
  acceptedRevision: string | null = null;
  /** The last overlay rejection, for /admin/status. */
  lastOverlayRejection: { at: string; reason: string; message: string } | null = null;
  /** The last rejected reload of any input, kept when the history of 20 has moved on (status page). */
  lastRejection: ReloadResult | null = null;
  /** When the serving overlay revision began serving (a config reload that keeps it keeps this). */
  revisionServingSince: string | null = null;
  /** Raw SHA-256 of the inputs the reload in progress has read: what #finish judges a refusal by. */
  #inputs: InputsRead = { config: null, overlay: null };
  /**
   * The last refusal of a config and of an overlay: the refused bytes' SHA-256, the serving
   * generation they were judged against, and the errors. A watcher or re-check that meets
   * the same refusal again is routine, not news (see #finish).
   */
  #refusedConfig: string | null = null;
  #refusedOverlay: string | null = null;

  readonly #manageLogLevel: boolean;
  readonly #managed: ((settings: DatabaseConfig) => Promise<ManagedSnapshot>) | undefined;
  readonly #topology: TopologyReads | undefined;

  constructor(
    svc: Services,
    configPath: string,
    env: NodeJS.ProcessEnv,
    manageLogLevel = true,
    managed?: (settings: DatabaseConfig) => Promise<ManagedSnapshot>,
    topology?: TopologyReads,
  ) {
    this.#manageLogLevel = manageLogLevel;
    this.#managed = managed;
    this.#topology = topology;
    this.#svc = svc;
    this.#configPath = configPath;
    this.#env = env;
  }

  get startupConfig(): GatewayConfig | null {
    return this.#startupConfig;
  }

  /**
   * Puts the first generation in service: the one start-up prepared with the same
   * prepareGeneration() every reload runs, before the services existed. The swap happens now,
   * so a request never meets an empty holder; its `startup` record (log line, history,
   * metrics, audit) is made by the returned announce(), which start-up calls once the listeners
   * are bound: a start that cannot bind reports only that failure, never a generation that did
   * not serve.
   */
  adopt(prepared: Preparation & { readonly outcome: 'built' }, started: number): () => ReloadResult {
    this.#inputs = prepared.read;
    const details = this.#apply(prepared, diffGenerations(null, prepared.generation));
    return () => this.#finish('startup', started, null, null, 'applied', details);
  }

  readonly run = async (trigger: ReloadTrigger): Promise<ReloadResult> => {
    const started = performance.now();
    const serving = this.#svc.holder.ready ? this.#svc.holder.current() : null;
    const servingKeyring = this.#svc.keyring.ready ? this.#svc.keyring.current() : null;
    const finish = (result: ReloadOutcome, extra: Partial<ReloadResult>): ReloadResult =>
      this.#finish(trigger, started, serving, servingKeyring, result, extra);
    try {
      // A database change (an admin write here, or another replica's) that changed keys and
      // teams only rebuilds and swaps the keyring, and no provider or route. One that changed
      // providers, routes or prices rebuilds the generation from the serving config file's
      // part and the database's rows (the file is not read again).
      if (trigger === 'database' && serving !== null && servingKeyring !== null && !(await this.#topologyChanged(serving)))
        return await this.#runKeyring(serving, servingKeyring, finish);
      const prepared = await this.#prepare(trigger, serving);
      // A provider whose cloud auth changed gets its first token before it serves (each
      // fetch is bounded), so the swap does not fail its requests over while it is fetched.
      if (prepared.outcome === 'built') await this.#svc.tokens.settled();
      // In slices too, before the swap: a diff of tens of thousands of routes takes a while.
      const changes = prepared.outcome === 'built' ? await diffGenerationsInSlices(serving, prepared.generation) : null;
      return this.#conclude(prepared, changes, finish);
    } catch (err) {
      // A reload failure is never fatal: whatever went wrong, the serving generation stays.
      this.#svc.logger.error({
        msg: 'reload failed unexpectedly',
        trigger,
        err: { name: (err as Error)?.name, stack: (err as Error)?.stack },
      });
      return finish('rejected', {
        errors: [{ path: '', message: `reload failed unexpectedly: ${(err as Error)?.message ?? String(err)}` }],
      });
    }
  };

  async #runKeyring(
    serving: Generation,
    servingKeyring: Keyring,
    finish: (result: ReloadOutcome, extra: Partial<ReloadResult>) => ReloadResult,
  ): Promise<ReloadResult> {
    const prepared = await prepareKeyring(servingKeyring, serving.config, this.#managed);
    if (prepared.outcome === 'unchanged') return finish('unchanged', {});
    if (prepared.outcome === 'rejected') return finish('rejected', { errors: prepared.issues });
    const access = accessChange(servingKeyring, prepared.keyring);
    this.#swapKeyring(prepared.keyring);
    if (access !== null) this.#svc.logger.warn({ msg: 'access changed', keyring: prepared.keyring.number, change: access });
    return finish('applied', {
      changes: { ...NO_ROUTING_CHANGES, ...diffKeyrings(servingKeyring, prepared.keyring) },
      built: ['keyring'],
      warnings: access === null ? [...prepared.warnings] : [access, ...prepared.warnings],
    });
  }

  /** A keyring swap and what must follow it, synchronous: no request runs in between. */
  #swapKeyring(next: Keyring): void {
    // Compiled before the swap, so no request pays for it (request/policy.ts caches it by keyring).
    policyOf(next);
    this.#svc.keyring.swap(next);
    // Sessions of a key no longer accepted end; lists the new limits change are told.
    this.#svc.mcp.syncKeyring(next);
  }

  /**
   * Whether the database's topology version is not the one the serving generation was built
   * from (one row read); false when it cannot be read: the keyring's own read reports that.
   */
  async #topologyChanged(serving: Generation): Promise<boolean> {
    const settings = serving.fileConfig.database;
    if (settings === undefined || this.#topology === undefined || serving.topology.mode === null) return false;
    try {
      return (await this.#topology.version(settings)) !== serving.topology.version;
    } catch {
      return false;
    }
  }

  #prepare(trigger: ReloadTrigger, serving: Generation | null): Promise<Preparation> {
    const explicit = EXPLICIT_TRIGGERS.has(trigger);
    return prepareGeneration({
      configPath: this.#configPath,
      env: this.#env,
      serving,
      servingKeyring: this.#svc.keyring.ready ? this.#svc.keyring.current() : null,
      startupConfig: this.#startupConfig,
      // An overlay event re-reads only the overlay; every other trigger re-reads the config too.
      readConfig: explicit || trigger === 'config_watch' || trigger === 'config_recheck',
      unchangedIsNoop: !explicit,
      poolFor: (spec) => this.#svc.pools.acquire(spec),
      cloudAuth: this.#svc.tokens,
      ...(this.#managed === undefined ? {} : { managed: this.#managed }),
      ...(this.#topology === undefined ? {} : { topology: this.#topology.snapshot }),
    });
  }

  /** What a preparation means for the serving generation: a swap, a no-op or a refusal, with the books kept. */
  #conclude(
    prepared: Preparation,
    /** From serving to the prepared generation, when one was built. */
    changes: GenerationChanges | null,
    finish: (result: ReloadOutcome, extra: Partial<ReloadResult>) => ReloadResult,
  ): ReloadResult {
    const { metrics } = this.#svc;
    this.#inputs = prepared.read;
    if (prepared.outcome === 'unchanged') {
      if (prepared.overlayRead) metrics.overlayReloads.inc({ result: 'unchanged', reason: '' });
      return finish('unchanged', {});
    }
    if (prepared.outcome === 'rejected') {
      if (prepared.acceptedRevision !== undefined) this.acceptedRevision = prepared.acceptedRevision;
      // A refused build may have started sources for auth it did not keep.
      const serving = this.#svc.holder.ready ? this.#svc.holder.current() : null;
      this.#svc.tokens.retain(serving === null ? [] : cloudSources(serving));
      if (prepared.overlay !== undefined) return this.#rejectOverlay(finish, prepared.overlay.reason, prepared.overlay.message);
      return finish('rejected', { errors: prepared.issues });
    }
    return finish('applied', this.#apply(prepared, changes));
  }

  /** Swaps a built generation in; what its record will say. */
  #apply(prepared: Preparation & { readonly outcome: 'built' }, changes: GenerationChanges | null): Partial<ReloadResult> {
    const next = prepared.generation;
    if (next.overlay !== null) {
      this.acceptedRevision = next.overlay.revision;
      this.#svc.metrics.overlayReloads.inc({ result: 'applied', reason: '' });
    }
    const servingKeyring = this.#svc.keyring.ready ? this.#svc.keyring.current() : null;
    const keyringBuilt = prepared.keyring !== servingKeyring;
    const access = accessChange(servingKeyring, prepared.keyring);
    // The keyring first: the generation's swap tells the MCP sessions, and they read it.
    if (keyringBuilt) this.#swapKeyring(prepared.keyring);
    this.#swap(next);
    this.#startupConfig ??= next.config;
    // Callers that worked a second ago are refused from now on (or anyone is served): never silently.
    if (access !== null) this.#svc.logger.warn({ msg: 'access changed', generation: next.number, change: access });
    return {
      generation: next.number,
      keyring: prepared.keyring.number,
      revision: next.overlay?.revision ?? null,
      // Teams and keys as the keyring holds them: the file's and the database's together.
      changes: changes === null ? null : { ...changes, ...diffKeyrings(servingKeyring, prepared.keyring) },
      built: keyringBuilt ? ['generation', 'keyring'] : ['generation'],
      warnings: access === null ? [...prepared.warnings] : [access, ...prepared.warnings],
    };
  }

  #finish(
    trigger: ReloadTrigger,
    started: number,
    serving: Generation | null,
    servingKeyring: Keyring | null,
    judged: ReloadOutcome,
    details: Partial<ReloadResult>,
  ): ReloadResult {
    const { holder, keyring, metrics } = this.#svc;
    const durationMs = performance.now() - started;
    const repeated = judged === 'rejected' && this.#repeatsRefusal(trigger, serving, details);
    this.#inputs = { config: null, overlay: null };
    if (judged === 'applied') {
      this.#refusedConfig = null;
      this.#refusedOverlay = null;
    }
    // The same bytes refused again for the same reason: nothing new to report.
    const result: ReloadOutcome = repeated ? 'unchanged' : judged;
    const extra: Partial<ReloadResult> = repeated ? {} : details;
    const record: ReloadResult = {
      trigger,
      result,
      generation: holder.ready ? holder.current().number : 0,
      revision: holder.ready ? (holder.current().overlay?.revision ?? null) : null,
      previous_generation: serving?.number ?? null,
      keyring: keyring.ready ? keyring.current().number : 0,
      previous_keyring: servingKeyring?.number ?? null,
      built: [],
      at: new Date().toISOString(),
      duration_ms: Math.round(durationMs * 1000) / 1000,
      changes: null,
      warnings: [],
      errors: [],
      ...extra,
    };
    metrics.reloads.inc({ trigger, result });
    if (result === 'rejected') metrics.lastReloadRejection.set(Date.now() / 1000);
    metrics.reloadDuration.observe(durationMs / 1000);
    // A safety-net re-check that found nothing new is routine: it stays out of the history
    // (so real results are not pushed out every 10 s) and logs at debug. A file event that
    // changed nothing is still worth a line: someone touched the file. A refusal met again
    // is routine whatever noticed it: the first one was reported, and is still in force.
    const routine = result === 'unchanged' && (RECHECK_TRIGGERS.has(trigger) || repeated);
    if (result === 'rejected') this.lastRejection = record;
    if (!routine) {
      this.history.push(record);
      if (this.history.length > HISTORY) this.history.shift();
    }
    this.#log(record, routine);
    if (!routine) this.#audit(record);
    return record;
  }

  /** The swap and what must follow it, all synchronous: no request runs in between. */
  #swap(next: Generation): void {
    const { holder, breakers, pools, tokens, counters, affinity, responses, metrics, logger } = this.#svc;
    const revisionBefore = holder.ready ? (holder.current().overlay?.revision ?? null) : null;
    holder.swap(next);
    const revision = next.overlay?.revision ?? null;
    if (revision !== revisionBefore) this.revisionServingSince = revision === null ? null : new Date().toISOString();
    const breaker = next.config.resilience.breaker;
    breakers.configure({ failureThreshold: breaker.failure_threshold, openBaseMs: breaker.open_base_ms, openMaxMs: breaker.open_max_ms });
    breakers.retain(next.identities);
    pools.retain(
      [...Object.values(next.providers), ...Object.values(next.tools.servers), ...Object.values(next.agents.servers)].map((p) => p.pool),
    );
    tokens.retain(cloudSources(next));
    // The trusted issuers follow the generation; those whose key source is unchanged keep their keys.
    this.#svc.auth.configure(next.config.auth?.jwt);
    counters.retain(next.counterKeys);
    const sessions = next.config.routing.session_affinity;
    if (sessions !== undefined) affinity.configure({ ttlMs: sessions.ttl_s * 1000, maxEntries: sessions.max_entries });
    const owners = next.config.routing.responses ?? responsesDefaults;
    responses.configure({ ttlMs: owners.ttl_s * 1000, maxEntries: owners.max_entries });
    // The store's backend (routing.responses.store) is kept: changing it takes a restart, as the reload warns.
    this.#svc.responseStore.configure({ ttlS: owners.ttl_s, maxEntries: owners.max_entries, retentionDays: owners.retention_days });
    if (this.#manageLogLevel) {
      logger.level = next.config.log.level;
      this.#svc.accessLog.setLevel(next.config.log.level);
    }
    // The MCP servers' clients follow the new generation, and sessions whose tool list changed are told.
    this.#svc.mcp.sync(next);
    // The upstream agents' cards: a new or moved agent's is read now.
    void this.#svc.a2a.sync(next);
    metrics.generation.set(next.number);
    metrics.overlayUnroutable.set(next.overlay?.unroutable.length ?? 0);
    metrics.lastReloadSuccess.set(Date.now() / 1000);
  }

  #rejectOverlay(finish: (r: ReloadOutcome, extra: Partial<ReloadResult>) => ReloadResult, reason: string, message: string): ReloadResult {
    const record = finish('rejected', { reason, errors: [{ path: 'routing.overlay.file', message: `${reason}: ${message}` }] });
    if (record.result === 'rejected') {
      this.#svc.metrics.overlayReloads.inc({ result: 'rejected', reason });
      this.lastOverlayRejection = { at: record.at, reason, message };
    } else {
      // A repeated refusal (#finish): the first one's time and count stand.
      this.#svc.metrics.overlayReloads.inc({ result: 'unchanged', reason: '' });
    }
    return record;
  }

  /**
   * Whether this refusal repeats the last one of its kind: the same raw bytes (the overlay
   * for an overlay refusal, else the config), judged against the same serving generation,
   * with the same errors. It always records the refusal as the latest. Explicit triggers
   * (start-up, SIGHUP, the admin API) are never a repeat: an operator asked for a verdict,
   * and they re-read referenced secrets, so they are judged and reported afresh.
   */
  #repeatsRefusal(trigger: ReloadTrigger, serving: Generation | null, details: Partial<ReloadResult>): boolean {
    const overlay = details.reason !== undefined;
    const bytes = overlay ? this.#inputs.overlay : (this.#inputs.config ?? serving?.sourceHash ?? null);
    const refusal = JSON.stringify([serving?.number ?? null, bytes, details.errors ?? []]);
    const last = overlay ? this.#refusedOverlay : this.#refusedConfig;
    if (overlay) this.#refusedOverlay = refusal;
    else this.#refusedConfig = refusal;
    return refusal === last && !EXPLICIT_TRIGGERS.has(trigger);
  }

  #audit(record: ReloadResult): void {
    const reason =
      record.reason ??
      (record.errors.length > 0 ? record.errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`)).join('; ') : null);
    this.#svc.audit?.append(
      auditReload({
        trigger: record.trigger,
        result: record.result,
        generation: record.generation,
        keyring: record.keyring,
        revision: record.revision ?? null,
        reason,
      }),
    );
  }

  #log(record: ReloadResult, routine: boolean): void {
    const { logger } = this.#svc;
    const line = {
      msg: 'reload',
      trigger: record.trigger,
      result: record.result,
      reason: record.reason,
      generation: record.generation,
      revision: record.revision ?? undefined,
      previous_generation: record.previous_generation,
      keyring: record.keyring,
      built: record.built.length > 0 ? record.built : undefined,
      duration_ms: record.duration_ms,
      changes: record.changes === null ? undefined : summarize(record.changes),
      warnings: record.warnings.length > 0 ? record.warnings : undefined,
      errors: record.errors.length > 0 ? record.errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`)) : undefined,
    };
    if (record.result === 'rejected') logger.warn(line);
    else if (routine) logger.debug(line);
    else logger.info(line);
  }
}

/**
 * A gateway with no key is open (every caller is anonymous); one key, from the file or the
 * database, closes it. The sentence for a reload that crosses that line, or null.
 */
export function accessChange(serving: Keyring | null, next: Keyring): string | null {
  if (serving === null) return null;
  const wasOpen = policyOf(serving).keys.open;
  const keys = policyOf(next).keys;
  if (wasOpen && !keys.open) {
    const ids = [...keys.byId.keys()];
    const named = `${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ` and ${ids.length - 5} more` : ''}`;
    return `the gateway was open and now requires an API key (key${ids.length === 1 ? '' : 's'} ${named}): a request without a valid key, which was served until now, gets 401 unauthorized`;
  }
  if (!wasOpen && keys.open)
    return 'no API key is configured any more: the gateway is now open, and serves every request without a key, as anonymous';
  return null;
}

/** A keyring-only swap's changes: no provider, route, price, revision or tool changed. */
const NO_ROUTING_CHANGES: GenerationChanges = Object.freeze({
  providersAdded: [],
  providersRemoved: [],
  providersChanged: [],
  routesAdded: [],
  routesRemoved: [],
  routesChanged: [],
  pricingChanged: false,
  revisionChanged: false,
  candidatesAdded: [],
  candidatesRemoved: [],
  toolsAdded: [],
  toolsRemoved: [],
  toolsChanged: [],
  agentsAdded: [],
  agentsRemoved: [],
  agentsChanged: [],
  teamsAdded: [],
  teamsRemoved: [],
  teamsChanged: [],
  keysAdded: [],
  keysRemoved: [],
  keysChanged: [],
});

function summarize(c: GenerationChanges): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(c)) {
    if (Array.isArray(value) ? value.length > 0 : value === true) out[key] = value;
  }
  return out;
}

/** The cloud credential sources a generation's providers use. */
function cloudSources(gen: Generation): TokenSource<unknown>[] {
  const out: TokenSource<unknown>[] = [];
  for (const p of Object.values(gen.providers)) {
    if (p.bearer !== null) out.push(p.bearer);
    if (p.signer !== null) out.push(p.signer.keys);
  }
  return out;
}
