import {
  type IdOwner,
  isTrackableId,
  type OwnedIdKind,
  type OwnershipStore,
  type OwnershipTtl,
  type RecordOutcome,
  type RecordResult,
  ttlMs,
} from './ownership.js';
import type { LearnedIds } from './types.js';

export interface MemoryOwnershipStoreOptions {
  /** Most ids held at once; past it the least recently recorded goes first. Default 100_000. */
  readonly maxEntries?: number;
  /** How often expired ids are forgotten even when nobody reads them. Default 60_000. */
  readonly sweepIntervalMs?: number;
  /** Epoch ms; injected so tests move time without sleeping. */
  readonly now?: () => number;
}

interface Entry extends IdOwner {
  readonly terminal: boolean;
  readonly expiresAtMs: number;
}

/**
 * One replica's owners, in a Map kept in record order: a record deletes and re-inserts its
 * entry, so the first entry is always the least recently recorded, and that is the one
 * dropped when the map is full (found in O(1), unlike the one closest to expiry; a task
 * still in use is recorded again by each answer about it, so it stays at the back).
 * An expired entry is forgotten when read, and by a sweep timer that does not hold the process open.
 */
export class MemoryOwnershipStore implements OwnershipStore {
  readonly kind = 'memory' as const;
  readonly #entries = new Map<string, Entry>();
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #sweep: NodeJS.Timeout;

  constructor(options: MemoryOwnershipStoreOptions = {}) {
    this.#maxEntries = Math.max(1, options.maxEntries ?? 100_000);
    this.#now = options.now ?? Date.now;
    this.#sweep = setInterval(() => this.#forgetExpired(), options.sweepIntervalMs ?? 60_000);
    this.#sweep.unref();
  }

  /** Entries held, expired ones not yet forgotten included (tracked() counts only the live ones). */
  get storedEntries(): number {
    return this.#entries.size;
  }

  async lookup(agent: string, kind: OwnedIdKind, id: string): Promise<IdOwner | null> {
    return this.#owner(agent, kind, id);
  }

  async lookupMany(agent: string, kind: OwnedIdKind, ids: readonly string[]): Promise<(IdOwner | null)[]> {
    return ids.map((id) => this.#owner(agent, kind, id));
  }

  async record(agent: string, owner: IdOwner, ids: LearnedIds, ttl: OwnershipTtl): Promise<RecordOutcome> {
    const nowMs = this.#now();
    const task = ids.taskId === undefined ? 'none' : this.#put(agent, 'task', ids.taskId, owner, ids.terminal, ttl, nowMs);
    const context = ids.contextId === undefined ? 'none' : this.#put(agent, 'context', ids.contextId, owner, false, ttl, nowMs);
    return { task, context };
  }

  /** Exact: the entries not yet expired (expired ones are forgotten on the way). */
  async tracked(): Promise<number> {
    this.#forgetExpired();
    return this.#entries.size;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweep);
    this.#entries.clear();
  }

  #owner(agent: string, kind: OwnedIdKind, id: string): IdOwner | null {
    if (!isTrackableId(id)) return null;
    const key = entryKey(agent, kind, id);
    const entry = this.#entries.get(key);
    if (entry === undefined) return null;
    if (entry.expiresAtMs <= this.#now()) {
      this.#entries.delete(key);
      return null;
    }
    return { team: entry.team, candidate: entry.candidate };
  }

  #put(agent: string, kind: OwnedIdKind, id: string, owner: IdOwner, terminal: boolean, ttl: OwnershipTtl, nowMs: number): RecordResult {
    if (!isTrackableId(id)) return 'none';
    const key = entryKey(agent, kind, id);
    let old = this.#entries.get(key);
    if (old !== undefined && old.expiresAtMs <= nowMs) old = undefined;
    if (old !== undefined && (old.team !== owner.team || old.candidate !== owner.candidate)) return 'foreign';
    // Terminal wins: a non-terminal record after the terminal one leaves the entry as it is.
    if (old?.terminal === true && !terminal) return 'kept';
    const expiresAtMs = nowMs + ttlMs(terminal ? ttl.terminalS : ttl.activeS);
    this.#entries.delete(key);
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { team: owner.team, candidate: owner.candidate, terminal, expiresAtMs });
    return old === undefined ? 'recorded' : 'kept';
  }

  #forgetExpired(): void {
    const nowMs = this.#now();
    for (const [key, entry] of this.#entries) if (entry.expiresAtMs <= nowMs) this.#entries.delete(key);
  }
}

/** Agent, kind and id as one Map key that no choice of strings can make collide. */
function entryKey(agent: string, kind: OwnedIdKind, id: string): string {
  return JSON.stringify([agent, kind, id]);
}
