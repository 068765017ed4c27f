import type { Credential, ProviderPool } from '../providers/index.js';
import { Stop, type StopSignal } from './stop.js';
import type { CallOutcome, JsonRpcNotification, ToolCatalog } from './types.js';
import { catalogOf, listTools, sameTools } from './upstream-catalog.js';
import { exchange } from './upstream-exchange.js';
import { redacted, routeOf, sameIdentity } from './upstream-route.js';
import {
  describeFailure,
  outcomeOf,
  pause,
  type RpcAnswer,
  type RpcRoute,
  type ServerRequest,
  sendMessage,
  sendRequest,
} from './upstream-rpc.js';
import { initializeSession, type SessionStart, type UpstreamSession } from './upstream-session.js';
import { jittered, StandingStream } from './upstream-stream.js';

// The gateway as an MCP client of one `type: mcp` provider: its session, its tool catalog
// kept fresh (a listing at start, on the server's list_changed, and on a timer), and the
// calls the gateway routes to it. Everything goes over the provider's own pool, with only
// the provider's configured headers and credential: nothing of the gateway's caller.
// A server that restarted forgets its sessions and answers 404: the session is then
// initialized anew and the request sent again, which is safe because the 404 means it
// never ran.

export interface McpUpstreamSettings {
  readonly provider: string;
  /** The MCP endpoint (base_url). */
  readonly url: URL;
  /** Its origin is url.origin; calls use url.pathname (and search). */
  readonly pool: ProviderPool;
  /** Extra configured headers (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  /** Sent as Authorization; never logged. */
  readonly credential: Credential | null;
  /** Time to the headers, and the longest silence between body chunks or events. */
  readonly timeoutMs: number;
  /** The tools are listed again this often (0: never). */
  readonly recheckMs: number;
  readonly clientInfo: { readonly name: string; readonly version: string };
}

export type UpstreamEvent =
  | { kind: 'catalog'; provider: string; catalog: ToolCatalog; changed: boolean }
  | { kind: 'session'; provider: string; what: 'initialized' | 'reinitialized' | 'expired'; sessionId: string | null }
  | { kind: 'problem'; provider: string; message: string; retryInMs: number };

export interface UpstreamCallRequest {
  readonly method: string;
  /** Sent as given. */
  readonly params: Record<string, unknown>;
  readonly signal?: StopSignal;
  /** The server's notifications on this call's stream, in order, before the outcome. */
  readonly onNotification?: (n: JsonRpcNotification) => void;
}

const MAX_RETRY_MS = 30_000;
/** The longest a stop waits for the session's DELETE. */
const MAX_DELETE_MS = 2000;

interface RequestOptions {
  readonly signal?: StopSignal;
  readonly onNotification?: (n: JsonRpcNotification) => void;
  /** After a re-initialization, list the tools again (not when the request is a listing). */
  readonly relistAfterReinit: boolean;
}

export class McpUpstream {
  #settings: McpUpstreamSettings;
  readonly #onEvent: (e: UpstreamEvent) => void;
  readonly #now: () => number;
  readonly #lifetime = new Stop();
  #session: UpstreamSession | null = null;
  #establishing: Promise<SessionStart> | null = null;
  /** Bumped when the settings that identify a session change: an initialize begun before is stale. */
  #epoch = 0;
  #everInitialized = false;
  #catalog: ToolCatalog | null = null;
  #problem: string | null = null;
  #stream: StandingStream | null = null;
  #listing: Promise<void> | null = null;
  #queuedListing: Promise<void> | null = null;
  #retryTimer: NodeJS.Timeout | null = null;
  #recheckTimer: NodeJS.Timeout | null = null;
  #failures = 0;
  #nextId = 1;
  #lastRoute: { settings: McpUpstreamSettings; session: UpstreamSession | null; route: RpcRoute } | null = null;
  #started = false;
  #stopped = false;

  constructor(settings: McpUpstreamSettings, onEvent: (e: UpstreamEvent) => void, now: () => number = Date.now) {
    this.#settings = settings;
    this.#onEvent = onEvent;
    this.#now = now;
  }

  get catalog(): ToolCatalog | null {
    return this.#catalog;
  }

  get problem(): string | null {
    return this.#problem;
  }

  get sessionId(): string | null {
    return this.#session?.id ?? null;
  }

  get streamOpen(): boolean {
    return this.#stream?.open ?? false;
  }

  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    this.#startRecheck();
    void this.relist();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#clearTimers();
    this.#stream?.close();
    this.#stream = null;
    const session = this.#session;
    this.#session = null;
    this.#lifetime.abort();
    if (session?.id != null) await this.#deleteSession(this.#settings, session);
  }

  update(settings: McpUpstreamSettings): void {
    const previous = this.#settings;
    this.#settings = settings;
    if (this.#stopped) return;
    if (this.#started && previous.recheckMs !== settings.recheckMs) this.#startRecheck();
    if (!sameIdentity(previous, settings)) {
      this.#epoch += 1;
      this.#establishing = null;
      const old = this.#session;
      this.#session = null;
      this.#stream?.close();
      this.#stream = null;
      if (old?.id != null) void this.#deleteSession(previous, old);
      // Before start, the next call initializes under the new settings.
      if (this.#started) void this.relist();
    } else if (previous.pool !== settings.pool && this.#session !== null) {
      // The old pool closes once its calls end: the standing stream must leave it.
      this.#openStream(this.#session);
    }
  }

  /** Lists the tools now; at most one listing runs, and at most one more waits behind it. */
  relist(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#listing === null) {
      const listing = this.#list().finally(() => {
        if (this.#listing === listing) this.#listing = null;
      });
      this.#listing = listing;
      return listing;
    }
    this.#queuedListing ??= this.#listing.then(() => {
      this.#queuedListing = null;
      return this.relist();
    });
    return this.#queuedListing;
  }

  async call(request: UpstreamCallRequest): Promise<CallOutcome> {
    const answer = await this.#request(request.method, request.params, {
      signal: request.signal,
      onNotification: request.onNotification,
      relistAfterReinit: true,
    });
    return outcomeOf(answer);
  }

  async #list(): Promise<void> {
    const previous = this.#catalog;
    let source: UpstreamSession | null = null;
    try {
      const tools = await listTools(async (cursor) => {
        const answer = await this.#request('tools/list', cursor === null ? {} : { cursor }, { relistAfterReinit: false });
        const outcome = outcomeOf(answer);
        if (outcome.kind !== 'result') throw new Error(`tools/list: ${describeFailure(outcome)}`);
        source = this.#session;
        return outcome.result;
      });
      if (this.#stopped || source === null) return;
      const { provider } = this.#settings;
      const { protocolVersion, serverInfo } = source as UpstreamSession;
      const catalog = catalogOf({ provider, protocolVersion, serverInfo }, tools, this.#now());
      this.#catalog = catalog;
      this.#problem = null;
      this.#failures = 0;
      if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
      this.#retryTimer = null;
      this.#emit({ kind: 'catalog', provider, catalog, changed: !sameTools(previous, catalog) });
    } catch (err) {
      this.#fail(err instanceof Error ? err.message : String(err));
    }
  }

  /** Sends a request in the current session, initializing one first when there is none. */
  async #request(method: string, params: Record<string, unknown>, options: RequestOptions): Promise<RpcAnswer> {
    if (this.#stopped) return { kind: 'failed', reason: 'session', reached: false, detail: 'the upstream is stopped' };
    // Almost always the session is there: no wait is set up for it.
    let start: SessionStart =
      this.#session !== null ? { ok: true, session: this.#session } : await this.#sessionWithin(this.#settings.timeoutMs, options.signal);
    if (!start.ok && options.signal?.aborted === true) {
      return { kind: 'failed', reason: 'aborted', reached: false, detail: 'aborted before the session was ready' };
    }
    for (let attempt = 0; ; attempt += 1) {
      if (!start.ok) return { kind: 'failed', reason: start.reason, reached: false, detail: start.message };
      const session = start.session;
      const id = this.#nextId++;
      const route = this.#route(this.#settings, session, options.signal);
      const answer = await sendRequest(route, id, method, params, {
        onNotification: options.onNotification,
        onServerRequest: (r) => this.#answerServerRequest(session, r),
      });
      if (answer.kind === 'status' && answer.status === 404 && session.id !== null && attempt === 0) {
        start = await this.#reinitialize(session, options.relistAfterReinit);
        continue;
      }
      if (answer.kind === 'failed' && answer.reason === 'aborted' && !this.#stopped) {
        const cancelled = {
          requestId: id,
          reason: 'the gateway stopped the call (its caller went away, cancelled it, or its deadline passed)',
        };
        void sendMessage(this.#route(this.#settings, session), { jsonrpc: '2.0', method: 'notifications/cancelled', params: cancelled });
      }
      return answer;
    }
  }

  /** The session, initializing one if needed, within `ms` (or the caller's abort). */
  async #sessionWithin(ms: number, signal?: StopSignal): Promise<SessionStart> {
    if (this.#session !== null) return { ok: true, session: this.#session };
    // The wait ends at the session, the time limit or the caller's stop, whichever is first.
    const waiting = new Stop();
    const stopWaiting = (): void => waiting.abort();
    signal?.addEventListener('abort', stopWaiting, { once: true });
    if (signal?.aborted === true) waiting.abort();
    const timedOut = pause(ms, waiting).then(
      (elapsed): SessionStart => ({
        ok: false,
        reason: 'session',
        message: elapsed ? `initialize took longer than ${ms} ms` : 'aborted while initializing',
      }),
    );
    const result = await Promise.race([this.#ensureSession(), timedOut]);
    signal?.removeEventListener('abort', stopWaiting);
    waiting.abort();
    return result;
  }

  #ensureSession(): Promise<SessionStart> {
    if (this.#session !== null) return Promise.resolve({ ok: true, session: this.#session });
    if (this.#establishing !== null) return this.#establishing;
    const establishing = this.#initialize().finally(() => {
      if (this.#establishing === establishing) this.#establishing = null;
    });
    this.#establishing = establishing;
    return establishing;
  }

  async #initialize(): Promise<SessionStart> {
    const epoch = this.#epoch;
    const settings = this.#settings;
    const start = await initializeSession((s) => this.#route(settings, s), this.#nextId++, settings.clientInfo);
    if (this.#stopped) return { ok: false, reason: 'session', message: 'the upstream is stopped' };
    if (epoch !== this.#epoch) return this.#ensureSession();
    if (!start.ok) return start;
    this.#session = start.session;
    const what = this.#everInitialized ? 'reinitialized' : 'initialized';
    this.#everInitialized = true;
    this.#emit({ kind: 'session', provider: settings.provider, what, sessionId: start.session.id });
    this.#openStream(start.session);
    return start;
  }

  /** The server forgot `stale`: a new session, once for every request that learned it. */
  async #reinitialize(stale: UpstreamSession, relist: boolean): Promise<SessionStart> {
    if (this.#session === stale) {
      this.#session = null;
      this.#stream?.close();
      this.#stream = null;
      this.#emit({ kind: 'session', provider: this.#settings.provider, what: 'expired', sessionId: stale.id });
    }
    const start = await this.#ensureSession();
    if (start.ok && relist) void this.relist();
    return start;
  }

  #openStream(session: UpstreamSession): void {
    this.#stream?.close();
    const stream = new StandingStream({
      route: () => (this.#session === session && !this.#stopped ? this.#route(this.#settings, session) : null),
      onMessage: (message) => this.#onStreamMessage(session, message),
      onOpenChange: () => undefined,
      onExpired: () => {
        void this.#reinitialize(session, true).then((start) => {
          if (!start.ok) this.#fail(start.message);
        });
      },
      onFailure: (message) => this.#fail(message),
    });
    this.#stream = stream;
    stream.start();
  }

  #onStreamMessage(session: UpstreamSession, message: Record<string, unknown>): void {
    if (typeof message.method !== 'string') return;
    if (typeof message.id === 'string' || typeof message.id === 'number') {
      this.#answerServerRequest(session, { id: message.id, method: message.method });
    } else if (message.method === 'notifications/tools/list_changed') {
      void this.relist();
    }
  }

  /** The gateway takes no requests from a server (sampling, elicitation, roots): all but ping are refused. */
  #answerServerRequest(session: UpstreamSession, request: ServerRequest): void {
    if (this.#stopped) return;
    const answer =
      request.method === 'ping'
        ? { jsonrpc: '2.0', id: request.id, result: {} }
        : { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `${request.method.slice(0, 100)} is not supported` } };
    void sendMessage(this.#route(this.#settings, session), answer);
  }

  #fail(problem: string): void {
    if (this.#stopped) return;
    const message = redacted(problem, this.#settings.credential);
    this.#problem = message;
    const retryInMs = Math.min(MAX_RETRY_MS, jittered(Math.min(MAX_RETRY_MS, 1000 * 2 ** Math.min(this.#failures, 5))));
    this.#failures += 1;
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      void this.relist();
    }, retryInMs);
    this.#retryTimer.unref();
    this.#emit({ kind: 'problem', provider: this.#settings.provider, message, retryInMs });
  }

  #startRecheck(): void {
    if (this.#recheckTimer !== null) clearInterval(this.#recheckTimer);
    this.#recheckTimer = null;
    if (this.#settings.recheckMs <= 0) return;
    this.#recheckTimer = setInterval(() => void this.relist(), this.#settings.recheckMs);
    this.#recheckTimer.unref();
  }

  #clearTimers(): void {
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
    if (this.#recheckTimer !== null) clearInterval(this.#recheckTimer);
    this.#retryTimer = null;
    this.#recheckTimer = null;
  }

  /** Ends the session server-side: best effort, and bounded, since the server may be gone. */
  async #deleteSession(settings: McpUpstreamSettings, session: UpstreamSession): Promise<void> {
    const timeoutMs = Math.min(settings.timeoutMs, MAX_DELETE_MS);
    const route = this.#route(settings, session, AbortSignal.timeout(timeoutMs), false);
    const call = { method: 'DELETE' as const, path: route.path, headers: route.headers, body: null, timeoutMs };
    await exchange({ pool: route.pool, call, signal: route.signal }).done;
  }

  #route(settings: McpUpstreamSettings, session: UpstreamSession | null, signal?: StopSignal, withLifetime = true): RpcRoute {
    // Settings and sessions are replaced, never changed: the headers built for a pair hold
    // until either is, so a call does not build them again.
    let base = this.#lastRoute;
    if (base === null || base.settings !== settings || base.session !== session) {
      base = { settings, session, route: routeOf(settings, session, this.#lifetime.signal) };
      this.#lastRoute = base;
    }
    if (signal === undefined) return base.route;
    return withLifetime ? { ...base.route, signal, stopSignal: this.#lifetime.signal } : { ...base.route, signal };
  }

  #emit(event: UpstreamEvent): void {
    if (this.#stopped) return;
    try {
      this.#onEvent(event);
    } catch {
      // A listener's failure is its own: it must not fail the listing or the session that reported it.
    }
  }
}
