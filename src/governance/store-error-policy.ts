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
  scopeRef,
} from './store.js';

/** `governance.on_store_error`: refuse (503) or serve unenforced while the store is down. */
export type OnStoreError = 'fail_open' | 'fail_closed';

export interface StoreFailure {
  readonly operation: 'reserve' | 'settle' | 'release' | 'status';
  readonly policy: OnStoreError;
  readonly message: string;
}

export interface PolicedStore extends GovernanceStore {
  /** Store errors since start (every operation), for `switchyard_governance_store_errors_total`. */
  readonly storeErrors: number;
  /** Requests admitted unenforced under fail_open. */
  readonly admittedUnenforced: number;
  ready(timeoutMs: number): Promise<boolean>;
}

/**
 * Wraps a store with the configured failure rule. A GovernanceStoreError never escapes
 * reserve/settle/release: fail_closed turns a failed reserve into a `governance_unavailable`
 * refusal; fail_open admits with an unenforced reservation (its settle touches nothing).
 * Both report every failure through `onFailure` (log + metric). There is no local fallback:
 * counters kept here would disagree with the other replicas. Other errors (bugs) propagate.
 */
export function applyStoreErrorPolicy(inner: GovernanceStore, policy: OnStoreError, onFailure: (f: StoreFailure) => void): PolicedStore {
  let storeErrors = 0;
  let admittedUnenforced = 0;
  const fail = (operation: StoreFailure['operation'], err: unknown): void => {
    if (!(err instanceof GovernanceStoreError)) throw err;
    storeErrors += 1;
    onFailure({ operation, policy, message: err.message });
  };
  return {
    get storeErrors() {
      return storeErrors;
    },
    get admittedUnenforced() {
      return admittedUnenforced;
    },
    reserve(input: ReserveInput): MaybePromise<ReserveResult> {
      const refused = (err: unknown): ReserveResult => {
        fail('reserve', err);
        if (policy === 'fail_closed') return UNAVAILABLE;
        admittedUnenforced += 1;
        return { ok: true, reservation: unenforced(input), rateLimit: NO_RATE_LIMIT, budgetWarnings: [] };
      };
      return guarded(() => inner.reserve(input), refused);
    },
    settle(r: Reservation, actual: Actual, nowMs: number): MaybePromise<void> {
      if (!r.enforced) return;
      return guarded(
        () => inner.settle(r, actual, nowMs),
        (err) => fail('settle', err),
      );
    },
    release(r: Reservation, nowMs: number): MaybePromise<void> {
      if (!r.enforced) return;
      return guarded(
        () => inner.release(r, nowMs),
        (err) => fail('release', err),
      );
    },
    async status(scopes: readonly Scope[], nowMs: number): Promise<ScopeStatus[]> {
      try {
        return await inner.status(scopes, nowMs);
      } catch (err) {
        fail('status', err);
        throw err;
      }
    },
    ready: (timeoutMs: number) => inner.ready?.(timeoutMs) ?? Promise.resolve(true),
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

/**
 * Runs a store operation and hands a failure to `onError`, whether the store threw or its
 * promise rejected; a value the store answered with at once stays a value (no promise).
 */
function guarded<T>(run: () => MaybePromise<T>, onError: (err: unknown) => T): MaybePromise<T> {
  let out: MaybePromise<T>;
  try {
    out = run();
  } catch (err) {
    return onError(err);
  }
  return out instanceof Promise ? out.catch(onError) : out;
}

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
