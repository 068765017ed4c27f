import type { ErrorCode } from '../../errors.js';
import * as governance from '../../governance/index.js';
import type { JsonRpcId } from '../../mcp/index.js';
import { select } from '../../routing/index.js';
import { runChain } from '../chain.js';
import type { ToolCallRecord } from '../exchange.js';
import { type ArgumentsVerdict, guardArguments } from '../guardrails/tool-guard.js';
import { policyOf } from '../policy.js';
import { errorText, gatewayError, resultText } from './messages.js';
import { type CallReply, finish, ToolCall, type ToolCallRequest } from './tool-call.js';

import type { ToolView } from './tools.js';

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

/**
 * Answers one tools/call, then calls `done` once (with null, or an error the endpoint
 * answers), never before it has returned. No promise is resolved on its way unless the
 * governance store or the upstream session needs one.
 */
export function callTool(t: ToolCallRequest, done: (err: unknown) => void): void {
  const { svc, x, gen, principal, params, reply, id } = t;
  const name = params.name;
  if (typeof name !== 'string' || name === '') {
    reply.answer(errorText(id, gatewayError('invalid_request', 'Invalid params: tools/call needs params.name, the tool to call')));
    return queueMicrotask(() => done(null));
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
  x.toolCalled(record);
  if (
    params.arguments !== undefined &&
    (params.arguments === null || typeof params.arguments !== 'object' || Array.isArray(params.arguments))
  ) {
    refuse(record, reply, id, 'invalid_request', 'Invalid params: arguments must be an object');
    return queueMicrotask(() => done(null));
  }
  const view: ToolView = svc.mcp.view(gen);
  const tool = view.tools.get(name);
  // The keyring captured with `gen` at admission (admitCaller), never the holder's now.
  const policy = policyOf(t.keyring);
  if (tool === undefined || !governance.mayUseTool(policy, principal, name)) {
    // A tool the caller may not use is as unknown to it as one that does not exist: it is never listed either.
    const allowed = governance.checkTool(policy, principal, name);
    if (allowed !== null && tool !== undefined) {
      record.routed = true;
      refuse(record, reply, id, 'tool_not_allowed', allowed.message);
    } else refuse(record, reply, id, 'tool_not_found', `Unknown tool: ${name} (no MCP server of this gateway serves it now)`);
    return queueMicrotask(() => done(null));
  }
  record.routed = true;
  // The arguments' guardrails, before the call is admitted: a blocked call costs no tool call of the caller's.
  const guarded = guardArguments(x, gen, principal, name, params.arguments as Record<string, unknown> | undefined);
  const checked = (verdict: ArgumentsVerdict): void => {
    if (verdict.kind === 'blocked') {
      record.outcome = 'refused';
      record.reason = 'content_filter';
      reply.answer(resultText(id, JSON.stringify({ content: [{ type: 'text', text: verdict.message }], isError: true })));
      return done(null);
    }
    if (verdict.kind === 'unavailable') {
      refuse(record, reply, id, 'guardrail_unavailable', verdict.message);
      return done(null);
    }
    const call: ToolCallRequest =
      verdict.guard === null && verdict.args === params.arguments
        ? t
        : { ...t, params: verdict.args === undefined ? params : { ...params, arguments: verdict.args }, guard: verdict.guard };
    admitAndCall(call, policy, tool, record, done);
  };
  if (guarded instanceof Promise) guarded.then(checked).catch(done);
  else queueMicrotask(() => checked(guarded));
}

/** Admits the call against the caller's tool-call limits, then runs its chain. */
function admitAndCall(
  t: ToolCallRequest,
  policy: ReturnType<typeof policyOf>,
  tool: NonNullable<ReturnType<ToolView['tools']['get']>>,
  record: ToolCallRecord,
  done: (err: unknown) => void,
): void {
  const { svc, principal, reply, id } = t;
  const name = tool.name;
  const admitted = governance.admitToolCall(svc.governance, policy, principal, name, governance.governanceNow());
  const admit = (admission: governance.ToolAdmission): void => {
    if (!admission.ok) {
      const r = admission.refusal;
      refuse(record, reply, id, r.code, r.message, r.retryAfterS === null ? {} : { retry_after_s: r.retryAfterS });
      return done(null);
    }
    const chain = select(tool.route, { counters: svc.counters, random: svc.random, boundStableId: t.session.bindings.get(name) }).chain;
    if (chain.length === 0) {
      finish(svc, admission.reservation, false, () => {
        refuse(record, reply, id, 'no_route', `tool ${name}: no candidate takes new sessions now`);
        done(null);
      });
      return;
    }
    runChain(new ToolCall(t, record, tool, chain, admission.reservation, done));
  };
  if (admitted instanceof Promise) admitted.then(admit, done);
  else admit(admitted);
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
