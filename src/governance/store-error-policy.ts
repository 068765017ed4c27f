import { randomUUID } from 'node:crypto';
import type { Scope } from './limits.js';
import { NO_RATE_LIMIT, utcDayStamp, utcMonthStamp } from './limits.js';
import {
  type Actual,
  type GovernanceStore,
  GovernanceStoreError,
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
    async reserve(input: ReserveInput): Promise<ReserveResult> {
      try {
        return await inner.reserve(input);
      } catch (err) {
        fail('reserve', err);
        if (policy === 'fail_closed') {
          return {
            ok: false,
            refusal: {
              code: 'governance_unavailable',
              message: 'the governance store is unavailable; limits cannot be checked',
              retryAfterS: 1,
              scope: null,
              limit: null,
              rateLimit: NO_RATE_LIMIT,
            },
          };
        }
        admittedUnenforced += 1;
        return { ok: true, reservation: unenforced(input), rateLimit: NO_RATE_LIMIT, budgetWarnings: [] };
      }
    },
    async settle(r: Reservation, actual: Actual, nowMs: number): Promise<void> {
      if (!r.enforced) return;
      try {
        await inner.settle(r, actual, nowMs);
      } catch (err) {
        fail('settle', err);
      }
    },
    async release(r: Reservation, nowMs: number): Promise<void> {
      if (!r.enforced) return;
      try {
        await inner.release(r, nowMs);
      } catch (err) {
        fail('release', err);
      }
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
