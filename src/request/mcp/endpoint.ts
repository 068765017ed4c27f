import type { ServerResponse } from 'node:http';
import { SwitchyardError } from '../../errors.js';
import type { Generation } from '../../live/index.js';
import { type JsonRpcId, LATEST_MCP_PROTOCOL_VERSION, MCP_PROTOCOL_VERSIONS, type McpProtocolVersion, Stop } from '../../mcp/index.js';
import { transformBody, transformEvents } from '../../providers/index.js';
import { admitSideCaller } from '../admission.js';
import { readBodyThen } from '../body.js';
import { mcpResource, resourceMetadataUrl } from '../caller-token.js';
import type { Caller, Exchange } from '../exchange.js';
import { type ToolPath, toolPath } from '../handlers.js';
import { policyOf } from '../policy.js';
import { failRequest } from '../respond.js';
import type { ServeCallback } from '../serve-chain.js';
import type { Services } from '../services.js';
import { callTool } from './call.js';
import {
  type ClientMessage,
  errorText,
  gatewayError,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  readClientMessage,
  resultText,
  sendJsonRpc,
  sseMessage,
} from './messages.js';
import { type ClientSession, KeySessionsFull } from './sessions.js';
import type { CallReply } from './tool-call.js';
import { listingFor } from './tools.js';

// The /mcp endpoint: the MCP Streamable HTTP transport, with the gateway as the server its
// clients see. POST carries one JSON-RPC message (answered with JSON, or an SSE stream when
// a tools/call asks for progress), GET opens the session's standalone SSE stream (where
// list changes arrive), DELETE ends the session. Every request is checked in this order:
// its Origin (DNS rebinding), its caller (before the body is read), its protocol version
// header, then its session, which must belong to the caller's key.

export type McpHandler = (x: Exchange, rest: string, done: ServeCallback) => void;

export interface McpHandlers {
  readonly post: McpHandler;
  readonly get: McpHandler;
  readonly delete: McpHandler;
}

const SUPPORTED: ReadonlySet<string> = new Set(MCP_PROTOCOL_VERSIONS);
const CLIENT_LEFT = new Error('the client closed the connection');
const STOPPED = new Error('the gateway stopped the call');
const DEADLINE = new Error('the call ran past mcp.call_timeout_ms');
/** How often an idle GET stream gets a comment, so that proxies and load balancers keep it open. */
const KEEP_ALIVE_MS = 25_000;

/** `tools`: what every tools/call shares, composed once at start (a test hands in its own transform stack). */
export function mcpHandlers(
  svc: Services,
  settings: { readonly maxBodyBytes: number },
  version: string,
  tools: ToolPath = toolPath(svc),
): McpHandlers {
  const serverInfo = JSON.stringify({ name: 'switchyard', title: 'Switchyard MCP gateway', version });
  return {
    post: (x, _rest, done) => {
      const caller = checked(svc, x);
      if (caller === null) return done(null);
      if (!isJson(x.req.headers['content-type'])) {
        refuse(svc, x, new SwitchyardError('invalid_request', 'Content-Type must be application/json'), null, 415);
        return done(null);
      }
      if (!accepts(x.req.headers.accept, 'application/json') || !accepts(x.req.headers.accept, 'text/event-stream')) {
        refuse(svc, x, new SwitchyardError('invalid_request', 'Accept must list both application/json and text/event-stream'), null, 406);
        return done(null);
      }
      readBodyThen(
        x.req,
        settings.maxBodyBytes,
        (body) => {
          x.bodyRead(body.length);
          onMessage(svc, x, caller, body, serverInfo, tools).then(
            () => done(null),
            (err: unknown) => done(err),
          );
        },
        (err) => {
          if (err instanceof SwitchyardError) {
            refuse(svc, x, err);
            return done(null);
          }
          done(err);
        },
      );
    },
    get: (x, _rest, done) => {
      const caller = checked(svc, x);
      if (caller === null) return done(null);
      if (!accepts(x.req.headers.accept, 'text/event-stream')) {
        refuse(svc, x, new SwitchyardError('invalid_request', 'Accept must list text/event-stream'), null, 406);
        return done(null);
      }
      withSession(svc, x, caller, null, (session) => {
        if (svc.mcp.draining) {
          refuse(svc, x, new SwitchyardError('shutting_down', 'the gateway is shutting down; reconnect', null, { 'retry-after': '1' }));
          return;
        }
        openStream(svc, x, caller.gen, session);
      }).then(() => done(null), done);
    },
    delete: (x, _rest, done) => {
      const caller = checked(svc, x);
      if (caller === null) return done(null);
      withSession(svc, x, caller, null, (session) => {
        svc.mcp.endSession(session);
        x.res.writeHead(200, { 'content-length': 0 });
        x.res.end();
      }).then(() => done(null), done);
    },
  };
}

/** The Origin, the caller and the protocol version header, checked in that order; null when the request was refused (and answered). */
function checked(svc: Services, x: Exchange): Caller | null {
  const origin = x.req.headers.origin;
  if (origin !== undefined && !originAllowed(svc.holder.current(), origin)) {
    refuse(svc, x, new SwitchyardError('origin_not_allowed', `Origin ${JSON.stringify(origin)} is not allowed (mcp.allowed_origins)`));
    return null;
  }
  let caller: Caller;
  // With issuers configured, /mcp is an OAuth protected resource: a token may name it as its audience.
  const resource = mcpResource(svc, x.req);
  try {
    caller = admitSideCaller(x, svc, resource);
  } catch (err) {
    if (!(err instanceof SwitchyardError)) throw err;
    const challenge = err.headers?.['www-authenticate'];
    let headers = err.headers;
    if (challenge === undefined && (err.code === 'unauthorized' || err.code === 'key_expired'))
      headers = {
        ...err.headers,
        'www-authenticate': resource === null ? 'Bearer' : `Bearer resource_metadata="${resourceMetadataUrl(resource)}"`,
      };
    refuse(svc, x, new SwitchyardError(err.code, err.message, null, headers));
    return null;
  }
  const version = x.req.headers['mcp-protocol-version'];
  if (version !== undefined && !SUPPORTED.has(String(version))) {
    refuse(
      svc,
      x,
      new SwitchyardError(
        'mcp_protocol_version_unsupported',
        `Bad Request: MCP-Protocol-Version ${JSON.stringify(version)} is not supported (supported: ${MCP_PROTOCOL_VERSIONS.join(', ')})`,
      ),
    );
    return null;
  }
  return caller;
}

/**
 * A browser's Origin: allowed when it is listed (or `*` is), or a loopback origin (a local
 * client's own page); refused otherwise, so that a page elsewhere cannot drive a local
 * gateway through a rebound DNS name.
 */
function originAllowed(gen: Generation, origin: string): boolean {
  const allowed = gen.config.mcp.allowed_origins;
  if (allowed.includes('*') || allowed.includes(origin)) return true;
  if (!URL.canParse(origin)) return false;
  const host = new URL(origin).hostname;
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
}

/**
 * Runs `then` with the request's session: 400 without an Mcp-Session-Id, 404 for one that is
 * unknown, expired or another key's. Found at once when this replica holds it; asked of the
 * shared records (a redis governance store) when another replica opened it.
 */
async function withSession(
  svc: Services,
  x: Exchange,
  caller: Caller,
  id: JsonRpcId | null,
  then: (session: ClientSession) => void | Promise<void>,
): Promise<void> {
  const header = x.req.headers['mcp-session-id'];
  if (typeof header !== 'string' || header === '') {
    refuse(svc, x, new SwitchyardError('invalid_request', 'Bad Request: Mcp-Session-Id header is required (send initialize first)'), id);
    return;
  }
  const found = svc.mcp.findSession(header, caller.principal);
  const session = found instanceof Promise ? await found : found;
  if (session === undefined) {
    refuse(svc, x, new SwitchyardError('mcp_session_not_found', 'Session not found: initialize a new session'), id);
    return;
  }
  // A session with a request in flight is busy: its key's cap never evicts it.
  session.requests += 1;
  try {
    await then(session);
  } finally {
    session.requests -= 1;
  }
}

async function onMessage(svc: Services, x: Exchange, caller: Caller, body: Buffer, serverInfo: string, tools: ToolPath): Promise<void> {
  const read = readClientMessage(body);
  if (!read.ok) {
    x.failed('invalid_request');
    sendJsonRpc(x.res, errorText(read.id, read.error), null, 400);
    return;
  }
  const message = read.message;
  if (message.kind === 'request' && message.method === 'initialize') {
    if (x.req.headers['mcp-session-id'] !== undefined) {
      x.failed('invalid_request');
      const error = { code: INVALID_REQUEST, message: 'Invalid Request: initialize opens a session; send it without Mcp-Session-Id' };
      sendJsonRpc(x.res, errorText(message.id, error), null, 400);
      return;
    }
    initialize(svc, x, caller, message.id, message.params, serverInfo);
    return;
  }
  await withSession(svc, x, caller, message.kind === 'request' ? message.id : null, (session) =>
    dispatch(svc, x, caller, session, message, tools),
  );
}

async function dispatch(
  svc: Services,
  x: Exchange,
  caller: Caller,
  session: ClientSession,
  message: ClientMessage,
  tools: ToolPath,
): Promise<void> {
  if (message.kind !== 'request') {
    // A client that gives up on a call says so: the call in flight is aborted upstream too.
    if (message.kind === 'notification' && message.method === 'notifications/cancelled') {
      const requestId = message.params.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') session.inflight.get(requestId)?.abort(CLIENT_LEFT);
    }
    // notifications/initialized, notifications/cancelled, a response to nothing we asked: accepted.
    x.res.writeHead(202, { 'content-length': 0, 'mcp-session-id': session.id });
    x.res.end();
    return;
  }
  const { id, method, params } = message;
  switch (method) {
    case 'ping':
      sendJsonRpc(x.res, resultText(id, '{}'), session.id);
      return;
    case 'tools/list': {
      if (params.cursor !== undefined) {
        sendJsonRpc(
          x.res,
          errorText(id, { code: INVALID_PARAMS, message: 'Invalid params: unknown cursor (the list has one page)' }),
          session.id,
        );
        return;
      }
      const listing = listingFor(svc.mcp.view(caller.gen), policyOf(caller.keyring), caller.principal);
      session.toldDigest = listing.digest;
      sendJsonRpc(x.res, resultText(id, listing.json), session.id);
      return;
    }
    case 'tools/call':
      await call(svc, x, caller, session, id, params, tools);
      return;
    default:
      // resources/*, prompts/*, completion/complete, logging/setLevel: the gateway routes tools only.
      sendJsonRpc(x.res, errorText(id, { code: METHOD_NOT_FOUND, message: `Method not found: ${method}` }), session.id);
  }
}

function initialize(svc: Services, x: Exchange, caller: Caller, id: JsonRpcId, params: Record<string, unknown>, serverInfo: string): void {
  const asked = params.protocolVersion;
  const version: McpProtocolVersion =
    typeof asked === 'string' && SUPPORTED.has(asked) ? (asked as McpProtocolVersion) : LATEST_MCP_PROTOCOL_VERSION;
  const info = params.clientInfo as { name?: unknown } | undefined;
  let session: ClientSession;
  try {
    session = svc.mcp.openSession(caller.principal, version, typeof info?.name === 'string' ? info.name.slice(0, 128) : null);
  } catch (err) {
    if (!(err instanceof KeySessionsFull)) throw err;
    refuse(svc, x, new SwitchyardError('rate_limit_exceeded', err.message, null, { 'retry-after': '1' }), id);
    return;
  }
  session.toldDigest = listingFor(svc.mcp.view(caller.gen), policyOf(caller.keyring), caller.principal).digest;
  const result = `{"protocolVersion":${JSON.stringify(version)},"capabilities":{"tools":{"listChanged":true}},"serverInfo":${serverInfo}}`;
  sendJsonRpc(x.res, resultText(id, result), session.id);
}

/** A tools/call, answered with JSON; or, when the client asked for progress, with an SSE stream that starts at once. */
async function call(
  svc: Services,
  x: Exchange,
  caller: Caller,
  session: ClientSession,
  id: JsonRpcId,
  params: Record<string, unknown>,
  tools: ToolPath,
): Promise<void> {
  const res = x.res;
  const meta = params._meta as Record<string, unknown> | undefined;
  const streamed = meta !== null && typeof meta === 'object' && meta.progressToken !== undefined;
  const controller = new Stop();
  let gone = false;
  // The listener calls clientClosed when every response closes: only one that closed before
  // its answer is a client leaving.
  x.running.clientClosed = () => {
    if (res.writableEnded) return;
    gone = true;
    controller.abort(CLIENT_LEFT);
  };
  x.running.stopAttempt = () => controller.abort(STOPPED);
  x.callStarted(streamed);
  const stack = tools.transforms;
  const reply: CallReply = {
    get gone() {
      return gone || res.destroyed;
    },
    notify(json) {
      if (!streamed || this.gone) return;
      if (!res.headersSent) startSse(res, session.id);
      x.eventSent();
      // The server's notifications are its words too: whole events through the stack, as its answer is.
      if (stack.length === 0) res.write(sseMessage(json));
      else {
        const events = transformEvents(stack, sseMessage(json));
        if (events instanceof Promise) {
          events.then((e) => {
            if (e.length > 0 && !res.writableEnded) res.write(e);
          }, noop);
        } else if (events.length > 0) res.write(events);
      }
    },
    answer(json) {
      if (this.gone) return;
      if (!streamed) return sendJsonRpc(res, json, session.id);
      if (!res.headersSent) startSse(res, session.id);
      x.eventSent();
      res.end(sseMessage(json));
    },
    relay(json) {
      // An empty stack (the gateway's today) sends the same string: no copy, no call.
      if (stack.length === 0) return this.answer(json);
      if (this.gone) return;
      if (!streamed) {
        const body = transformBody(stack, 200, json);
        if (body instanceof Promise) body.then((b) => sendJsonRpc(res, b, session.id), noop);
        else sendJsonRpc(res, body, session.id);
        return;
      }
      if (!res.headersSent) startSse(res, session.id);
      x.eventSent();
      // A stack transform sees whole events: the one that carries the answer.
      const events = transformEvents(stack, sseMessage(json));
      if (events instanceof Promise) events.then((e) => res.end(e), noop);
      else res.end(events);
    },
  };
  if (streamed) startSse(res, session.id);
  session.inflight.set(id, controller);
  // The whole call, failovers included, has one deadline: an upstream that keeps talking
  // (progress, log messages) but never answers would otherwise hold the call, its rpm
  // reservation and both connections for as long as the client waits. The abort cancels
  // the upstream call (notifications/cancelled) like a client's own cancel.
  const timeoutMs = caller.gen.config.mcp.call_timeout_ms;
  const deadline = setTimeout(() => controller.abort(DEADLINE), timeoutMs);
  deadline.unref();
  try {
    await new Promise<void>((resolve, reject) =>
      callTool(
        {
          svc,
          x,
          gen: caller.gen,
          keyring: caller.keyring,
          principal: caller.principal,
          session,
          id,
          params,
          reply,
          signal: controller.signal,
          attempt: tools.attempt,
        },
        (err) => (err === null ? resolve() : reject(err)),
      ),
    );
  } finally {
    clearTimeout(deadline);
    if (session.inflight.get(id) === controller) session.inflight.delete(id);
  }
  // The deadline may pass after the answer, while the books settle: only an unanswered call is timed out.
  if (controller.reason === DEADLINE && !res.writableEnded && !reply.gone) {
    if (x.toolCall !== null) {
      x.toolCall.outcome = 'failed';
      x.toolCall.reason = 'upstream_timeout';
    }
    const name = typeof params.name === 'string' ? params.name : null;
    reply.answer(
      errorText(
        id,
        gatewayError('upstream_timeout', `tool ${name}: no answer within mcp.call_timeout_ms (${timeoutMs} ms)`, { tool: name }),
      ),
    );
    return;
  }
  if (controller.signal.aborted && !res.writableEnded && !reply.gone) {
    // Cancelled by the client: the specification wants no answer, but the POST must end.
    reply.answer(errorText(id, gatewayError('invalid_request', 'the client cancelled the call')));
    return;
  }
  if (!res.writableEnded && !reply.gone) {
    reply.answer(errorText(id, gatewayError('internal_error', 'the call ended without an answer')));
  }
}

function startSse(res: ServerResponse, sessionId: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'mcp-session-id': sessionId });
  res.flushHeaders();
}

/**
 * The session's standalone stream: list changes reach it here. A second GET replaces the
 * first (a client that reconnects may not have seen its old stream end); a reconnect that
 * missed a change (Last-Event-ID, or a change while no stream was open) is told at once.
 */
function openStream(svc: Services, x: Exchange, gen: Generation, session: ClientSession): void {
  x.unrecorded();
  const res = x.res;
  const previous = session.stream;
  session.stream = res;
  if (previous !== null && !previous.writableEnded) previous.end();
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'mcp-session-id': session.id });
  session.eventSeq += 1;
  // The priming event: an id to resume from, and no data.
  res.write(`id: ${session.eventSeq}\ndata: \n\n`);
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS).unref();
  res.once('close', () => {
    clearInterval(keepAlive);
    if (session.stream === res) session.stream = null;
  });
  svc.mcp.tell(svc.mcp.view(gen), session);
}

/**
 * An HTTP-level refusal of /mcp (before or instead of a JSON-RPC answer: a bad header, an
 * unknown session, an unauthenticated caller), through the listeners' one error path, in
 * the JSON-RPC dialect; `status` when the transport's says more than the catalog's.
 */
function refuse(svc: Services, x: Exchange, err: SwitchyardError, id: JsonRpcId | null = null, status?: number): void {
  failRequest(x, err, svc, status === undefined ? { dialect: 'jsonrpc', id } : { dialect: 'jsonrpc', id, status });
}

function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType);
}

/** Whether an Accept header admits this media type (absent: anything). */
function accepts(accept: string | undefined, type: string): boolean {
  if (accept === undefined || accept === '') return true;
  const lower = accept.toLowerCase();
  return lower.includes(type) || lower.includes('*/*');
}

function noop(): void {}
