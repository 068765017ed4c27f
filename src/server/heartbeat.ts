import { hostname } from 'node:os';
import type { ReplicaRecord, ReplicaRecords } from '../database/index.js';
import type { GenerationHolder } from '../live/index.js';
import type { Logger, Metrics } from '../telemetry/index.js';
import type { ReloadResult } from './reload.js';

// This replica's heartbeat: every half database.recheck_ms (and right after every reload
// that did something), the generation it serves, its topology digest, when it was built and
// its last refused reload go to the records the replicas share (database/replicas.ts). The
// timer is unref'd and off the request path; a store that fails is logged once per streak
// and tried again at the next beat, never thrown. /admin/v1/replicas and the status page read
// the records back and mark the replicas that lag (replicasView).

/** This process, as audit records and traces name it; fixed at load so it never changes under a replica. */
export const INSTANCE = `${hostname()}:${process.pid}`;

/** The beat's period without database.recheck_ms (no database, or recheck_ms 0). */
const DEFAULT_INTERVAL_MS = 2500;
/** No faster than this, whatever recheck_ms says. */
const MIN_INTERVAL_MS = 250;
/** A record this long without a heartbeat, at least, is deleted by whichever replica beats next. */
const MIN_GONE_MS = 60_000;
/** How long a clean stop waits for its record to be deleted. */
const REMOVE_TIMEOUT_MS = 2000;

export interface HeartbeatTiming {
  readonly intervalMs: number;
  /** A replica whose digest lags the newest, or whose heartbeat is silent, this long is behind. */
  readonly behindAfterMs: number;
  readonly goneAfterMs: number;
}

/**
 * From database.recheck_ms (null without a database): the beat is every half of it, and a
 * replica is behind after recheck_ms, or after two missed beats when the floor stretched them.
 */
export function heartbeatTiming(recheckMs: number | null): HeartbeatTiming {
  const intervalMs = recheckMs === null || recheckMs === 0 ? DEFAULT_INTERVAL_MS : Math.max(MIN_INTERVAL_MS, Math.floor(recheckMs / 2));
  const behindAfterMs = Math.max(recheckMs ?? 0, 2 * intervalMs);
  return { intervalMs, behindAfterMs, goneAfterMs: Math.max(10 * behindAfterMs, MIN_GONE_MS) };
}

/** A record as the views show it: `behind` added, digest_since kept for who wants the detail. */
export interface ReplicaRow extends ReplicaRecord {
  readonly behind: boolean;
}

export interface ReplicasView {
  /** The digest of the most recently built generation among the replicas heard from lately. */
  readonly newest_digest: string | null;
  /** Which row is this replica. */
  readonly instance: string;
  /** Where the records are kept: `database`, `redis`, or `local` (this replica alone). */
  readonly store: 'database' | 'redis' | 'local';
  readonly behind_after_ms: number;
  readonly data: readonly ReplicaRow[];
}

/**
 * Which replicas are behind: those whose heartbeat is older than behindAfterMs, and those
 * whose digest is not the newest one (the digest of the most recently built generation among
 * the replicas not silent) when that newest digest has been served for longer than
 * behindAfterMs: a replica that is still reloading is not flagged at once.
 */
export function markBehind(
  records: readonly ReplicaRecord[],
  nowMs: number,
  behindAfterMs: number,
): { newest: string | null; rows: ReplicaRow[] } {
  const silent = (r: ReplicaRecord): boolean => nowMs - Date.parse(r.heartbeat_at) > behindAfterMs;
  const live = records.filter((r) => !silent(r));
  const pool = live.length > 0 ? live : records;
  let newest: ReplicaRecord | null = null;
  for (const r of pool) if (newest === null || r.built_at > newest.built_at) newest = r;
  const digest = newest?.digest ?? null;
  let since = Number.POSITIVE_INFINITY;
  for (const r of pool) if (r.digest === digest) since = Math.min(since, Date.parse(r.digest_since));
  const lagging = nowMs - since > behindAfterMs;
  return { newest: digest, rows: records.map((r) => ({ ...r, behind: silent(r) || (r.digest !== digest && lagging) })) };
}

/** A refused reload's message, as its record says it (the reason, or each error with its path). */
function refusalOf(r: ReloadResult): string {
  if (r.reason !== undefined && r.errors.length === 0) return r.reason;
  const errors = r.errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`)).join('; ');
  return errors === '' ? (r.reason ?? 'refused') : errors;
}

export class ReplicaHeartbeat {
  readonly instance = INSTANCE;
  readonly timing: HeartbeatTiming;
  readonly #holder: GenerationHolder;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  #records: ReplicaRecords | null = null;
  #close: (() => Promise<void>) | null = null;
  #digest: string | null = null;
  #digestSince = '';
  #lastReloadError: string | null = null;
  #timer: NodeJS.Timeout | null = null;
  #beating: Promise<void> | null = null;
  /** A beat was asked for while one ran: one more follows it. */
  #again = false;
  #failing = false;
  #stopped = false;

  constructor(holder: GenerationHolder, logger: Logger, metrics: Metrics, recheckMs: number | null) {
    this.#holder = holder;
    this.#logger = logger;
    this.#metrics = metrics;
    this.timing = heartbeatTiming(recheckMs);
  }

  /** Begins beating into `records` (null: this replica alone, nothing is written); `close` lets go of their connection. */
  start(records: ReplicaRecords | null, close: (() => Promise<void>) | null = null): void {
    if (this.#stopped || this.#records !== null) return;
    this.#records = records;
    this.#close = close;
    if (records !== null) this.beat();
  }

  /** After every reload: a refusal is noted, a success clears it, and either is written at once. */
  afterReload(result: ReloadResult): void {
    if (result.result === 'unchanged') return;
    this.#lastReloadError = result.result === 'rejected' ? refusalOf(result) : null;
    this.local(Date.now());
    this.beat();
  }

  /** Where the records are kept (`local`: nowhere shared, or not started). */
  get store(): ReplicasView['store'] {
    return this.#records?.kind ?? 'local';
  }

  /** This replica's record now. */
  local(nowMs: number): ReplicaRecord {
    const gen = this.#holder.current();
    const now = new Date(nowMs).toISOString();
    if (gen.digest !== this.#digest) {
      this.#digest = gen.digest;
      this.#digestSince = now;
    }
    return {
      instance: this.instance,
      generation: gen.number,
      digest: gen.digest,
      built_at: gen.builtAt,
      heartbeat_at: now,
      digest_since: this.#digestSince,
      last_reload_error: this.#lastReloadError,
    };
  }

  /** Every replica's record (this one's as of now), each marked behind or not. Throws when the store does not answer. */
  async view(): Promise<ReplicasView> {
    const records = this.#records;
    const stored = records === null ? [] : await records.list();
    const nowMs = Date.now();
    const all = stored.filter((r) => r.instance !== this.instance);
    all.push(this.local(nowMs));
    all.sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
    const { newest, rows } = markBehind(all, nowMs, this.timing.behindAfterMs);
    return {
      newest_digest: newest,
      instance: this.instance,
      store: this.store,
      behind_after_ms: this.timing.behindAfterMs,
      data: rows,
    };
  }

  /** This replica alone, as view() shows it when the shared records cannot be read. */
  localView(): ReplicasView {
    const nowMs = Date.now();
    const { newest, rows } = markBehind([this.local(nowMs)], nowMs, this.timing.behindAfterMs);
    return { newest_digest: newest, instance: this.instance, store: 'local', behind_after_ms: this.timing.behindAfterMs, data: rows };
  }

  /** A beat now, unless one is running (then one more after it); the next is scheduled from its end. */
  beat(): void {
    if (this.#stopped || this.#records === null) return;
    if (this.#beating !== null) {
      this.#again = true;
      return;
    }
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#beating = this.#write(this.#records).finally(() => {
      this.#beating = null;
      if (this.#stopped) return;
      if (this.#again) {
        this.#again = false;
        this.beat();
        return;
      }
      this.#timer = setTimeout(() => this.beat(), this.timing.intervalMs);
      this.#timer.unref();
    });
  }

  async #write(records: ReplicaRecords): Promise<void> {
    const nowMs = Date.now();
    try {
      await records.beat(this.local(nowMs), new Date(nowMs - this.timing.goneAfterMs).toISOString());
      if (this.#failing) this.#logger.info({ msg: 'replica heartbeat written again', store: records.kind });
      this.#failing = false;
    } catch (err) {
      this.#metrics.heartbeatFailures.inc({ store: records.kind });
      // Once per streak: a store that is down for an hour is one line, not one per beat.
      if (!this.#failing)
        this.#logger.warn({
          msg: 'replica heartbeat not written: other replicas see this one as behind until it is',
          store: records.kind,
          error: (err as Error)?.message ?? String(err),
        });
      this.#failing = true;
    }
  }

  /** Stops beating and deletes this replica's record (bounded: a store that is down is not waited for). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const records = this.#records;
    if (records === null) return;
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([
      (async () => {
        // After the beat in flight, or it could write the record back.
        await this.#beating;
        await records.remove(this.instance);
      })().catch(() => undefined),
      new Promise<void>((resolve) => {
        timeout = setTimeout(resolve, REMOVE_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timeout);
    await this.#close?.().catch(() => undefined);
  }
}
