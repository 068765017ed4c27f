import { type ConfigIssue, type GatewayConfig, loadConfigFile } from '../config/index.js';
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
}

const HISTORY = 20;

/** Triggers that fire on file events: a rewrite with the same bytes is a no-op for them. */
const WATCH_TRIGGERS: ReadonlySet<ReloadTrigger> = new Set(['config_watch', 'overlay_watch', 'overlay_recheck']);

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

  constructor(svc: Services, configPath: string, env: NodeJS.ProcessEnv) {
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

    const loaded = loadConfigFile(this.#configPath);
    if (!loaded.ok) return finish('rejected', { errors: loaded.issues });
    if (serving !== null && WATCH_TRIGGERS.has(trigger) && loaded.sourceHash === serving.sourceHash) {
      return finish('unchanged', {});
    }
    const built = buildGeneration({
      config: loaded.config,
      sourceHash: loaded.sourceHash,
      number: (serving?.number ?? 0) + 1,
      env: this.#env,
      poolFor: (spec) => this.#svc.pools.acquire(spec),
    });
    if (!built.ok) return finish('rejected', { errors: built.issues });

    const next = built.generation;
    const warnings = this.#startupConfig === null ? [] : restartOnlyWarnings(this.#startupConfig, next.config);
    const changes = diffGenerations(serving, next);
    this.#swap(next);
    this.#startupConfig ??= next.config;
    return finish('applied', { generation: next.number, changes, warnings });
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
    logger.level = next.config.log.level;
    metrics.generation.set(next.number);
    metrics.lastReloadSuccess.set(Date.now() / 1000);
  }

  #log(record: ReloadResult): void {
    const { logger } = this.#svc;
    const line = {
      msg: 'reload',
      trigger: record.trigger,
      result: record.result,
      generation: record.generation,
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

function summarize(c: GenerationChanges): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(c)) {
    if (Array.isArray(value) ? value.length > 0 : value === true) out[key] = value;
  }
  return out;
}
