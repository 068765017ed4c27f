import { createHash } from 'node:crypto';
import { type ConfigIssue, type GatewayConfig, loadConfigFile } from '../config/index.js';
import { checkSuccession, type ParsedOverlay, parseOverlay, readOverlayFile } from '../contract/index.js';
import {
  buildGeneration,
  diffGenerations,
  type Generation,
  type GenerationChanges,
  type ReloadTrigger,
  restartOnlyWarnings,
} from '../live/index.js';
import type { Services } from './services.js';

export type ReloadOutcome = 'applied' | 'unchanged' | 'rejected';

export interface ReloadResult {
  readonly trigger: ReloadTrigger;
  readonly result: ReloadOutcome;
  /** The generation serving after this reload. */
  readonly generation: number;
  readonly previous_generation: number | null;
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

/** Triggers that fire on file events: a rewrite with the same bytes is a no-op for them. */
const OVERLAY_TRIGGERS: ReadonlySet<ReloadTrigger> = new Set(['overlay_watch', 'overlay_recheck']);

/**
 * The reload path: read, validate, build, then swap; any failure keeps the serving
 * generation. Runs only through the ReloadCoordinator, so two reloads never interleave.
 * An explicit trigger (SIGHUP, the admin API) always rebuilds even when the config bytes
 * are unchanged, because a referenced secret file may have been rotated.
 */
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

  readonly #manageLogLevel: boolean;

  constructor(svc: Services, configPath: string, env: NodeJS.ProcessEnv, manageLogLevel = true) {
    this.#manageLogLevel = manageLogLevel;
    this.#svc = svc;
    this.#configPath = configPath;
    this.#env = env;
  }

  get startupConfig(): GatewayConfig | null {
    return this.#startupConfig;
  }

  readonly run = async (trigger: ReloadTrigger): Promise<ReloadResult> => {
    const started = performance.now();
    const { holder, metrics } = this.#svc;
    const serving = holder.ready ? holder.current() : null;
    const finish = (result: ReloadOutcome, extra: Partial<ReloadResult>): ReloadResult => {
      const durationMs = performance.now() - started;
      const record: ReloadResult = {
        trigger,
        result,
        generation: holder.ready ? holder.current().number : 0,
        revision: holder.ready ? (holder.current().overlay?.revision ?? null) : null,
        previous_generation: serving?.number ?? null,
        at: new Date().toISOString(),
        duration_ms: Math.round(durationMs * 1000) / 1000,
        changes: null,
        warnings: [],
        errors: [],
        ...extra,
      };
      metrics.reloads.inc({ trigger, result });
      metrics.reloadDuration.observe(durationMs / 1000);
      this.history.push(record);
      if (this.history.length > HISTORY) this.history.shift();
      this.#log(record);
      return record;
    };

    // An overlay event re-reads only the overlay; every other trigger re-reads the config too.
    let config: GatewayConfig;
    let sourceHash: string;
    if (serving !== null && OVERLAY_TRIGGERS.has(trigger)) {
      config = serving.config;
      sourceHash = serving.sourceHash;
    } else {
      const loaded = loadConfigFile(this.#configPath, this.#env);
      if (!loaded.ok) return finish('rejected', { errors: loaded.issues });
      if (serving !== null && trigger === 'config_watch' && loaded.sourceHash === serving.sourceHash) return finish('unchanged', {});
      if (serving !== null && (serving.config.routing.overlay === undefined) !== (loaded.config.routing.overlay === undefined)) {
        return finish('rejected', { errors: [{ path: 'routing', message: 'switching between routing.routes and routing.overlay takes a restart; the serving generation is kept' }] });
      }
      config = loaded.config;
      sourceHash = loaded.sourceHash;
    }

    let overlay: ParsedOverlay | null = null;
    const overlaySettings = config.routing.overlay;
    if (overlaySettings !== undefined) {
      const read = await readOverlayFile(overlaySettings.file, overlaySettings.max_bytes);
      if (!read.ok) return this.#rejectOverlay(finish, read.reason, read.message);
      if (serving?.overlay != null && OVERLAY_TRIGGERS.has(trigger) && sha256(read.bytes) === serving.overlay.rawSha256) {
        metrics.overlayReloads.inc({ result: 'unchanged', reason: '' });
        return finish('unchanged', {});
      }
      const parsed = parseOverlay(read.bytes, { expectedScope: overlaySettings.expected_scope });
      if (!parsed.ok) return this.#rejectOverlay(finish, parsed.reason, parsed.message);
      const succession = checkSuccession(serving?.overlay?.parsed, parsed.overlay);
      if (!succession.ok) return this.#rejectOverlay(finish, succession.reason, succession.message);
      this.acceptedRevision = parsed.overlay.revision;
      overlay = parsed.overlay;
    }

    const built = buildGeneration({
      config,
      sourceHash,
      number: (serving?.number ?? 0) + 1,
      env: this.#env,
      overlay,
      poolFor: (spec) => this.#svc.pools.acquire(spec),
    });
    if (!built.ok) return finish('rejected', { errors: built.issues });
    if (overlay !== null) metrics.overlayReloads.inc({ result: 'applied', reason: '' });
    const next = built.generation;
    const warnings = this.#startupConfig === null ? [] : restartOnlyWarnings(this.#startupConfig, next.config);
    for (const route of Object.values(next.routes)) {
      for (const c of Object.values(route.byStableId)) if (c.credentialProblem !== null) warnings.push(`${c.credentialProblem}; the candidate fails over until it can be read`);
    }
    for (const u of next.overlay?.unroutable ?? []) {
      warnings.push(`overlay candidate ${u.stable_id} (model ${u.model}) names cluster "${u.cluster}", which is not a configured provider: kept, never selected`);
    }
    const changes = diffGenerations(serving, next);
    this.#swap(next);
    this.#startupConfig ??= next.config;
    return finish('applied', { generation: next.number, revision: next.overlay?.revision ?? null, changes, warnings });
  };

  /** The swap and what must follow it, all synchronous: no request runs in between. */
  #swap(next: Generation): void {
    const { holder, breakers, pools, counters, affinity, metrics, logger } = this.#svc;
    holder.swap(next);
    const breaker = next.config.resilience.breaker;
    breakers.configure({ failureThreshold: breaker.failure_threshold, openBaseMs: breaker.open_base_ms, openMaxMs: breaker.open_max_ms });
    breakers.retain(next.identities);
    pools.retain(next.identities);
    counters.retain(next.counterKeys);
    const sessions = next.config.routing.session_affinity;
    if (sessions !== undefined) affinity.configure({ ttlMs: sessions.ttl_s * 1000, maxEntries: sessions.max_entries });
    if (this.#manageLogLevel) {
      logger.level = next.config.log.level;
      this.#svc.accessLog.setLevel(next.config.log.level);
    }
    metrics.generation.set(next.number);
    metrics.overlayUnroutable.set(next.overlay?.unroutable.length ?? 0);
    metrics.lastReloadSuccess.set(Date.now() / 1000);
  }

  #rejectOverlay(finish: (r: ReloadOutcome, extra: Partial<ReloadResult>) => ReloadResult, reason: string, message: string): ReloadResult {
    this.#svc.metrics.overlayReloads.inc({ result: 'rejected', reason });
    this.lastOverlayRejection = { at: new Date().toISOString(), reason, message };
    return finish('rejected', { reason, errors: [{ path: 'routing.overlay.file', message: `${reason}: ${message}` }] });
  }

  #log(record: ReloadResult): void {
    const { logger } = this.#svc;
    const line = {
      msg: 'reload',
      trigger: record.trigger,
      result: record.result,
      reason: record.reason,
      generation: record.generation,
      revision: record.revision ?? undefined,
      previous_generation: record.previous_generation,
      duration_ms: record.duration_ms,
      changes: record.changes === null ? undefined : summarize(record.changes),
      warnings: record.warnings.length > 0 ? record.warnings : undefined,
      errors: record.errors.length > 0 ? record.errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`)) : undefined,
    };
    if (record.result === 'rejected') logger.warn(line);
    else logger.info(line);
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function summarize(c: GenerationChanges): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(c)) {
    if (Array.isArray(value) ? value.length > 0 : value === true) out[key] = value;
  }
  return out;
}
