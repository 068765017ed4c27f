import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Principal } from '../../governance/index.js';
import type { JsonRpcId, McpProtocolVersion, Stop } from '../../mcp/index.js';

/**
 * One client session of /mcp (`Mcp-Session-Id`): who opened it, the version it speaks, which
 * candidate each of its tools is bound to (session affinity: an `existing_only` candidate
 * keeps serving it), and its standalone GET stream, on which list changes reach it.
 */
export interface ClientSession {
  readonly id: string;
  /** The key that opened it (null: an open gateway's anonymous caller); only that key may use it. */
  readonly principal: Principal;
  readonly protocolVersion: McpProtocolVersion;
  readonly clientName: string | null;
  readonly openedAtMs: number;
  lastSeenMs: number;
  /** Exposed tool -> the stable_id of the candidate that served it last. */
  readonly bindings: Map<string, string>;
  /** Its tools/call in flight by JSON-RPC id, for notifications/cancelled. */
  readonly inflight: Map<JsonRpcId, Stop>;
  /** Its POSTs being handled now: with `inflight` and an open stream, what makes it busy (never evicted for its own key's cap). */
  requests: number;
  /** The open GET stream, if any. */
  stream: ServerResponse | null;
  /** The last SSE event id sent on its GET streams. */
  eventSeq: number;
  /** When its shared record (other replicas) was last written; 0 = never. */
  sharedAtMs: number;
  /** The digest of the tool list the session was last given (initialize, tools/list, a list_changed): a change is announced once. */
  toldDigest: string | null;
}

export interface SessionLimits {
  readonly ttlMs: number;
  readonly maxEntries: number;
  /** Sessions one key may hold at most (an open gateway's anonymous callers are not capped). */
  readonly maxPerKey: number;
}

/** Why a session could not be opened: its key holds its cap, every session busy. */
export class KeySessionsFull extends Error {
  constructor(readonly maxPerKey: number) {
    super(`this key holds ${maxPerKey} MCP sessions (mcp.sessions.max_per_key), each with a request in flight or an open stream`);
  }
}

/** A session with a request in flight (a POST being handled, a tools/call running) or an open GET stream. */
function busy(s: ClientSession): boolean {
  return s.requests > 0 || s.inflight.size > 0 || (s.stream !== null && !s.stream.writableEnded);
}

/**
 * The client sessions, bounded: an idle session expires after its TTL (one whose GET stream
 * is open is not idle), and past max_entries the idlest goes. Each key also has a cap of its
 * own (max_per_key): a key at its cap gives up its own idlest session that is not busy, so
 * one key's flood of initialize never pushes out another key's sessions; with every one of
 * its sessions busy, it is refused. Stateful: built once by server/, kept across reloads;
 * `configure` takes a reload's new bounds.
 */
export class ClientSessions {
  #limits: SessionLimits;
  readonly #now: () => number;
  /** In order of last use: a touch re-inserts, so the first entry is the idlest. */
  readonly #sessions = new Map<string, ClientSession>();
  /** The same sessions by key id, each in order of last use too (anonymous callers are not listed). */
  readonly #byKey = new Map<string, Map<string, ClientSession>>();
  #sweep: NodeJS.Timeout | null = null;

  constructor(limits: SessionLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  configure(limits: SessionLimits): void {
    this.#limits = limits;
    this.#evict();
  }

  get size(): number {
    return this.#sessions.size;
  }

  get ttlMs(): number {
    return this.#limits.ttlMs;
  }

  /** Opens a session; throws KeySessionsFull when the key holds its cap and none of its sessions may go. */
  open(principal: Principal, protocolVersion: McpProtocolVersion, clientName: string | null, id: string = randomUUID()): ClientSession {
    this.#evict();
    const own = principal.keyId === null ? undefined : this.#byKey.get(principal.keyId);
    if (own !== undefined && own.size >= this.#limits.maxPerKey) {
      // The key makes room among its own sessions, never another key's.
      const victim = idlestOf(own.values(), (s) => !busy(s));
      if (victim === undefined) throw new KeySessionsFull(this.#limits.maxPerKey);
      this.close(victim);
    }
    if (this.#sessions.size >= this.#limits.maxEntries) this.#dropIdlest();
    const now = this.#now();
    const session: ClientSession = {
      id,
      principal,
      protocolVersion,
      clientName,
      openedAtMs: now,
      lastSeenMs: now,
      bindings: new Map(),
      inflight: new Map(),
      requests: 0,
      stream: null,
      eventSeq: 0,
      sharedAtMs: 0,
      toldDigest: null,
    };
    this.#sessions.set(session.id, session);
    if (principal.keyId !== null) {
      let mine = this.#byKey.get(principal.keyId);
      if (mine === undefined) {
        mine = new Map();
        this.#byKey.set(principal.keyId, mine);
      }
      mine.set(session.id, session);
    }
    this.#startSweep();
    return session;
  }

  /**
   * The session with this id if it is open and belongs to this caller; undefined otherwise
   * (another key's session is as unknown as an expired one: a session id is not a credential).
   * A found session is touched.
   */
  find(id: string, principal: Principal): ClientSession | undefined {
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    if (this.#expired(session, this.#now())) {
      this.close(session);
      return undefined;
    }
    if (session.principal.keyId !== principal.keyId) return undefined;
    session.lastSeenMs = this.#now();
    this.#sessions.delete(id);
    this.#sessions.set(id, session);
    const mine = session.principal.keyId === null ? undefined : this.#byKey.get(session.principal.keyId);
    if (mine !== undefined) {
      mine.delete(id);
      mine.set(id, session);
    }
    return session;
  }

  /** Ends a session: its GET stream ends too. */
  close(session: ClientSession): void {
    if (this.#sessions.get(session.id) === session) {
      this.#sessions.delete(session.id);
      const keyId = session.principal.keyId;
      const mine = keyId === null ? undefined : this.#byKey.get(keyId);
      if (mine !== undefined && keyId !== null) {
        mine.delete(session.id);
        if (mine.size === 0) this.#byKey.delete(keyId);
      }
    }
    const stream = session.stream;
    session.stream = null;
    if (stream !== null && !stream.writableEnded) stream.end();
  }

  /** Every open session (for announcing list changes). */
  values(): IterableIterator<ClientSession> {
    return this.#sessions.values();
  }

  /** Ends every session (shutdown). */
  closeAll(): void {
    for (const s of [...this.#sessions.values()]) this.close(s);
    if (this.#sweep !== null) clearInterval(this.#sweep);
    this.#sweep = null;
  }

  #expired(session: ClientSession, now: number): boolean {
    return session.stream === null && now - session.lastSeenMs >= this.#limits.ttlMs;
  }

  /** Drops expired sessions, then the idlest past the bounds (a key over a lowered cap gives up its own idle ones). */
  #evict(): void {
    const now = this.#now();
    for (const session of [...this.#sessions.values()]) if (this.#expired(session, now)) this.close(session);
    for (const mine of [...this.#byKey.values()]) {
      while (mine.size > this.#limits.maxPerKey) {
        const victim = idlestOf(mine.values(), (s) => !busy(s));
        if (victim === undefined) break;
        this.close(victim);
      }
    }
    while (this.#sessions.size > this.#limits.maxEntries) this.#dropIdlest();
  }

  #dropIdlest(): void {
    // An idle session goes before one that holds a stream; if every one holds a stream, the idlest goes anyway.
    const victim = idlestOf(this.#sessions.values(), (s) => s.stream === null) ?? this.#sessions.values().next().value;
    if (victim !== undefined) this.close(victim);
  }

  #startSweep(): void {
    if (this.#sweep !== null) return;
    // Expired sessions are also dropped when met; the sweep bounds what idle ones hold.
    this.#sweep = setInterval(() => this.#evict(), Math.min(60_000, Math.max(1000, this.#limits.ttlMs))).unref();
  }
}

/** The first (idlest, in order of last use) session that `may` accepts; undefined when there is none. */
function idlestOf(sessions: Iterable<ClientSession>, may: (s: ClientSession) => boolean): ClientSession | undefined {
  for (const s of sessions) if (may(s)) return s;
  return undefined;
}
