import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { AgentCard } from '@a2a-js/sdk';
import { formatSSEErrorEvent, formatSSEEvent, generateAgentCardSignature, SSE_HEADERS } from '@a2a-js/sdk';
import { isLegacyJsonRpcMethod, isV1JsonRpcMethod } from '@a2a-js/sdk/compat/v0_3';
import { createLegacyAwarePushNotificationSender, LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import {
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  validateVersion,
} from '@a2a-js/sdk/server';
import { exportJWK, generateKeyPair } from 'jose';
import type { A2aAgentName } from './a2a-agents.js';
import { A2A_AGENT_NAMES, createExecutors } from './a2a-agents.js';
import type { A2aVersion } from './a2a-cards.js';
import { agentCard, cardFor } from './a2a-cards.js';
import type { A2aStats } from './a2a-stats.js';
import { A2aCounters } from './a2a-stats.js';
import type { Exchange } from './exchange.js';
import { replyJson, replyMethodNotAllowed, replyNotFound } from './exchange.js';

export interface A2aMockOptions {
  readonly name: string;
  /** The versions the cards advertise and the endpoints take. */
  readonly versions: readonly A2aVersion[];
  /** Cards carry a JWS signature by a key made at start (its public half at `/.well-known/jwks.json`). */
  readonly signed: boolean;
  /** The base URL the cards name; null = the listen URL. */
  readonly publicUrl: string | null;
  /** The worker's wait before each step. */
  readonly stepMs: number;
}

interface ServedAgent {
  readonly name: A2aAgentName;
  /** The 1.0 card, signed when asked. */
  readonly card: AgentCard;
  readonly v1: JsonRpcTransportHandler;
  readonly legacy: LegacyJsonRpcTransportHandler;
}

type RpcResponse = Record<string, unknown>;
type RpcOutcome = RpcResponse | AsyncGenerator<RpcResponse, void, undefined>;

const CARD_SUFFIX = '/.well-known/agent-card.json';
const JWKS_PATH = '/.well-known/jwks.json';
const SIGNING_KEY_ID = 'switchyard-mock-a2a';
// The SDK's card handler default.
const CARD_MAX_AGE_S = 3600;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function isStream(out: RpcOutcome): out is AsyncGenerator<RpcResponse, void, undefined> {
  return typeof (out as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}

function weakEtag(body: string): string {
  return `W/"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
}

/**
 * The mock's A2A agents, each a `DefaultRequestHandler` of the official SDK behind its two
 * JSON-RPC transport handlers (1.0 and the 0.3 compat layer), served over plain node:http the
 * way the SDK's Express handlers serve them.
 */
export class A2aMock {
  readonly #opts: A2aMockOptions;
  readonly #counters = new A2aCounters();
  readonly #shutdown = new AbortController();
  #agents: ReadonlyMap<string, ServedAgent> = new Map();
  #baseUrl = '';
  #jwks: string | null = null;
  #ready: Promise<void> | null = null;

  constructor(opts: A2aMockOptions) {
    this.#opts = opts;
  }

  /** Builds the agents once the listen URL is known (the cards name it); requests wait for this. */
  start(listenUrl: string): Promise<void> {
    this.#ready ??= this.#build(this.#opts.publicUrl ?? listenUrl);
    return this.#ready;
  }

  async #build(baseUrl: string): Promise<void> {
    this.#baseUrl = baseUrl;
    const sign = this.#opts.signed ? await this.#signer() : null;
    const executors = createExecutors(this.#shutdown.signal, this.#opts.stepMs);
    const agents = new Map<string, ServedAgent>();
    for (const name of A2A_AGENT_NAMES) {
      const unsigned = agentCard(name, `${baseUrl}/${name}`, this.#opts.versions);
      // Signed once here rather than per request: the card never changes while the mock runs.
      const card = sign === null ? unsigned : await sign(unsigned);
      const pushes = new InMemoryPushNotificationStore();
      const handler = new DefaultRequestHandler(
        card,
        new InMemoryTaskStore(),
        executors[name],
        undefined,
        pushes,
        // 0.3 webhooks get 0.3 bodies, 1.0 ones 1.0 envelopes, as from an SDK agent with the compat layer.
        createLegacyAwarePushNotificationSender(pushes),
      );
      agents.set(name, { name, card, v1: new JsonRpcTransportHandler(handler), legacy: new LegacyJsonRpcTransportHandler(handler) });
    }
    this.#agents = agents;
  }

  async #signer(): Promise<(card: AgentCard) => Promise<AgentCard>> {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(publicKey);
    this.#jwks = JSON.stringify({ keys: [{ ...jwk, kid: SIGNING_KEY_ID, alg: 'ES256', use: 'sig' }] });
    return generateAgentCardSignature(privateKey, { alg: 'ES256', kid: SIGNING_KEY_ID, typ: 'JOSE' });
  }

  stats(): A2aStats {
    return this.#counters.snapshot();
  }

  reset(): void {
    this.#counters.reset();
  }

  /** Stops every running worker; their streams end with the connections the provider destroys. */
  close(): void {
    this.#shutdown.abort();
  }

  handle(ex: Exchange): void {
    const ready = this.#ready ?? Promise.resolve();
    void ready.then(() => this.#route(ex));
  }

  #route(ex: Exchange): void {
    const method = ex.req.method ?? 'GET';
    if (ex.path === '/') return method === 'GET' ? this.#listAgents(ex) : replyMethodNotAllowed(ex, 'GET');
    if (ex.path === JWKS_PATH && this.#jwks !== null)
      return method === 'GET' ? replyJson(ex, 200, this.#jwks) : replyMethodNotAllowed(ex, 'GET');
    const card = ex.path.endsWith(CARD_SUFFIX);
    const agent = this.#agents.get(card ? ex.path.slice(1, -CARD_SUFFIX.length) : ex.path.slice(1));
    if (agent === undefined) return replyNotFound(ex);
    if (card) return method === 'GET' ? this.#serveCard(agent, ex) : replyMethodNotAllowed(ex, 'GET');
    if (method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
    void this.#serveRpc(agent, ex);
  }

  #listAgents(ex: Exchange): void {
    const agents = [...this.#agents.keys()].map((name) => ({ name, card_url: `${this.#baseUrl}/${name}${CARD_SUFFIX}` }));
    replyJson(ex, 200, JSON.stringify({ agents }));
  }

  #serveCard(agent: ServedAgent, ex: Exchange): void {
    const requested = header(ex.req.headers, 'a2a-version');
    this.#counters.card(agent.name, requested, header(ex.req.headers, 'authorization'));
    const body = JSON.stringify(cardFor(agent.card, this.#opts.versions, requested));
    const etag = weakEtag(body);
    const headers: Record<string, string> = {
      etag,
      'cache-control': `public, max-age=${CARD_MAX_AGE_S}`,
      // The shape depends on A2A-Version when both versions are served, so shared caches must key on it.
      ...(this.#opts.versions.length > 1 ? { vary: 'A2A-Version' } : {}),
    };
    if (header(ex.req.headers, 'if-none-match') === etag) {
      ex.res.writeHead(304, { ...headers, 'x-mock-provider': ex.name });
      ex.res.end();
      return;
    }
    replyJson(ex, 200, body, headers);
  }

  /** Which transport handler takes a body: by method name when both versions are served, else the one version's. */
  #usesLegacy(method: unknown): boolean {
    const { versions } = this.#opts;
    if (!versions.includes('1.0')) return true;
    if (!versions.includes('0.3')) return false;
    // The SDK's rule: 1.0 names to the 1.0 handler, everything else (0.3 names, unknown, none) to 0.3.
    return !isV1JsonRpcMethod(method);
  }

  async #serveRpc(agent: ServedAgent, ex: Exchange): Promise<void> {
    const { headers } = ex.req;
    const contentType = header(headers, 'content-type');
    if (contentType !== undefined && contentType.split(';', 1)[0]?.trim().toLowerCase() !== 'application/json') {
      const error = JsonRpcTransportHandler.mapToJSONRPCError(
        new ContentTypeNotSupportedError(`Unsupported Content-Type "${contentType}"; expected application/json.`),
      );
      this.#counters.rpc(agent.name, undefined, headers);
      return replyJson(ex, 400, JSON.stringify({ jsonrpc: '2.0', id: null, error }));
    }
    let body: unknown;
    try {
      body = JSON.parse(ex.body);
    } catch {
      this.#counters.rpc(agent.name, undefined, headers);
      return replyJson(ex, 400, JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } }));
    }
    const request = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
    const method = request?.method;
    this.#counters.rpc(agent.name, method, headers);
    const legacy = this.#usesLegacy(method);
    const mapError = legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
    const id = request?.id ?? null;
    const requestedVersion = header(headers, 'a2a-version') || undefined;
    const context = defaultServerCallContextBuilder({ extensions: undefined, user: new UnauthenticatedUser(), headers, requestedVersion });
    try {
      // The SDK checks A2A-Version against the card before dispatch; a 0.3 agent predates the
      // header, and a method the handler does not know is left to it (-32601, method not found).
      const known = legacy ? isLegacyJsonRpcMethod(method) : isV1JsonRpcMethod(method);
      if (this.#opts.versions.includes('1.0') && known) validateVersion(context.requestedVersion, agent.card, 'JSONRPC');
      const handler = legacy ? agent.legacy : agent.v1;
      const out = (await handler.handle(request ?? (body as Record<string, unknown>), context)) as RpcOutcome;
      if (!isStream(out)) return replyJson(ex, 200, JSON.stringify(out));
      await this.#stream(ex, out, { alwaysSse: legacy && method === 'tasks/resubscribe', id, mapError });
    } catch (error) {
      if (!ex.res.headersSent) replyJson(ex, 500, JSON.stringify({ jsonrpc: '2.0', id, error: mapError(error) }));
      else if (!ex.res.writableEnded) ex.res.end();
    }
  }

  /**
   * Writes a streaming answer as the SDK's Express handler does: the first event is awaited
   * before the SSE head, so an early failure is a plain JSON-RPC error (0.3's
   * tasks/resubscribe excepted, always SSE); a later one is a last `event: error`.
   */
  async #stream(
    ex: Exchange,
    stream: AsyncGenerator<RpcResponse, void, undefined>,
    how: { alwaysSse: boolean; id: unknown; mapError: (e: unknown) => unknown },
  ): Promise<void> {
    const { res } = ex;
    const errorEnvelope = (e: unknown) => ({ jsonrpc: '2.0', id: how.id, error: how.mapError(e) });
    let first: IteratorResult<RpcResponse> | null = null;
    if (!how.alwaysSse) {
      try {
        first = await stream.next();
      } catch (e) {
        return replyJson(ex, 200, JSON.stringify(errorEnvelope(e)));
      }
    }
    res.writeHead(200, { ...SSE_HEADERS, 'x-mock-provider': ex.name });
    res.flushHeaders();
    try {
      let next = first ?? (await stream.next());
      while (next.done !== true) {
        // A client gone: return() detaches the SDK's queue from the task's event bus.
        if (ex.closed) return void (await stream.return());
        res.write(formatSSEEvent(next.value));
        next = await stream.next();
      }
    } catch (e) {
      if (!ex.closed) res.write(formatSSEErrorEvent(errorEnvelope(e)));
    } finally {
      if (!res.writableEnded) res.end();
    }
  }
}
