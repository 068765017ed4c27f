import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type EventStore, StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

// A real MCP server for the upstream client's tests: the official SDK's Streamable HTTP
// transport on node:http over loopback, one transport (and one server) per session, as a
// stateful server runs. It records every request's method and headers, can forget all its
// sessions (what a restart does), and can answer every request with one status.

/** Every event kept in memory, so a stream closed early can be resumed with Last-Event-ID. */
export class MemoryEventStore implements EventStore {
  readonly #events = new Map<string, { streamId: string; message: JSONRPCMessage }>();
  #count = 0;

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    this.#count += 1;
    const id = `${streamId}_${this.#count}`;
    this.#events.set(id, { streamId, message });
    return id;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const from = this.#events.get(lastEventId);
    if (from === undefined) return '';
    let after = false;
    for (const [id, event] of this.#events) {
      if (id === lastEventId) after = true;
      else if (after && event.streamId === from.streamId && Object.keys(event.message).length > 0) await send(id, event.message);
    }
    return from.streamId;
  }
}

export interface SeenRequest {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
}

export interface TestMcpServerOptions {
  /** One MCP server per session. */
  readonly makeServer: () => McpServer | Server;
  readonly enableJsonResponse?: boolean;
  readonly resumable?: boolean;
}

export class TestMcpServer {
  readonly seen: SeenRequest[] = [];
  /** The MCP servers of the live sessions, newest last. */
  readonly sessions: (McpServer | Server)[] = [];
  /** When set, every request is answered with this status. */
  failWith: number | null = null;
  readonly #transports = new Map<string, StreamableHTTPServerTransport>();
  readonly #options: TestMcpServerOptions;
  readonly #http: HttpServer;

  private constructor(options: TestMcpServerOptions) {
    this.#options = options;
    this.#http = createServer((req, res) => {
      void this.#handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  }

  static async start(options: TestMcpServerOptions): Promise<TestMcpServer> {
    const server = new TestMcpServer(options);
    await new Promise<void>((resolve) => server.#http.listen(0, '127.0.0.1', resolve));
    return server;
  }

  get origin(): string {
    return `http://127.0.0.1:${(this.#http.address() as AddressInfo).port}`;
  }

  get url(): URL {
    return new URL(`${this.origin}/mcp`);
  }

  /** What a restart does to a stateful server: every session is forgotten. */
  async forgetSessions(): Promise<void> {
    const transports = [...this.#transports.values()];
    this.#transports.clear();
    this.sessions.length = 0;
    await Promise.all(transports.map((t) => t.close()));
  }

  async close(): Promise<void> {
    await this.forgetSessions();
    this.#http.closeAllConnections();
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
  }

  async #handle(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    this.seen.push({ method: req.method ?? '', headers: req.headers });
    if (this.failWith !== null) {
      res.writeHead(this.failWith, { 'content-type': 'text/plain' }).end('the server is overloaded');
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const transport = this.#transports.get(sessionId);
      if (transport === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
      await transport.handleRequest(req, res);
      return;
    }
    const server = this.#options.makeServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: this.#options.enableJsonResponse ?? false,
      ...(this.#options.resumable === true ? { eventStore: new MemoryEventStore(), retryInterval: 50 } : {}),
      onsessioninitialized: (id) => {
        this.#transports.set(id, transport);
        this.sessions.push(server);
      },
      onsessionclosed: (id) => {
        this.#transports.delete(id);
      },
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }
}
