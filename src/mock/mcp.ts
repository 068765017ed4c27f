import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult, ListToolsResult } from '@modelcontextprotocol/sdk/types.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Exchange } from './exchange.js';
import { drop, pause, replyJson, replyMethodNotAllowed, replyNotFound } from './exchange.js';
import type { FaultQueue } from './fault-queue.js';
import { McpEventStore } from './mcp-event-store.js';
import type { McpAddedTool, McpToolName } from './mcp-tools.js';
import { McpToolSet } from './mcp-tools.js';

/** Served at `GET /__mock/mcp`, and by `MockProvider.mcpStats()`. */
export interface McpStats {
  /** Sessions created by an initialize since start (or reset). */
  sessions_opened: number;
  /** Sessions that would answer now (not deleted, not forgotten by a restart). */
  sessions_open: number;
  initialize_count: number;
  list_count: number;
  /** Standalone GET SSE streams currently open. */
  get_streams_open: number;
  /** Tool calls that ran, by served tool name. */
  calls: Record<string, number>;
  /** Tool calls the client cancelled (`notifications/cancelled`) while they ran, by served tool name. */
  cancelled: Record<string, number>;
  /** The `write` tool's count per key. */
  writes: Record<string, number>;
  /** Distinct `Authorization` values seen on /mcp, first seen first, at most 20. */
  authorization_seen: string[];
  /** The headers of the last `tools/call` POST, as received; null before one. */
  last_call_headers: IncomingHttpHeaders | null;
  /** Protocol versions asked for in initialize or sent in `mcp-protocol-version`, first seen first. */
  protocol_versions_seen: string[];
}

/** A change to the served tools: `POST /__mock/mcp/tools`, or `MockProvider.mcpTools()`. */
export interface McpToolChange {
  add?: McpAddedTool[];
  remove?: string[];
}

export interface McpMockOptions {
  /** The mock's name: serverInfo.name, and echoed by the tools. */
  name: string;
  tools: readonly McpToolName[];
  prefix: string;
  /** Tools per `tools/list` page; 0 = all on one. */
  pageSize: number;
  /** How a POST is answered: one JSON body, or an SSE stream. */
  response: 'json' | 'sse';
  /** The bearer token every /mcp request must carry; null = none needed. */
  apiKey: string | null;
}

interface McpSession {
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  readonly events: McpEventStore;
  /** tools/call request ids whose connection a `cut_stream` fault drops once the tool has run. */
  readonly cuts: Map<string, Exchange>;
}

const seenLimit = 20;

function rpcError(ex: Exchange, status: number, code: number, message: string, headers?: Record<string, string>): void {
  replyJson(ex, status, JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), headers);
}

function remember(list: string[], value: string | undefined): void {
  if (value !== undefined && list.length < seenLimit && !list.includes(value)) list.push(value);
}

function methodOf(message: unknown): unknown {
  return typeof message === 'object' && message !== null ? (message as Record<string, unknown>).method : undefined;
}

function encodeCursor(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^offset:(\d{1,9})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (match === null) throw new McpError(ErrorCode.InvalidParams, 'invalid cursor');
  return Number(match[1]);
}

/**
 * The mock's MCP server: Streamable HTTP at /mcp, one SDK transport and server per session,
 * with faults for tools/call and the state the control API reads and changes.
 */
export class McpMock {
  readonly #opts: McpMockOptions;
  readonly #tools: McpToolSet;
  /** Initialized sessions by id: the ones a request can name. */
  #sessions = new Map<string, McpSession>();
  /** Every live session, initialized or not, so restart and close miss none. */
  readonly #live = new Set<McpSession>();
  readonly #getStreams = new Set<ServerResponse>();
  // Ends waits in running tools when the mock closes, so no timer outlives it.
  readonly #shutdown = new AbortController();
  #opened = 0;
  #initializes = 0;
  #lists = 0;
  #calls = new Map<string, number>();
  #cancelled = new Map<string, number>();
  #writes = new Map<string, number>();
  #authorizations: string[] = [];
  #versions: string[] = [];
  #lastCallHeaders: IncomingHttpHeaders | null = null;

  constructor(opts: McpMockOptions) {
    this.#opts = opts;
    this.#tools = new McpToolSet(opts.tools, opts.prefix);
  }

  stats(): McpStats {
    let streams = 0;
    for (const res of this.#getStreams) if (res.headersSent && res.statusCode === 200 && !res.writableEnded) streams += 1;
    return {
      sessions_opened: this.#opened,
      sessions_open: this.#sessions.size,
      initialize_count: this.#initializes,
      list_count: this.#lists,
      get_streams_open: streams,
      calls: Object.fromEntries(this.#calls),
      cancelled: Object.fromEntries(this.#cancelled),
      writes: Object.fromEntries(this.#writes),
      authorization_seen: [...this.#authorizations],
      last_call_headers: this.#lastCallHeaders === null ? null : { ...this.#lastCallHeaders },
      protocol_versions_seen: [...this.#versions],
    };
  }

  /** Applies a tool change, then tells every session its tool list changed; returns the tool names now served. */
  changeTools(change: McpToolChange): string[] {
    for (const name of change.remove ?? []) this.#tools.remove(name);
    for (const tool of change.add ?? []) this.#tools.add(tool);
    this.#announceToolChange();
    return this.#tools.list().map((t) => t.name);
  }

  /** Forgets every session, as a restarted server would: their ids then get 404. Counters are kept. */
  async restart(): Promise<void> {
    const sessions = [...this.#live];
    this.#sessions = new Map();
    this.#live.clear();
    await Promise.all(sessions.map((s) => s.server.close().catch(() => undefined)));
  }

  /** Ends every standalone GET stream; the sessions stay, so a client reconnects with Last-Event-ID. */
  dropStreams(): void {
    for (const session of this.#sessions.values()) session.transport.closeStandaloneSSEStream();
  }

  reset(): void {
    this.#opened = 0;
    this.#initializes = 0;
    this.#lists = 0;
    this.#calls = new Map();
    this.#cancelled = new Map();
    this.#writes = new Map();
    this.#authorizations = [];
    this.#versions = [];
    this.#lastCallHeaders = null;
    this.#tools.reset();
    this.#announceToolChange();
  }

  async close(): Promise<void> {
    this.#shutdown.abort();
    await this.restart();
  }

  /** Serves one request to /mcp; `faults` is the mock's queue, which only tools/call meets. */
  handle(ex: Exchange, faults: FaultQueue): void {
    const { req } = ex;
    if (ex.path !== '/mcp') return replyNotFound(ex);
    const authorization = req.headers.authorization;
    remember(this.#authorizations, authorization);
    const version = req.headers['mcp-protocol-version'];
    remember(this.#versions, typeof version === 'string' ? version : undefined);
    if (this.#opts.apiKey !== null && authorization !== `Bearer ${this.#opts.apiKey}`) {
      return rpcError(ex, 401, -32001, 'Unauthorized: a valid bearer token is required', { 'www-authenticate': 'Bearer' });
    }
    const method = req.method ?? 'GET';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') return replyMethodNotAllowed(ex, 'GET, POST, DELETE');
    let body: unknown;
    if (method === 'POST') {
      try {
        body = JSON.parse(ex.body);
      } catch {
        return rpcError(ex, 400, ErrorCode.ParseError, 'Parse error: the body is not JSON');
      }
    }
    const messages: unknown[] = method !== 'POST' ? [] : Array.isArray(body) ? body : [body];
    for (const message of messages) {
      if (methodOf(message) !== 'initialize') continue;
      this.#initializes += 1;
      const asked = (message as { params?: { protocolVersion?: unknown } }).params?.protocolVersion;
      remember(this.#versions, typeof asked === 'string' ? asked : undefined);
    }
    const session = this.#sessionFor(ex, messages);
    if (session === undefined) return;
    const callIds = messages.filter((m) => methodOf(m) === 'tools/call').map((m) => String((m as { id?: unknown }).id));
    if (callIds.length === 0) return this.#serve(session, ex, body);
    this.#lastCallHeaders = { ...req.headers };
    const fault = faults.take();
    switch (fault?.mode) {
      case undefined:
        return this.#serve(session, ex, body);
      case 'status': {
        const text =
          fault.source.body === undefined
            ? JSON.stringify({
                jsonrpc: '2.0',
                error: { code: ErrorCode.InternalError, message: `Mock fault: HTTP ${fault.status}.` },
                id: null,
              })
            : fault.bodyText;
        return replyJson(ex, fault.status, text, fault.headers);
      }
      case 'latency':
        void pause(ex, fault.latencyMs).then(() => {
          if (!ex.closed) this.#serve(session, ex, body);
        });
        return;
      case 'close':
        return drop(ex);
      case 'hang':
        return;
      default:
        // cut_stream (and stream_exception, which MCP has no event for): the tool runs, then the connection drops before its answer.
        for (const id of callIds) {
          session.cuts.set(id, ex);
          // Only an SSE answer is kept for resumption; a JSON one never reaches the store.
          if (this.#opts.response === 'sse') session.events.lose(id);
        }
        return this.#serve(session, ex, body);
    }
  }

  /** The session a request names, a new one for an initialize without one, or undefined once the refusal is sent. */
  #sessionFor(ex: Exchange, messages: readonly unknown[]): McpSession | undefined {
    const id = ex.req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const session = this.#sessions.get(id);
      if (session === undefined) rpcError(ex, 404, -32001, 'Session not found');
      return session;
    }
    if (messages.some((m) => methodOf(m) === 'initialize')) return this.#open();
    rpcError(ex, 400, -32000, 'Bad Request: No valid session ID provided');
    return undefined;
  }

  #serve(session: McpSession, ex: Exchange, body: unknown): void {
    if (ex.req.method === 'GET') {
      this.#getStreams.add(ex.res);
      ex.res.once('close', () => this.#getStreams.delete(ex.res));
    }
    session.transport.handleRequest(ex.req, ex.res, body).catch(() => {
      if (!ex.res.headersSent && !ex.closed) rpcError(ex, 500, ErrorCode.InternalError, 'Internal error');
    });
  }

  #open(): McpSession {
    const events = new McpEventStore();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      enableJsonResponse: this.#opts.response === 'json',
      eventStore: events,
      onsessioninitialized: (id) => {
        this.#opened += 1;
        this.#sessions.set(id, session);
      },
    });
    const server = new Server({ name: this.#opts.name, version: '1.0.0' }, { capabilities: { tools: { listChanged: true }, logging: {} } });
    const session: McpSession = { transport, server, events, cuts: new Map() };
    this.#live.add(session);
    transport.onclose = () => {
      this.#live.delete(session);
      const id = transport.sessionId;
      if (id !== undefined && this.#sessions.get(id) === session) this.#sessions.delete(id);
    };
    this.#handleTools(session);
    // connect() only wires callbacks (the transport's start is a no-op), so it settles before any message arrives.
    void server.connect(transport);
    return session;
  }

  #handleTools(session: McpSession): void {
    const { server } = session;
    server.setRequestHandler(ListToolsRequestSchema, async (request): Promise<ListToolsResult> => {
      this.#lists += 1;
      const tools = this.#tools.list();
      const size = this.#opts.pageSize;
      if (size === 0) return { tools };
      const cursor = request.params?.cursor;
      const start = cursor === undefined ? 0 : decodeCursor(cursor);
      const page = tools.slice(start, start + size);
      return start + size < tools.length ? { tools: page, nextCursor: encodeCursor(start + size) } : { tools: page };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const { name } = request.params;
      const entry = this.#tools.find(name);
      if (entry === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      this.#calls.set(name, (this.#calls.get(name) ?? 0) + 1);
      const token = request.params._meta?.progressToken;
      try {
        return await entry.run(request.params.arguments ?? {}, {
          mockName: this.#opts.name,
          signal: AbortSignal.any([extra.signal, this.#shutdown.signal]),
          progress: async (progress, total, message) => {
            if (token === undefined) return;
            await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total, message } });
          },
          log: async (data) => {
            await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: this.#opts.name, data } });
          },
          write: (key) => {
            const count = (this.#writes.get(key) ?? 0) + 1;
            this.#writes.set(key, count);
            return count;
          },
        });
      } finally {
        // The SDK aborts a request's signal when its client sends notifications/cancelled for it.
        if (extra.signal.aborted && !this.#shutdown.signal.aborted) this.#cancelled.set(name, (this.#cancelled.get(name) ?? 0) + 1);
        const cut = session.cuts.get(String(extra.requestId));
        if (cut !== undefined) {
          session.cuts.delete(String(extra.requestId));
          drop(cut);
        }
      }
    });
  }

  #announceToolChange(): void {
    for (const session of this.#sessions.values()) void session.server.sendToolListChanged().catch(() => undefined);
  }
}
