// Who owns a task or context id an upstream agent named: the candidate that created it and
// the team whose caller it answered. A follow-up naming the id goes to that candidate from any
// replica; another team's id, or one nobody recorded, is "task not found" and reaches no
// candidate. Two stores keep it: one replica's memory, and Redis for a fleet.

import type { ErrorCode } from '../errors.js';
import type { LearnedIds } from './types.js';

export type OwnedIdKind = 'task' | 'context';

export interface IdOwner {
  readonly team: string;
  /** The candidate's provider name. */
  readonly candidate: string;
}

export interface OwnershipTtl {
  /** How long a context, or a task not yet terminal, stays owned after its latest record. */
  readonly activeS: number;
  /** How long a task stays owned once an answer showed it completed, failed, canceled or rejected. */
  readonly terminalS: number;
}

/**
 * Per id: `recorded` a new entry; `kept` already this owner's (its ttl refreshed, or switched
 * to the terminal one); `foreign` another team's or another candidate's, left as it was;
 * `none` no id given, or one the stores refuse to track (see `isTrackableId`).
 */
export type RecordResult = 'recorded' | 'kept' | 'foreign' | 'none';

export interface RecordOutcome {
  readonly task: RecordResult;
  readonly context: RecordResult;
}

export interface OwnershipStore {
  readonly kind: 'memory' | 'redis';
  /** The owner of an id of `agent`, or null (unknown, expired, or not trackable). */
  lookup(agent: string, kind: OwnedIdKind, id: string): Promise<IdOwner | null>;
  /** Owners of many ids at once (ListTasks filters by team): same order, null where unknown. */
  lookupMany(agent: string, kind: OwnedIdKind, ids: readonly string[]): Promise<(IdOwner | null)[]>;
  /**
   * Records the ids an answer named, atomically per id: set if absent, refresh if the same
   * owner's, never overwrite another owner's. A context gets the active ttl on every record
   * (it outlives its tasks); a task gets the terminal ttl once `terminal` is true and keeps
   * it: a later non-terminal record (an event arriving late) neither unmarks nor lengthens it.
   */
  record(agent: string, owner: IdOwner, ids: LearnedIds, ttl: OwnershipTtl): Promise<RecordOutcome>;
  /** How many ids are tracked now, for a gauge (each store says how exact it is). */
  tracked(): Promise<number>;
  close(): Promise<void>;
}

export type OwnershipOperation = 'lookup' | 'lookupMany' | 'record' | 'tracked';

/** A store that could not answer (Redis down, slow or refusing). A lookup's caller answers an error; a record's logs it. */
export class OwnershipStoreError extends Error {
  /** The catalog's code for a store the gateway depends on being unavailable. */
  readonly code: ErrorCode = 'store_unavailable';
  readonly operation: OwnershipOperation;

  constructor(operation: OwnershipOperation, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OwnershipStoreError';
    this.operation = operation;
  }
}

/** Longest id tracked, in UTF-8 bytes: ids are upstream strings, and each one costs memory in every replica or in Redis. */
export const MAX_OWNED_ID_BYTES = 256;

/**
 * Whether an id is tracked at all: non-empty, at most MAX_OWNED_ID_BYTES, and well-formed
 * UTF-16. A lone surrogate would encode as U+FFFD, so two different ids could share one
 * key; such an id is never recorded and never found.
 */
export function isTrackableId(id: string): boolean {
  if (id.length === 0 || id.length > MAX_OWNED_ID_BYTES) return false;
  const bytes = Buffer.from(id, 'utf8');
  return bytes.length <= MAX_OWNED_ID_BYTES && bytes.toString('utf8') === id;
}

/** A ttl in whole milliseconds, at least 1 (a fractional second is allowed, so short ttls can be tested). */
export function ttlMs(seconds: number): number {
  return Math.max(1, Math.round(seconds * 1000));
}
