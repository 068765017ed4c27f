import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Principal } from '../governance/index.js';
import type { JsonRpcId, McpProtocolVersion, Stop } from '../mcp/index.js';

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
}

/**
 * The client sessions, bounded: an idle session expires after its TTL (one whose GET stream
 * is open is not idle), and past max_entries the idlest goes. Stateful: built once by
 * server/, kept across reloads; `configure` takes a reload's new bounds.
 */
export class ClientSessions {
  #limits: SessionLimits;
  readonly #now: () => number;
  /** In order of last use: a touch re-inserts, so the first entry is the idlest. */
  readonly #sessions = new Map<string, ClientSession>();
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

  open(principal: Principal, protocolVersion: McpProtocolVersion, clientName: string | null, id: string = randomUUID()): ClientSession {
    this.#evict();
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
      stream: null,
      eventSeq: 0,
      sharedAtMs: 0,
      toldDigest: null,
    };
    this.#sessions.set(session.id, session);
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
    return session;
  }

  /** Ends a session: its GET stream ends too. */
  close(session: ClientSession): void {
    this.#sessions.delete(session.id);
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

  /** Drops expired sessions from the idle end; one with an open stream stops the scan only if idle ones follow it. */
  #evict(): void {
    const now = this.#now();
    for (const session of [...this.#sessions.values()]) if (this.#expired(session, now)) this.close(session);
    while (this.#sessions.size > this.#limits.maxEntries) this.#dropIdlest();
  }

  #dropIdlest(): void {
    // An idle session goes before one that holds a stream; if every one holds a stream, the idlest goes anyway.
    let victim: ClientSession | undefined;
    for (const s of this.#sessions.values()) {
      if (s.stream === null) {
        victim = s;
        break;
      }
      victim ??= s;
    }
    if (victim !== undefined) this.close(victim);
  }

  #startSweep(): void {
    if (this.#sweep !== null) return;
    // Expired sessions are also dropped when met; the sweep bounds what idle ones hold.
    this.#sweep = setInterval(() => this.#evict(), Math.min(60_000, Math.max(1000, this.#limits.ttlMs))).unref();
  }
}
