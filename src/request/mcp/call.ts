import type { ErrorCode } from '../../errors.js';
import * as governance from '../../governance/index.js';
import type { Generation, ToolCandidate } from '../../live/index.js';
import type { CallOutcome, JsonRpcError, JsonRpcId, JsonRpcNotification, StopSignal } from '../../mcp/index.js';
import { select } from '../../routing/index.js';
import type { Span } from '../../telemetry/index.js';
import type { Exchange, ToolCallRecord } from '../exchange.js';
import { policyOf } from '../policy.js';
import type { Services } from '../services.js';
import { errorText, gatewayError, resultText } from './messages.js';
import type { ClientSession } from './sessions.js';
import { type ExposedTool, retrySafe, type ToolView } from './tools.js';

// One tools/call, routed by the tool's name: the view (generation and catalogs) captured
// once, the caller admitted against its allow-lists and tool-call limits, a candidate chain
// chosen by the route's policy, admission and the session's binding, the name rewritten to
// the server's, and the answer relayed: as one JSON body, or, when the caller asked for
// progress, as an SSE stream of the server's notifications and then the answer.
//
// Failover is careful, because a tool may write: the call moves on only when it provably
// never reached its candidate (refused connection, breaker open, no session), or when it is
// safe to repeat (retry_safe, or trusted read-only / idempotent annotations) and failed by
// a timeout, a dropped connection or a 5xx. Anything else is the client's answer.

/** Where a tools/call answers: the client's POST, as JSON or as an SSE stream. */
export interface CallReply {
  /** A notification the server sent while the call ran (progress, log): streamed when the reply is SSE. */
  notify(json: string): void;
  /** The JSON-RPC answer's bytes. */
  answer(json: string): void;
  /** True once the client is gone. */
  readonly gone: boolean;
}

let nextProgressToken = 0;

export async function callTool(
  svc: Services,
  x: Exchange,
  gen: Generation,
  principal: governance.Principal,
  session: ClientSession,
  id: JsonRpcId,
  params: Record<string, unknown>,
  reply: CallReply,
  signal: StopSignal,
): Promise<void> {
  const name = params.name;
  if (typeof name !== 'string' || name === '') {
    reply.answer(errorText(id, gatewayError('invalid_request', 'Invalid params: tools/call needs params.name, the tool to call')));
    return;
  }
  const record: ToolCallRecord = {
    tool: name,
    routed: false,
    candidate: null,
    outcome: 'refused',
    reason: null,
    fallback: [],
    failedCandidates: [],
  };
  x.toolCall = record;
  if (
    params.arguments !== undefined &&
    (params.arguments === null || typeof params.arguments !== 'object' || Array.isArray(params.arguments))
  ) {
    refuse(record, reply, id, 'invalid_request', 'Invalid params: arguments must be an object');
    return;
  }
  const view: ToolView = svc.mcp.view(gen);
  const tool = view.tools.get(name);
  // The keyring captured with `gen` at admission (admitCaller), never the holder's now.
  const policy = policyOf(x.keyring ?? svc.keyring.current());
  if (tool === undefined || !governance.mayUseTool(policy, principal, name)) {
    // A tool the caller may not use is as unknown to it as one that does not exist: it is never listed either.
    const allowed = governance.checkTool(policy, principal, name);
    if (allowed !== null && tool !== undefined) {
      record.routed = true;
      refuse(record, reply, id, 'tool_not_allowed', allowed.message);
    } else refuse(record, reply, id, 'tool_not_found', `Unknown tool: ${name} (no MCP server of this gateway serves it now)`);
    return;
  }
  record.routed = true;
  const admitted = governance.admitToolCall(svc.governance, policy, principal, name, governance.governanceNow());
  const admission = admitted instanceof Promise ? await admitted : admitted;
  if (!admission.ok) {
    const r = admission.refusal;
    refuse(record, reply, id, r.code, r.message, r.retryAfterS === null ? {} : { retry_after_s: r.retryAfterS });
    return;
  }
  const chain = select(tool.route, { counters: svc.counters, random: svc.random, boundStableId: session.bindings.get(name) }).chain;
  if (chain.length === 0) {
    await finish(svc, admission.reservation, false);
    refuse(record, reply, id, 'no_route', `tool ${name}: no candidate takes new sessions now`);
    return;
  }
  const span = svc.tracing !== null && x.span !== null ? svc.tracing.startTool(x.span, name, { 'mcp.session.id': session.id }) : null;
  let reached = false;
  try {
    reached = await runChain(svc, record, tool, chain, session, id, params, reply, signal, span);
  } finally {
    await finish(svc, admission.reservation, reached);
    if (span !== null && svc.tracing !== null) {
      if (record.candidate !== null) span.setAttribute('switchyard.provider', record.candidate.server.name);
      span.setAttribute('switchyard.tool.outcome', record.outcome);
      if (record.outcome === 'failed' || record.outcome === 'error')
        svc.tracing.fail(span, record.reason ?? record.outcome, record.reason ?? record.outcome, false);
      span.end();
    }
  }
}

/** Settles the call's reservation: counted when it reached a server, given back when it reached none. */
async function finish(svc: Services, reservation: governance.Reservation | null, reached: boolean): Promise<void> {
  try {
    await governance.finishToolCall(svc.governance, reservation, reached, governance.governanceNow());
  } catch {
    // The store's policy has counted it; the client's answer does not wait on the books.
  }
}

function refuse(
  record: ToolCallRecord,
  reply: CallReply,
  id: JsonRpcId,
  code: ErrorCode,
  message: string,
  data: Record<string, unknown> = {},
): void {
  record.outcome = 'refused';
  record.reason = code;
  reply.answer(errorText(id, gatewayError(code, message, { tool: record.tool, ...data })));
}

/** Tries the chain; true when some candidate received the call. */
async function runChain(
  svc: Services,
  record: ToolCallRecord,
  tool: ExposedTool,
  chain: readonly ToolCandidate[],
  session: ClientSession,
  id: JsonRpcId,
  params: Record<string, unknown>,
  reply: CallReply,
  signal: StopSignal,
  span: Span | null,
): Promise<boolean> {
  const { breakers } = svc;
  const progress = progressTokenOf(params);
  // The server sees a token of the gateway's own (clients' tokens could collide on one
  // upstream session) and the client gets its own back on every notification.
  const upstreamToken = progress === undefined ? undefined : `switchyard-${++nextProgressToken}`;
  const onNotification = (n: JsonRpcNotification): void => {
    if (upstreamToken !== undefined && n.params?.progressToken === upstreamToken)
      reply.notify(JSON.stringify({ ...n, params: { ...n.params, progressToken: progress } }));
    else if (n.method !== 'notifications/progress') reply.notify(JSON.stringify(n));
  };
  let reached = false;
  for (const c of chain) {
    if (signal.aborted || reply.gone) break;
    record.candidate = c;
    const upstream = svc.mcp.upstreamFor(c);
    if (c.credentialProblem !== null || upstream === undefined) {
      given(svc, record, c, 'credential_unavailable');
      continue;
    }
    const admitted = breakers.admit(c.identity);
    if (admitted === 'deny') {
      given(svc, record, c, 'breaker_open');
      continue;
    }
    const outcome: CallOutcome = await upstream.call({
      method: 'tools/call',
      params: upstreamParams(params, c.upstreamTool, upstreamToken),
      signal,
      onNotification,
    });
    if (outcome.kind === 'failed' && outcome.reason === 'aborted') {
      breakers.release(c.identity);
      record.outcome = 'failed';
      record.reason = 'client_closed';
      return true;
    }
    if (outcome.kind === 'result' || outcome.kind === 'error') {
      reached = true;
      breakers.recordSuccess(c.identity);
      session.bindings.set(tool.name, c.stableId);
      if (outcome.kind === 'result') {
        record.outcome = outcome.result.isError === true ? 'tool_error' : 'result';
        if (span !== null) span.setAttribute('switchyard.tool.is_error', outcome.result.isError === true);
        reply.answer(resultText(id, JSON.stringify(outcome.result)));
      } else {
        record.outcome = 'error';
        record.reason = String(outcome.error.code);
        reply.answer(errorText(id, upstreamError(outcome.error)));
      }
      return true;
    }
    reached ||= outcome.reached;
    const reason = failureReason(outcome);
    // A status that says the server refused the gateway itself (4xx) is as much a failure of
    // this candidate as a 5xx; a timeout or a drop counts too. Nothing else happened.
    breakers.recordFailure(c.identity, admitted === 'probe', undefined, reason);
    given(svc, record, c, reason);
    const movable =
      !outcome.reached ||
      (retrySafe(tool, c) && (outcome.reason === 'timeout' || outcome.reason === 'dropped' || (outcome.status ?? 0) >= 500));
    if (!movable) {
      record.outcome = 'failed';
      const code = errorCodeOf(outcome);
      record.reason = code;
      reply.answer(
        errorText(
          id,
          gatewayError(
            code,
            `tool ${tool.name}: ${c.server.name} ${outcome.detail}; not sent to another server, since the call may have run (the route is not retry_safe)`,
            { tool: tool.name, provider: c.server.name },
          ),
        ),
      );
      return reached;
    }
  }
  record.outcome = 'failed';
  record.reason = 'upstream_unavailable';
  // A stopped call (the client's cancel, the call's deadline) is answered by whoever stopped it.
  if (!reply.gone && !signal.aborted)
    reply.answer(
      errorText(
        id,
        gatewayError('upstream_unavailable', `tool ${tool.name}: no MCP server could take the call (${record.fallback.join(', ')})`, {
          tool: tool.name,
          failures: record.fallback,
        }),
      ),
    );
  return reached;
}

function given(svc: Services, record: ToolCallRecord, c: ToolCandidate, reason: string): void {
  record.fallback.push(`${c.server.name}:${reason}`);
  record.failedCandidates.push(c.stableId);
  svc.metrics.fallbacks.inc({ provider: c.server.name, reason });
}

function progressTokenOf(params: Record<string, unknown>): string | number | undefined {
  const meta = params._meta;
  if (meta === null || typeof meta !== 'object') return undefined;
  const token = (meta as Record<string, unknown>).progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

/** The client's params with the server's tool name and the gateway's progress token. */
function upstreamParams(params: Record<string, unknown>, upstreamTool: string, token: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { ...params, name: upstreamTool };
  if (token !== undefined) out._meta = { ...(params._meta as Record<string, unknown>), progressToken: token };
  return out;
}

/** An upstream server's JSON-RPC error, passed on as it came (its code and message are the tool's answer). */
function upstreamError(error: JsonRpcError): JsonRpcError {
  return error.data === undefined ? { code: error.code, message: error.message } : error;
}

function failureReason(outcome: Extract<CallOutcome, { kind: 'failed' }>): string {
  switch (outcome.reason) {
    case 'refused':
    case 'session':
      return 'connect_error';
    case 'status':
      return (outcome.status ?? 0) === 401 || outcome.status === 403
        ? 'status_auth'
        : (outcome.status ?? 0) >= 500
          ? 'status_5xx'
          : 'status_4xx';
    default:
      return outcome.reason;
  }
}

function errorCodeOf(outcome: Extract<CallOutcome, { kind: 'failed' }>): ErrorCode {
  switch (outcome.reason) {
    case 'timeout':
      return 'upstream_timeout';
    case 'dropped':
      return 'stream_interrupted';
    case 'status':
      return outcome.status === 401 || outcome.status === 403 ? 'upstream_auth_failed' : 'upstream_error';
    case 'refused':
    case 'session':
      return 'upstream_unavailable';
    default:
      return 'upstream_error';
  }
}
