import { isDeepStrictEqual } from 'node:util';
import type { McpConfig } from '../../config/index.js';
import type { Principal, SharedRecords } from '../../governance/index.js';
import type { Generation, GenerationHolder, Keyring, KeyringHolder, McpServerRuntime, ToolCandidate } from '../../live/index.js';
import {
  MCP_PROTOCOL_VERSIONS,
  type McpProtocolVersion,
  McpUpstream,
  type McpUpstreamSettings,
  type ToolCatalog,
  type UpstreamEvent,
} from '../../mcp/index.js';
import { type Logger, type Metrics, RecentTraffic } from '../../telemetry/index.js';
import { policyOf } from '../policy.js';
import { sseMessage } from './messages.js';
import { SessionKeyWatch } from './session-keys.js';
import { type ClientSession, ClientSessions, KeySessionsFull, type SessionLimits } from './sessions.js';
import { buildToolView, listingFor, type ToolView } from './tools.js';

/** How often a held session is checked against the shared records at most (see findSession). */
const SHARED_CHECK_MS = 30_000;

/** Session ids are the gateway's UUIDs: anything else is not looked up in the shared records. */
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function sessionRecordKey(id: string): string {
  return `mcp-session:${id}`;
}

/** A credentialed client's key: its server and where its credential came from (never the value). */
function credentialKey(c: ToolCandidate): string {
  return `${c.server.name}\u0000${c.credential?.source ?? ''}`;
}

function sessionLimits(settings: McpConfig): SessionLimits {
  return { ttlMs: settings.sessions.ttl_s * 1000, maxEntries: settings.sessions.max_entries, maxPerKey: settings.sessions.max_per_key };
}

const LIST_CHANGED = '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}';

/** What /admin/status shows of one MCP server. */
export interface McpServerStatus {
  readonly provider: string;
  readonly url: string;
  readonly session: boolean;
  readonly stream_open: boolean;
  readonly tools: readonly string[] | null;
  readonly refreshed_at: string | null;
  readonly server_info: { readonly name: string; readonly version: string } | null;
  readonly protocol_version: string | null;
  readonly problem: string | null;
}

/**
 * The /mcp endpoint's state, built once by server/ and kept across reloads: the client
 * sessions, one MCP client per configured server (its upstream session and catalog), and
 * the tool view (the serving generation's tool routes joined with the catalogs). When a
 * reload, an overlay revision or a server's new catalog changes what a session would be
 * listed, that session is told on its GET stream (`notifications/tools/list_changed`),
 * once per change, after list_changed_debounce_ms.
 */
export class McpService {
  readonly sessions: ClientSessions;
  /** The last 15 minutes of tools/call, by exposed tool and candidate, for the status page. */
  readonly recent = new RecentTraffic();
  readonly #holder: GenerationHolder;
  readonly #keyring: KeyringHolder;
  readonly #logger: Logger;
  readonly #clientVersion: string;
  readonly #upstreams = new Map<string, { readonly upstream: McpUpstream; readonly key: string; readonly url: string }>();
  /**
   * Overlay candidates that carry their own credential call their server with it, through a
   * client (an upstream session) of their own, by server and credential source; made when
   * first used, stopped when no serving candidate uses it.
   */
  readonly #credentialed = new Map<string, McpUpstream>();
  readonly #catalogs = new Map<string, ToolCatalog>();
  #catalogVersion = 0;
  #view: ToolView | null = null;
  #recheckMs: number;
  #debounceMs: number;
  #announce: NodeJS.Timeout | null = null;
  /** Ends a key's sessions when the key stops being accepted or expires. */
  readonly #keys: SessionKeyWatch;
  #closed = false;
  /** Set by the drain: no new GET stream opens (it would hold the drain to its limit). */
  draining = false;

  /** The replicas' shared records (a redis governance store): a session opened on one is known to every one. */
  readonly #shared: SharedRecords | null;

  constructor(
    holder: GenerationHolder,
    keyring: KeyringHolder,
    logger: Logger,
    metrics: Metrics,
    settings: McpConfig,
    clientVersion: string,
    shared: SharedRecords | null = null,
  ) {
    this.#holder = holder;
    this.#keyring = keyring;
    this.#shared = shared;
    this.#logger = logger;
    this.#clientVersion = clientVersion;
    this.#recheckMs = settings.catalog_recheck_ms;
    this.#debounceMs = settings.list_changed_debounce_ms;
    this.sessions = new ClientSessions(sessionLimits(settings));
    this.#keys = new SessionKeyWatch(this.sessions, keyring, (s) => this.endSession(s));
    metrics.mcpGauges = {
      sessions: () => this.sessions.size,
      catalogs: () => [...this.#catalogs.values()].map((c) => [c.provider, c.tools.size] as const),
    };
  }

  /**
   * After a keyring swap (a key or team written through the admin API): the sessions of a
   * key no longer accepted end, and a session whose list the new limits change is told.
   */
  syncKeyring(keyring: Keyring): void {
    if (this.#closed) return;
    this.#keys.check(keyring);
    this.#changed();
  }

  /**
   * After a swap: one MCP client per configured server (kept when its address, credential,
   * headers and timeouts are unchanged, re-pointed otherwise, stopped when it is gone), and
   * every session told if its list changed.
   */
  sync(gen: Generation): void {
    if (this.#closed) return;
    const settings = gen.config.mcp;
    this.#recheckMs = settings.catalog_recheck_ms;
    this.#debounceMs = settings.list_changed_debounce_ms;
    this.sessions.configure(sessionLimits(settings));
    if (this.#keyring.ready) this.#keys.check(this.#keyring.current());
    const servers = gen.tools.servers;
    for (const [name, held] of this.#upstreams) {
      if (servers[name] !== undefined) continue;
      this.#upstreams.delete(name);
      if (this.#catalogs.delete(name)) this.#catalogVersion += 1;
      void held.upstream.stop();
    }
    for (const name of Object.keys(servers)) {
      const server = servers[name] as McpServerRuntime;
      const upstreamSettings = this.#settingsOf(server);
      const key = JSON.stringify([server.url, server.credential?.source ?? null, server.headers, server.timeoutMs, this.#recheckMs]);
      const held = this.#upstreams.get(name);
      if (held !== undefined && held.key === key) {
        // The same server: only the pool may be a new object (a reload re-tuned its connections).
        held.upstream.update(upstreamSettings);
        continue;
      }
      if (held !== undefined) void held.upstream.stop();
      const upstream = new McpUpstream(upstreamSettings, (e) => this.#onEvent(e));
      this.#upstreams.set(name, { upstream, key, url: server.url });
      upstream.start();
    }
    const used = new Set<string>();
    for (const route of Object.values(gen.tools.routes))
      for (const group of route.groups) for (const c of group.candidates) if (c.credential !== null) used.add(credentialKey(c));
    for (const [key, upstream] of this.#credentialed) {
      if (used.has(key)) continue;
      this.#credentialed.delete(key);
      void upstream.stop();
    }
    this.#changed();
  }

  /** The MCP client a candidate's calls go through: its server's, or its own credential's. */
  upstreamFor(c: ToolCandidate): McpUpstream | undefined {
    if (c.credential === null) return this.upstream(c.server.name);
    const key = credentialKey(c);
    let upstream = this.#credentialed.get(key);
    if (upstream === undefined && !this.#closed) {
      upstream = new McpUpstream({ ...this.#settingsOf(c.server), credential: c.credential }, (e) => this.#onCredentialedEvent(e));
      this.#credentialed.set(key, upstream);
    }
    return upstream;
  }

  /** The tools `gen` routes right now: cached until the generation or a catalog changes. */
  view(gen: Generation): ToolView {
    const view = this.#view;
    if (view !== null && view.gen === gen && view.catalogVersion === this.#catalogVersion) return view;
    const built = buildToolView(gen, this.#catalogs, this.#catalogVersion);
    // Only the serving generation's view is kept: a request of an older one builds its own.
    if (!this.#holder.ready || this.#holder.current() === gen) this.#view = built;
    return built;
  }

  /**
   * Opens a client session, and, with shared records, records it for the other replicas (who
   * opened it, and its version), so that a load balancer without stickiness does not end it.
   */
  openSession(principal: Principal, version: McpProtocolVersion, clientName: string | null): ClientSession {
    const session = this.sessions.open(principal, version, clientName);
    this.#share(session);
    this.#keys.watch(principal);
    return session;
  }

  /**
   * The caller's session with this id: this replica's, or one another replica opened (from
   * the shared records; a promise only then). Another key's session is not found.
   */
  findSession(id: string, principal: Principal): ClientSession | undefined | Promise<ClientSession | undefined> {
    const local = this.sessions.find(id, principal);
    const shared = this.#shared;
    if (local !== undefined) {
      if (shared === null || Date.now() - local.sharedAtMs <= Math.min(this.sessions.ttlMs / 4, SHARED_CHECK_MS)) return local;
      // Now and then a held session is checked against the shared record: ended on another
      // replica (DELETE), it ends here too; alive, its record's TTL is renewed.
      return shared.get(sessionRecordKey(id)).then(
        (text) => {
          if (text !== null) {
            this.#share(local);
            return local;
          }
          this.sessions.close(local);
          return undefined;
        },
        () => local,
      );
    }
    if (shared === null || !SESSION_ID.test(id)) return undefined;
    return shared.get(sessionRecordKey(id)).then(
      (text) => this.#adopt(id, text, principal),
      // The store's own policy has counted the failure; a session it cannot confirm is unknown.
      () => undefined,
    );
  }

  /** Ends a session here and for every replica. */
  endSession(session: ClientSession): void {
    this.sessions.close(session);
    void this.#shared?.delete(sessionRecordKey(session.id)).catch(() => undefined);
  }

  #share(session: ClientSession): void {
    if (this.#shared === null) return;
    session.sharedAtMs = Date.now();
    const record = JSON.stringify({ key: session.principal.keyId, team: session.principal.team, version: session.protocolVersion });
    void this.#shared.set(sessionRecordKey(session.id), record, this.sessions.ttlMs).catch(() => undefined);
  }

  #adopt(id: string, text: string | null, principal: Principal): ClientSession | undefined {
    if (text === null) return undefined;
    let record: { key?: unknown; version?: unknown };
    try {
      record = JSON.parse(text) as typeof record;
    } catch {
      return undefined;
    }
    const version = MCP_PROTOCOL_VERSIONS.find((v) => v === record.version);
    if (record.key !== principal.keyId || version === undefined) return undefined;
    // Another request of the session may have adopted it meanwhile.
    const known = this.sessions.find(id, principal);
    if (known !== undefined) return known;
    let session: ClientSession;
    try {
      session = this.sessions.open(principal, version, null, id);
    } catch (err) {
      // The key holds its cap here, every session busy: the session is not taken on now.
      if (err instanceof KeySessionsFull) return undefined;
      throw err;
    }
    session.sharedAtMs = Date.now();
    this.#keys.watch(principal);
    if (this.#holder.ready) {
      const gen = this.#holder.current();
      session.toldDigest = listingFor(this.view(gen), policyOf(this.#keyring.current()), principal).digest;
    }
    return session;
  }

  /** The MCP client of a configured server, if it is configured in the serving generation. */
  upstream(provider: string): McpUpstream | undefined {
    return this.#upstreams.get(provider)?.upstream;
  }

  status(): McpServerStatus[] {
    const out: McpServerStatus[] = [];
    for (const [provider, { upstream, url }] of this.#upstreams) {
      const c = this.#catalogs.get(provider) ?? null;
      out.push({
        provider,
        url,
        session: upstream.sessionId !== null,
        stream_open: upstream.streamOpen,
        tools: c === null ? null : [...c.tools.keys()],
        refreshed_at: c?.refreshedAt ?? null,
        server_info: c?.serverInfo ?? null,
        protocol_version: c?.protocolVersion ?? null,
        problem: upstream.problem,
      });
    }
    return out;
  }

  /** The drain: every session's GET stream ends (the sessions stay, for the calls in flight). */
  endStreams(): void {
    this.draining = true;
    for (const session of this.sessions.values()) {
      const stream = session.stream;
      session.stream = null;
      if (stream !== null && !stream.writableEnded) stream.end();
    }
  }

  /** Shutdown: every client session and upstream session ends. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#announce !== null) clearTimeout(this.#announce);
    this.#keys.close();
    this.sessions.closeAll();
    const stops = [...[...this.#upstreams.values()].map((h) => h.upstream), ...this.#credentialed.values()].map((u) => u.stop());
    this.#upstreams.clear();
    this.#credentialed.clear();
    await Promise.all(stops);
  }

  /** Sends list_changed now to each session (or just `only`) whose list differs from what it was last told. */
  tell(view: ToolView, only?: ClientSession): void {
    const policy = policyOf(this.#keyring.current());
    for (const session of only === undefined ? this.sessions.values() : [only]) {
      const stream = session.stream;
      if (stream === null || stream.writableEnded) continue;
      const { digest } = listingFor(view, policy, session.principal);
      if (digest === session.toldDigest) continue;
      session.toldDigest = digest;
      session.eventSeq += 1;
      stream.write(sseMessage(LIST_CHANGED, String(session.eventSeq)));
    }
  }

  #settingsOf(server: McpServerRuntime): McpUpstreamSettings {
    return {
      provider: server.name,
      url: new URL(server.url),
      pool: server.pool,
      headers: server.headers,
      credential: server.credential,
      timeoutMs: server.timeoutMs,
      recheckMs: this.#recheckMs,
      clientInfo: { name: 'switchyard', version: this.#clientVersion },
    };
  }

  /**
   * A credentialed client's events: its catalog stands for its server's only while the
   * server's own client has listed none (a server that lists only to the candidates' credential).
   */
  #onCredentialedEvent(e: UpstreamEvent): void {
    if (e.kind === 'catalog' && this.#upstreams.get(e.provider)?.upstream.catalog == null) this.#onEvent(e);
  }

  #onEvent(e: UpstreamEvent): void {
    if (this.#closed || !this.#upstreams.has(e.provider)) return;
    if (e.kind === 'catalog') {
      const previous = this.#catalogs.get(e.provider);
      const first = previous === undefined;
      this.#catalogs.set(e.provider, e.catalog);
      if (first || e.changed) {
        this.#catalogVersion += 1;
        this.#logger.info({ msg: 'MCP server catalog listed', provider: e.provider, tools: e.catalog.tools.size, changed: e.changed });
        // Once per new set of repeated names, not at every listing that changed something else.
        if (e.catalog.duplicates.length > 0 && !isDeepStrictEqual(e.catalog.duplicates, previous?.duplicates ?? []))
          this.#logger.warn({
            msg: 'MCP server lists a tool name more than once: the first definition is kept (see mcp.skipped in /admin/status)',
            provider: e.provider,
            tools: e.catalog.duplicates,
          });
        this.#changed();
      }
    } else if (e.kind === 'session') {
      this.#logger.info({ msg: `MCP server session ${e.what}`, provider: e.provider });
    } else {
      this.#logger.warn({ msg: `MCP server unavailable: ${e.message}`, provider: e.provider, retry_in_ms: e.retryInMs });
    }
  }

  /** Something that may change a session's list happened: tell the sessions after the debounce. */
  #changed(): void {
    if (this.#announce !== null) return;
    this.#announce = setTimeout(() => {
      this.#announce = null;
      if (this.#closed || !this.#holder.ready) return;
      const gen = this.#holder.current();
      this.tell(this.view(gen));
    }, this.#debounceMs);
    this.#announce.unref();
  }
}
