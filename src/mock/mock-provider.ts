import { createPublicKey } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import type { A2aMock } from './a2a.js';
import type { A2aVersion } from './a2a-cards.js';
import { a2aMockFor, checkA2aOptions } from './a2a-options.js';
import type { A2aStats } from './a2a-stats.js';
import { routeBedrock } from './bedrock.js';
import { handleChatCompletion } from './chat-completion.js';
import { handleCompletions } from './completions.js';
import { handleControl, resetProvider } from './control-api.js';
import { handleEmbeddings } from './embeddings.js';
import type { Exchange } from './exchange.js';
import { pause, replyJson, replyMethodNotAllowed, replyNotFound } from './exchange.js';
import type { MockFault } from './fault-queue.js';
import { parseFault } from './fault-queue.js';
import type { MockTokenStats } from './gcp-tokens.js';
import { GEMINI_PATH, handleGemini, handleGeminiModels } from './gemini.js';
import type { McpStats, McpToolChange } from './mcp.js';
import { McpMock } from './mcp.js';
import type { McpToolName } from './mcp-tools.js';
import { DEFAULT_MCP_TOOLS, MCP_TOOL_NAMES } from './mcp-tools.js';
import { handleCountTokens, handleMessages } from './messages.js';
import type { MockContext } from './provider-context.js';
import { createContext } from './provider-context.js';
import type { MockStats } from './request-stats.js';
import { handleResponses, handleStoredResponse } from './responses.js';
import { listenH1AndH2c } from './two-protocol-listener.js';
import { routeVertex } from './vertex.js';

/**
 * An API the mock serves alone, as that service would (a cloud's model API, an MCP server, or
 * A2A agents); without one it serves OpenAI, Anthropic and Gemini paths together.
 */
export type MockProtocol = 'bedrock' | 'vertex' | 'gemini' | 'mcp' | 'a2a';

export const MOCK_PROTOCOLS: readonly MockProtocol[] = ['bedrock', 'vertex', 'gemini', 'mcp', 'a2a'];

/** What a protocol of the mock takes besides the common options, and where a provider points at it. */
export interface MockProtocolTraits {
  /** An AWS key pair, which its SigV4 check accepts (Bedrock). */
  readonly awsKeys: boolean;
  /** A Google service account, whose JWTs its token endpoint verifies (Vertex). */
  readonly serviceAccount: boolean;
  /** The MCP server's options: which tools, their prefix, paging, the response mode. */
  readonly mcpOptions: boolean;
  /** The A2A agents' options: versions, signed cards, public URL, the worker's pace. */
  readonly a2aOptions: boolean;
  /** The base_url a provider of that kind takes to reach the mock listening at `origin`. */
  baseUrlHint(origin: string): string;
}

const TRAITS: Readonly<Record<MockProtocol, MockProtocolTraits>> = {
  bedrock: {
    awsKeys: true,
    serviceAccount: false,
    mcpOptions: false,
    a2aOptions: false,
    baseUrlHint: (o) => `${o} (base_url for a bedrock provider)`,
  },
  vertex: {
    awsKeys: false,
    serviceAccount: true,
    mcpOptions: false,
    a2aOptions: false,
    baseUrlHint: (o) => `${o} (base_url for a vertex provider; gcp.token_url: ${o}/token)`,
  },
  gemini: {
    awsKeys: false,
    serviceAccount: false,
    mcpOptions: false,
    a2aOptions: false,
    baseUrlHint: (o) => `${o} (base_url for a gemini provider)`,
  },
  mcp: {
    awsKeys: false,
    serviceAccount: false,
    mcpOptions: true,
    a2aOptions: false,
    baseUrlHint: (o) => `${o}/mcp (base_url for an mcp provider)`,
  },
  a2a: {
    awsKeys: false,
    serviceAccount: false,
    mcpOptions: false,
    a2aOptions: true,
    baseUrlHint: (o) => `${o} (A2A agents at ${o}/instant, /worker, /asker, /failer; cards at /<agent>/.well-known/agent-card.json)`,
  },
};

/** The OpenAI, Anthropic and Gemini paths served together (no protocol named). */
const TOGETHER: MockProtocolTraits = {
  awsKeys: false,
  serviceAccount: false,
  mcpOptions: false,
  a2aOptions: false,
  baseUrlHint: (o) => `${o}/v1 (base_url for openai and anthropic providers; gemini and azure_openai: ${o})`,
};

/** The traits of the protocol named (anything else, or nothing: the paths served together). */
export function mockProtocolTraits(protocol: unknown): MockProtocolTraits {
  return MOCK_PROTOCOLS.find((p) => p === protocol) === undefined ? TOGETHER : TRAITS[protocol as MockProtocol];
}

/** How the MCP server answers a POST: one `application/json` body, or a `text/event-stream`. */
export type McpResponseMode = 'json' | 'sse';

export interface MockProviderOptions {
  /** Echoed in `x-mock-provider` and in the reply text. */
  name: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Added before answering every /v1 request. Default 0. */
  latencyMs?: number;
  /** Wait between stream chunks; a request may override it with `x-mock-chunk-delay-ms`. Default 0. */
  streamChunkDelayMs?: number;
  /** Content chunks per stream; a request may override it with `x-mock-chunks`. Default 5. */
  streamChunks?: number;
  /**
   * The Gemini API key (`x-goog-api-key`, or `?key=`) its Gemini endpoints accept; any other,
   * or none, is a 400 API_KEY_INVALID. Without it they take any key. The model list
   * (`GET /v1/models`) then takes it as `Authorization: Bearer` or `x-api-key`, else a 401.
   * With protocol `mcp`, every /mcp request must carry `Authorization: Bearer <apiKey>`, else
   * a 401. The other endpoints never check one.
   */
  apiKey?: string;
  /** Serve only this cloud's API (its model paths; the control API always); omitted = OpenAI, Anthropic and Gemini together. */
  protocol?: MockProtocol;
  /** Vertex AI: seconds an access token from `POST /token` or the metadata server lives (`expires_in`); 0 = born expired. Default 3600. */
  tokenTtlS?: number;
  /** Vertex AI: the service account's public key (PEM); `POST /token` then verifies the JWT's RS256 signature. Without it any well-formed JWT is taken. */
  gcpPublicKeyPem?: string;
  /**
   * The one AWS key pair whose SigV4 signatures the Bedrock endpoints accept; both required
   * with protocol `bedrock`, refused without it. An unknown key id is a 403
   * UnrecognizedClientException, a wrong signature a 403 InvalidSignatureException.
   */
  awsAccessKeyId?: string;
  awsSecretAccessKey?: string;
  /** MCP: the built-in tools served (default all of `MCP_TOOL_NAMES` but `chatter`). */
  mcpTools?: readonly McpToolName[];
  /** MCP: prepended to every built-in tool's name, so two mocks can serve different names. Default ''. */
  mcpToolPrefix?: string;
  /** MCP: tools per `tools/list` page, with `nextCursor`; 0 (the default) = all on one page. */
  mcpPageSize?: number;
  /** MCP: how POSTs are answered (the transport's `enableJsonResponse`). Default `sse`. */
  mcpResponse?: McpResponseMode;
  /**
   * A2A: the protocol versions the cards advertise and the endpoints take. Default both. A
   * 1.0-only mock answers 0.3 method names -32601; a 0.3-only one serves a pure 0.3 card and
   * answers 1.0 names -32601.
   */
  a2aVersions?: readonly A2aVersion[];
  /** A2A: cards carry `signatures` (ES256 JWS by a key made at start; its public JWK at `GET /.well-known/jwks.json`). */
  a2aSignedCards?: boolean;
  /** A2A: the base URL (`http(s)://host[:port][/prefix]`) the cards and `GET /` name instead of the listen URL. */
  a2aPublicUrl?: string;
  /** A2A: the worker's wait before each step, in ms. Default 20. */
  a2aStepMs?: number;
}

export interface MockProvider {
  readonly name: string;
  readonly port: number;
  /**
   * `http://127.0.0.1:PORT/v1`, ready to use as an OpenAI base URL; with protocol a2a the origin
   * `http://127.0.0.1:PORT` (the agents are at `/<agent>`).
   */
  readonly baseUrl: string;
  /** `http://127.0.0.1:PORT`, ready to use as an Anthropic base URL (its SDK adds `/v1/messages`) or a Gemini one (`/v1beta/models/...`). */
  readonly origin: string;
  stats(): MockStats;
  /** Vertex AI: the access tokens issued and refused, like `GET /__mock/tokens`. */
  tokenStats(): MockTokenStats;
  /** Clears stats and faults, like `POST /__mock/reset`. */
  reset(): void;
  /** Queues a fault, like `POST /__mock/faults`; throws a TypeError when it is invalid. */
  addFault(fault: MockFault): void;
  /** Clears all faults, like `DELETE /__mock/faults`. */
  clearFaults(): void;
  /** MCP: sessions, calls, writes and headers seen, like `GET /__mock/mcp`; throws unless serving MCP. */
  mcpStats(): McpStats;
  /** MCP: adds or removes tools, then sends `notifications/tools/list_changed` to every session, like `POST /__mock/mcp/tools`. */
  mcpTools(change: McpToolChange): void;
  /** MCP: forgets every session, as a restart would (old ids get 404), like `POST /__mock/mcp/restart`. */
  mcpRestart(): Promise<void>;
  /** MCP: ends every standalone GET stream, sessions kept, like `POST /__mock/mcp/drop-streams`. */
  mcpDropStreams(): void;
  /** A2A: requests per agent and method, card fetches, the headers each agent saw last, like `GET /__mock/a2a`; throws unless serving A2A. */
  a2aStats(): A2aStats;
  /** Stops listening and destroys every open connection, hanging requests included. */
  close(): Promise<void>;
}

// Longer than the usual client keep-alive (undici: 4 s, Node's agent: 5 s) so the client, not
// the server, decides when an idle connection ends, and benchmark clients never race a close.
const keepAliveTimeoutMs = 65_000;
// Node requires headersTimeout to exceed keepAliveTimeout, or an idle socket may be cut early.
const headersTimeoutMs = 66_000;

// Node's own rule for header values (checkInvalidHeaderChar); the name travels in one.
const invalidHeaderChar = /[^\t\x20-\x7e\x80-\xff]/;

function checkOptions(opts: MockProviderOptions): void {
  if (typeof opts.name !== 'string' || opts.name === '' || invalidHeaderChar.test(opts.name)) {
    throw new TypeError('mock provider name must be a non-empty string usable in a header');
  }
  if (opts.apiKey !== undefined && (typeof opts.apiKey !== 'string' || opts.apiKey === '')) {
    throw new TypeError('mock provider apiKey must be a non-empty string');
  }
  if (opts.protocol !== undefined && !MOCK_PROTOCOLS.includes(opts.protocol)) {
    throw new TypeError(`mock provider protocol must be one of ${MOCK_PROTOCOLS.join(', ')}, got ${String(opts.protocol)}`);
  }
  if (opts.gcpPublicKeyPem !== undefined) {
    try {
      createPublicKey(opts.gcpPublicKeyPem);
    } catch {
      throw new TypeError('mock provider gcpPublicKeyPem must be a PEM public key');
    }
  }
  for (const key of ['awsAccessKeyId', 'awsSecretAccessKey'] as const) {
    const value = opts[key];
    if (opts.protocol === 'bedrock' && (typeof value !== 'string' || value === '')) {
      throw new TypeError(`mock provider ${key} is required with protocol bedrock: every Bedrock request is SigV4-signed by that key pair`);
    }
    if (opts.protocol !== 'bedrock' && value !== undefined) throw new TypeError(`mock provider ${key} only applies with protocol bedrock`);
  }
  checkMcpOptions(opts);
  checkA2aOptions(opts);
  for (const key of ['latencyMs', 'streamChunkDelayMs', 'streamChunks', 'port', 'tokenTtlS', 'mcpPageSize', 'a2aStepMs'] as const) {
    const value = opts[key];
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) {
      throw new RangeError(`mock provider ${key} must be a non-negative integer, got ${String(value)}`);
    }
  }
}

function checkMcpOptions(opts: MockProviderOptions): void {
  for (const key of ['mcpTools', 'mcpToolPrefix', 'mcpPageSize', 'mcpResponse'] as const) {
    if (opts.protocol !== 'mcp' && opts[key] !== undefined) throw new TypeError(`mock provider ${key} only applies with protocol mcp`);
  }
  const tools = opts.mcpTools;
  if (tools !== undefined && !(Array.isArray(tools) && tools.every((t) => MCP_TOOL_NAMES.includes(t)))) {
    throw new TypeError(`mock provider mcpTools must list tools among ${MCP_TOOL_NAMES.join(', ')}`);
  }
  if (opts.mcpToolPrefix !== undefined && typeof opts.mcpToolPrefix !== 'string')
    throw new TypeError('mock provider mcpToolPrefix must be a string');
  if (opts.mcpResponse !== undefined && opts.mcpResponse !== 'json' && opts.mcpResponse !== 'sse') {
    throw new TypeError(`mock provider mcpResponse must be json or sse, got ${String(opts.mcpResponse)}`);
  }
}

function baseUrlFor(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '') return `http://127.0.0.1:${port}/v1`;
  if (host === '::') return `http://[::1]:${port}/v1`;
  return host.includes(':') ? `http://[${host}]:${port}/v1` : `http://${host}:${port}/v1`;
}

function handleModels(ctx: MockContext, ex: Exchange): void {
  // OpenAI sends its key as a bearer, Anthropic in x-api-key: the list takes either.
  const { authorization, 'x-api-key': xApiKey } = ex.req.headers;
  if (ctx.apiKey !== null && authorization !== `Bearer ${ctx.apiKey}` && xApiKey !== ctx.apiKey)
    return replyJson(ex, 401, MODELS_KEY_INVALID);
  if (ctx.latencyMs <= 0) return replyJson(ex, 200, ctx.modelsBody);
  void pause(ex, ctx.latencyMs).then(() => {
    if (!ex.closed) replyJson(ex, 200, ctx.modelsBody);
  });
}

const MODELS_KEY_INVALID = JSON.stringify({
  error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
});

/** The model paths of the protocol the mock serves alone, or all of its own APIs. */
function routeFor(protocol: MockProtocol | undefined): (ctx: MockContext, ex: Exchange) => void {
  switch (protocol) {
    case 'bedrock':
      return routeBedrock;
    case 'vertex':
      return routeVertex;
    case 'gemini':
      return routeGemini;
    case 'mcp':
      return (ctx, ex) => (ctx.mcp as McpMock).handle(ex, ctx.faults);
    case 'a2a':
      return (ctx, ex) => (ctx.a2a as A2aMock).handle(ex);
    default:
      return route;
  }
}

function route(ctx: MockContext, ex: Exchange): void {
  switch (ex.path) {
    case '/v1/chat/completions':
      if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      return handleChatCompletion(ctx, ex);
    case '/v1/messages':
      if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      return handleMessages(ctx, ex);
    case '/v1/messages/count_tokens':
      if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      return handleCountTokens(ctx, ex);
    case '/v1/embeddings':
      if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      return handleEmbeddings(ctx, ex);
    case '/v1/completions':
      if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      return handleCompletions(ctx, ex);
    case '/v1/responses':
    case '/openai/responses':
      if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      return handleResponses(ctx, ex);
    case '/v1/models':
    // Azure OpenAI's list of a resource's models (`?api-version=`), the same shape.
    case '/openai/models':
      if (ex.req.method !== 'GET') return replyMethodNotAllowed(ex, 'GET');
      return handleModels(ctx, ex);
    default:
      // Azure OpenAI names the deployment in the path: /openai/deployments/{name}/chat/completions?api-version=...
      if (AZURE_CHAT.test(ex.path)) {
        if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
        return handleChatCompletion(ctx, ex);
      }
      if (AZURE_EMBEDDINGS.test(ex.path)) {
        if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
        return handleEmbeddings(ctx, ex);
      }
      if (AZURE_COMPLETIONS.test(ex.path)) {
        if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
        return handleCompletions(ctx, ex);
      }
      return routeGemini(ctx, ex);
  }
}

function routeGemini(ctx: MockContext, ex: Exchange): void {
  if (ex.path === '/v1beta/models') {
    if (ex.req.method !== 'GET') return replyMethodNotAllowed(ex, 'GET');
    return handleGeminiModels(ctx, ex);
  }
  const match = GEMINI_PATH.exec(ex.path);
  if (match === null) return ctx.protocol === 'gemini' ? replyNotFound(ex) : routeStoredResponse(ctx, ex);
  if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
  let model: string;
  try {
    model = decodeURIComponent(match[1] as string);
  } catch {
    return replyNotFound(ex);
  }
  handleGemini(ctx, ex, model, match[2] as string, ex.query);
}

const AZURE_CHAT = /^\/openai\/deployments\/[^/]+\/chat\/completions$/;
const AZURE_EMBEDDINGS = /^\/openai\/deployments\/[^/]+\/embeddings$/;
const AZURE_COMPLETIONS = /^\/openai\/deployments\/[^/]+\/completions$/;
/** `/v1/responses/{id}`, or Azure's `/openai/responses/{id}`. */
const STORED_RESPONSE = /^\/(?:v1|openai)\/responses\/([^/]+)$/;

function routeStoredResponse(ctx: MockContext, ex: Exchange): void {
  const match = STORED_RESPONSE.exec(ex.path);
  if (match === null) return replyNotFound(ex);
  if (ex.req.method !== 'GET' && ex.req.method !== 'DELETE') return replyMethodNotAllowed(ex, 'GET, DELETE');
  let id: string;
  try {
    id = decodeURIComponent(match[1] as string);
  } catch {
    return replyNotFound(ex);
  }
  handleStoredResponse(ctx, ex, id);
}

function onRequest(ctx: MockContext, serve: (ctx: MockContext, ex: Exchange) => void, req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  const method = req.method ?? 'GET';
  const ex: Exchange = {
    req,
    res,
    name: ctx.name,
    path,
    query: query === -1 ? '' : url.slice(query + 1),
    body: '',
    closed: false,
    severed: false,
  };
  const control = path.startsWith('/__mock/');
  if (!control) ctx.stats.count(method, path);
  res.once('close', () => {
    ex.closed = true;
    if (!control && !ex.severed && !res.writableEnded) ctx.stats.abort();
  });
  const done = (): void => {
    if (control) return handleControl(ctx, ex);
    ctx.stats.record({ method, path, httpVersion: req.httpVersion, headers: req.headers, body: ex.body, at: Date.now() });
    serve(ctx, ex);
  };
  if (ctx.protocol === 'bedrock') return readBytes(ex, done);
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    ex.body += chunk;
  });
  req.on('end', done);
}

/** Bedrock's signature covers the body's bytes, so they are kept as they came (`ex.raw`), and `body` is their UTF-8. */
function readBytes(ex: Exchange, done: () => void): void {
  const chunks: Buffer[] = [];
  ex.req.on('data', (chunk: Buffer) => chunks.push(chunk));
  ex.req.on('end', () => {
    ex.raw = Buffer.concat(chunks);
    ex.body = ex.raw.toString('utf8');
    done();
  });
}

function mcpOf(mcp: McpMock | null): McpMock {
  if (mcp === null) throw new TypeError('this mock provider does not serve MCP (start it with protocol mcp)');
  return mcp;
}

function a2aOf(a2a: A2aMock | null): A2aMock {
  if (a2a === null) throw new TypeError('this mock provider does not serve A2A (start it with protocol a2a)');
  return a2a;
}

/** Starts a mock LLM provider (OpenAI chat, embeddings, completions and responses; Anthropic messages; Gemini generateContent) on a real HTTP port. */
export function startMockProvider(opts: MockProviderOptions): Promise<MockProvider> {
  checkOptions(opts);
  const host = opts.host ?? '127.0.0.1';
  const mcp =
    opts.protocol === 'mcp'
      ? new McpMock({
          name: opts.name,
          tools: opts.mcpTools ?? DEFAULT_MCP_TOOLS,
          prefix: opts.mcpToolPrefix ?? '',
          pageSize: opts.mcpPageSize ?? 0,
          response: opts.mcpResponse ?? 'sse',
          apiKey: opts.apiKey ?? null,
        })
      : null;
  const a2a = a2aMockFor(opts);
  const ctx = createContext({
    name: opts.name,
    latencyMs: opts.latencyMs ?? 0,
    streamChunkDelayMs: opts.streamChunkDelayMs ?? 0,
    streamChunks: opts.streamChunks ?? 5,
    apiKey: opts.apiKey ?? null,
    protocol: opts.protocol ?? null,
    mcp,
    a2a,
    tokenTtlS: opts.tokenTtlS ?? 3600,
    gcpPublicKeyPem: opts.gcpPublicKeyPem ?? null,
    awsCredentials:
      opts.protocol === 'bedrock'
        ? { accessKeyId: opts.awsAccessKeyId as string, secretAccessKey: opts.awsSecretAccessKey as string }
        : null,
  });
  const serve = routeFor(opts.protocol);
  const http1 = createServer((req, res) => onRequest(ctx, serve, req, res));
  http1.keepAliveTimeout = keepAliveTimeoutMs;
  http1.headersTimeout = headersTimeoutMs;
  // The AWS SDK speaks HTTP/2 to an http:// Bedrock endpoint, so that protocol alone also
  // takes h2c on the same port; every other keeps the plain HTTP/1 server, untouched.
  const server: Server = opts.protocol === 'bedrock' ? listenH1AndH2c(http1, (req, res) => onRequest(ctx, serve, req, res)) : http1;

  // close() must leave no connection open: a hanging request or an idle keep-alive socket
  // would otherwise keep the caller's process (a test runner, the demo) alive.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    ctx.stats.connect();
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    // MCP sessions first: closing their transports ends the SSE streams and their keep-alive timers.
    // The A2A worker's steps stop too, so no timer outlives the mock.
    a2a?.close();
    closing ??= (mcp?.close() ?? Promise.resolve()).then(
      () =>
        new Promise((resolve) => {
          server.close(() => resolve());
          for (const socket of sockets) socket.destroy();
        }),
    );
    return closing;
  };

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, async () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      const origin = baseUrlFor(host, port).slice(0, -'/v1'.length);
      try {
        await a2a?.start(origin);
      } catch (err) {
        await close();
        return reject(err);
      }
      resolve({
        name: opts.name,
        port,
        baseUrl: a2a === null ? baseUrlFor(host, port) : origin,
        origin: baseUrlFor(host, port).slice(0, -'/v1'.length),
        stats: () => ctx.stats.snapshot(),
        tokenStats: () => ctx.gcpTokens.stats(),
        reset: () => resetProvider(ctx),
        addFault: (fault) => {
          const parsed = parseFault(fault);
          if (typeof parsed === 'string') throw new TypeError(parsed);
          ctx.faults.add(parsed);
        },
        clearFaults: () => ctx.faults.clear(),
        mcpStats: () => mcpOf(mcp).stats(),
        mcpTools: (change) => void mcpOf(mcp).changeTools(change),
        mcpRestart: () => mcpOf(mcp).restart(),
        mcpDropStreams: () => mcpOf(mcp).dropStreams(),
        a2aStats: () => a2aOf(a2a).stats(),
        close,
      });
    });
  });
}
