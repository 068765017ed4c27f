import { randomUUID } from 'node:crypto';
import type { Scope } from './limits.js';
import { NO_RATE_LIMIT, utcDayStamp, utcMonthStamp } from './limits.js';
import {
  type Actual,
  type GovernanceStore,
  GovernanceStoreError,
  type MaybePromise,
  type Reservation,
  type ReserveInput,
  type ReserveResult,
  type ScopeStatus,
  type SharedRecords,
  scopeRef,
} from './store.js';

/** `governance.on_store_error`: refuse (503) or serve unenforced while the store is down. */
export type OnStoreError = 'fail_open' | 'fail_closed';

export interface StoreFailure {
  readonly operation: 'reserve' | 'settle' | 'release' | 'status' | 'record';
  readonly policy: OnStoreError;
  readonly message: string;
}

/**
 * Why a served request's usage is missing from the books: it was admitted unenforced under
 * fail_open (nothing was reserved, so its settle has nothing to true up), or its settle
 * failed (its reservation is given back when it expires; the spend is in the books only if
 * Redis ran the settle after this process stopped waiting for it).
 */
export type UnbookedReason = 'fail_open' | 'settle_failed';

/** Whether the store answered its last call, and the last failure, for probes and dashboards. */
export interface StoreHealth {
  /** False from a failed call until the next one that succeeds. */
  readonly up: boolean;
  readonly lastError: { readonly operation: StoreFailure['operation']; readonly message: string; readonly atMs: number } | null;
}

export interface PolicedStore extends GovernanceStore {
  /** Store errors since start (every operation), for `switchyard_governance_store_errors_total`. */
  readonly storeErrors: number;
  /** Requests admitted unenforced under fail_open. */
  readonly admittedUnenforced: number;
  /** As of the last call (a request's, or a status read's: every scrape of the budget gauges makes one). */
  readonly health: StoreHealth;
  /**
   * The shared records of a store that replicas share, or null. Under fail_open a failed
   * read is a missing record; under fail_closed it rejects with the GovernanceStoreError.
   * A failed write or delete is reported, never thrown.
   */
  readonly sharedRecords: SharedRecords | null;
  readonly policy: OnStoreError;
  ready(timeoutMs: number): Promise<boolean>;
}

/**
 * Wraps a store with the configured failure rule. A GovernanceStoreError never escapes
 * reserve/settle/release: fail_closed turns a failed reserve into a `governance_unavailable`
 * refusal; fail_open admits with an unenforced reservation (its settle touches nothing).
 * Both report every failure through `onFailure` (log + metric), and every served request
 * whose usage did not reach the books through `onUnbooked`. There is no local fallback:
 * counters kept here would disagree with the other replicas. Other errors (bugs) propagate.
 */
export function applyStoreErrorPolicy(
  inner: GovernanceStore,
  policy: OnStoreError,
  onFailure: (f: StoreFailure) => void,
  onUnbooked: (reason: UnbookedReason) => void = () => undefined,
): PolicedStore {
  let storeErrors = 0;
  let admittedUnenforced = 0;
  let up = true;
  let lastError: StoreHealth['lastError'] = null;
  const fail = (operation: StoreFailure['operation'], err: unknown): void => {
    if (!(err instanceof GovernanceStoreError)) throw err;
    storeErrors += 1;
    up = false;
    lastError = { operation, message: err.message, atMs: Date.now() };
    onFailure({ operation, policy, message: err.message });
  };
  // Bound once: a promise's success marks the store up without a closure per call.
  const answered = <T>(value: T): T => {
    up = true;
    return value;
  };
  const records = inner.records;
  const policedRecords = (r: SharedRecords): SharedRecords => ({
    get: (key) =>
      r.get(key).then(answered, (err: unknown) => {
        fail('record', err);
        if (policy === 'fail_closed') throw err;
        return null;
      }),
    set: (key, value, ttlMs) => r.set(key, value, ttlMs).then(answered, (err: unknown) => fail('record', err)),
    delete: (key) => r.delete(key).then(answered, (err: unknown) => fail('record', err)),
  });
  const refused = (input: ReserveInput, err: unknown): ReserveResult => {
    fail('reserve', err);
    if (policy === 'fail_closed') return UNAVAILABLE;
    admittedUnenforced += 1;
    return { ok: true, reservation: unenforced(input), rateLimit: NO_RATE_LIMIT, budgetWarnings: [] };
  };
  const settleFailed = (err: unknown): void => {
    fail('settle', err);
    onUnbooked('settle_failed');
  };
  const releaseFailed = (err: unknown): void => fail('release', err);
  /** A settle (actual given) or a release (null): an unenforced reservation has nothing to give back. */
  const closed = (r: Reservation, actual: Actual | null, nowMs: number): MaybePromise<void> => {
    if (!r.enforced) {
      if (actual !== null) onUnbooked('fail_open');
      return;
    }
    let out: MaybePromise<void>;
    try {
      out = actual === null ? inner.release(r, nowMs) : inner.settle(r, actual, nowMs);
    } catch (err) {
      return actual === null ? releaseFailed(err) : settleFailed(err);
    }
    return out instanceof Promise ? out.then(answered, actual === null ? releaseFailed : settleFailed) : out;
  };
  return {
    get storeErrors() {
      return storeErrors;
    },
    get admittedUnenforced() {
      return admittedUnenforced;
    },
    get health(): StoreHealth {
      return { up, lastError };
    },
    policy,
    sharedRecords: records === undefined ? null : policedRecords(records),
    // No closure per call on these, which run on every request: a store that answers at
    // once (the memory store) then allocates nothing here.
    reserve(input: ReserveInput): MaybePromise<ReserveResult> {
      let out: MaybePromise<ReserveResult>;
      try {
        out = inner.reserve(input);
      } catch (err) {
        return refused(input, err);
      }
      return out instanceof Promise ? out.then(answered, (err: unknown) => refused(input, err)) : out;
    },
    settle: (r: Reservation, actual: Actual, nowMs: number) => closed(r, actual, nowMs),
    release: (r: Reservation, nowMs: number) => closed(r, null, nowMs),
    async status(scopes: readonly Scope[], nowMs: number): Promise<ScopeStatus[]> {
      try {
        return answered(await inner.status(scopes, nowMs));
      } catch (err) {
        fail('status', err);
        throw err;
      }
    },
    async ready(timeoutMs: number): Promise<boolean> {
      const ok = (await inner.ready?.(timeoutMs)) ?? true;
      // A store not there at start is down until a call succeeds.
      if (!ok) up = false;
      return ok;
    },
    close: () => inner.close(),
  };
}

const UNAVAILABLE: ReserveResult = Object.freeze({
  ok: false,
  refusal: Object.freeze({
    code: 'governance_unavailable',
    message: 'the governance store is unavailable; limits cannot be checked',
    retryAfterS: 1,
    scope: null,
    limit: null,
    rateLimit: NO_RATE_LIMIT,
  }),
});

function unenforced(input: ReserveInput): Reservation {
  return {
    id: randomUUID(),
    scopes: input.scopes.map(scopeRef),
    atMs: input.nowMs,
    tokens: input.tokens,
    costMicroUsd: input.costMicroUsd,
    day: utcDayStamp(input.nowMs),
    month: utcMonthStamp(input.nowMs),
    enforced: false,
  };
}
