import * as governance from '../../governance/index.js';
import type { Generation, Keyring, RetryPolicy, ToolCandidate } from '../../live/index.js';
import type { JsonRpcError, JsonRpcId, JsonRpcNotification, StopSignal } from '../../mcp/index.js';
import type { StopSlot } from '../../providers/index.js';
import type { BreakerRegistry } from '../../resilience/index.js';
import type { ResidencyRule } from '../../routing/index.js';
import type { Span } from '../../telemetry/index.js';
import type { Skipped } from '../attempt.js';
import type { CallKind } from '../chain.js';
import type { Exchange, ToolCallRecord } from '../exchange.js';
import { guardResult, type ToolGuard } from '../guardrails/tool-guard.js';
import { residencyOf, residencyRefusal } from '../residency.js';
import type { Services } from '../services.js';
import { errorText, gatewayError, resultText } from './messages.js';
import type { ClientSession } from './sessions.js';
import type { ToolAttempt, ToolFailure, ToolOutcome } from './tool-attempt.js';
import { type ExposedTool, retrySafe } from './tools.js';

// A tools/call as a call kind of the one chain (chain.ts): what its attempts' outcomes mean,
// how it answers, and how it ends (the reservation settled, the span closed).

/** Where a tools/call answers: the client's POST, as JSON or as an SSE stream. */
export interface CallReply {
  /** A notification the server sent while the call ran (progress, log): streamed when the reply is SSE. */
  notify(json: string): void;
  /** The gateway's own JSON-RPC answer (its error): sent as it is. */
  answer(json: string): void;
  /** The server's JSON-RPC answer (its result or its error): through the tool path's transform stack, in the client's protocol, then sent. */
  relay(json: string): void;
  /** True once the client is gone. */
  readonly gone: boolean;
}

/** One tools/call as the endpoint hands it over: who asks, in which session, and where it answers. */
export interface ToolCallRequest {
  readonly svc: Services;
  readonly x: Exchange;
  readonly gen: Generation;
  /** The keyring captured with `gen` at admission: the caller's tools and limits. */
  readonly keyring: Keyring;
  readonly principal: governance.Principal;
  readonly session: ClientSession;
  readonly id: JsonRpcId;
  readonly params: Record<string, unknown>;
  readonly reply: CallReply;
  readonly signal: StopSignal;
  /** The attempt at one candidate, its wraps composed once at start. */
  readonly attempt: ToolAttempt;
  /** What the result owes `mcp.guardrails` (its checks, the arguments' placeholders to restore); absent: none. */
  readonly guard?: ToolGuard | null;
}

let nextProgressToken = 0;

/** Settles the call's reservation: counted when it reached a server, given back when it reached none; then `then`. */
export function finish(svc: Services, reservation: governance.Reservation | null, reached: boolean, then: () => void): void {
  let finished: void | Promise<void>;
  try {
    finished = governance.finishToolCall(svc.governance, reservation, reached, governance.governanceNow());
  } catch {
    // The store's policy has counted it; the client's answer does not wait on the books.
    return then();
  }
  if (finished === undefined) then();
  else finished.then(then, then);
}

/**
 * The tools/call as a call kind of the one chain. Failover is careful, because a tool may
 * write: a failed attempt moves on only when it provably never reached its candidate, or
 * when the tool is safe to repeat and the failure transient. Breakers open as for models,
 * but the chain is not tried again when every one was open: a tool call gives up instead.
 */
export class ToolCall implements CallKind<ToolCandidate, ToolOutcome> {
  readonly #t: ToolCallRequest;
  readonly #record: ToolCallRecord;
  readonly #tool: ExposedTool;
  readonly #reservation: governance.Reservation | null;
  readonly #done: (err: unknown) => void;
  readonly #span: Span | null;
  /** The client's params with the gateway's progress token, the same for every candidate but for the tool's name. */
  readonly #onNotification: (n: JsonRpcNotification) => void;
  readonly #upstreamToken: string | undefined;
  /** Whether some candidate received the call (then the call is counted against the caller's limits). */
  #reached = false;
  readonly candidates: readonly ToolCandidate[];
  readonly residency: ResidencyRule | null;
  readonly triesOpenBreakers = false;
  readonly breakers: BreakerRegistry;
  readonly random: () => number;
  /** The call's deadline is mcp.call_timeout_ms, which the endpoint enforces through the call's signal. */
  readonly deadlineAt = null;
  /** A tool has no `retry` (a call may write), so no wait ever holds it; the call's own signal stops an attempt. */
  readonly slot: StopSlot = { stopAttempt: null, clientClosed: null };

  constructor(
    t: ToolCallRequest,
    record: ToolCallRecord,
    tool: ExposedTool,
    chain: readonly ToolCandidate[],
    reservation: governance.Reservation | null,
    done: (err: unknown) => void,
  ) {
    this.#t = t;
    this.#record = record;
    this.#tool = tool;
    this.#reservation = reservation;
    this.#done = done;
    this.candidates = chain;
    this.residency = residencyOf(t.keyring, t.principal);
    const { svc, x, session, reply, params } = t;
    this.breakers = svc.breakers;
    this.random = svc.random;
    this.#span =
      svc.tracing !== null && x.span !== null ? svc.tracing.startTool(x.span, tool.name, { 'mcp.session.id': session.id }) : null;
    const progress = progressTokenOf(params);
    // The server sees a token of the gateway's own (clients' tokens could collide on one
    // upstream session) and the client gets its own back on every notification.
    const upstreamToken = progress === undefined ? undefined : `switchyard-${++nextProgressToken}`;
    this.#upstreamToken = upstreamToken;
    this.#onNotification = (n) => {
      if (upstreamToken !== undefined && n.params?.progressToken === upstreamToken)
        reply.notify(JSON.stringify({ ...n, params: { ...n.params, progressToken: progress } }));
      else if (n.method !== 'notifications/progress') reply.notify(JSON.stringify(n));
    };
  }

  attempt(c: ToolCandidate, pass: 0 | 1, done: (r: ToolOutcome | Skipped) => void): void {
    const t = this.#t;
    this.#record.candidate = c;
    t.attempt(
      {
        candidate: c,
        pass,
        upstream: t.svc.mcp.upstreamFor(c),
        params: upstreamParams(t.params, c.upstreamTool, this.#upstreamToken),
        signal: t.signal,
        onNotification: this.#onNotification,
      },
      done,
    );
  }

  stopping(): boolean {
    return this.#t.signal.aborted || this.#t.reply.gone;
  }

  /** A stopped call (the client's cancel, the call's deadline) is answered by whoever stopped it. */
  halt(): void {
    this.exhausted();
  }

  clientGone(): boolean {
    return this.#t.reply.gone;
  }

  cannotTake(): boolean {
    return false;
  }

  skipped(c: ToolCandidate): void {
    this.#given(c, 'breaker_open');
  }

  outside(c: ToolCandidate): void {
    this.#given(c, 'residency');
  }

  refuseOutside(rule: ResidencyRule): void {
    const record = this.#record;
    const { reply, id } = this.#t;
    const tool = this.#tool;
    const err = residencyRefusal(`tool ${tool.name}`, rule);
    record.outcome = 'refused';
    record.reason = err.code;
    if (!reply.gone) reply.answer(errorText(id, gatewayError(err.code, err.message, { tool: tool.name })));
    this.end(null);
  }

  noteFailure(r: ToolFailure, c: ToolCandidate): void {
    this.#reached ||= r.reached;
    this.#given(c, r.reason);
  }

  movesOn(r: ToolFailure, c: ToolCandidate): boolean {
    return !r.reached || (retrySafe(this.#tool, c) && r.transient);
  }

  endOnFailure(r: ToolFailure, c: ToolCandidate): void {
    const record = this.#record;
    const tool = this.#tool;
    record.outcome = 'failed';
    record.reason = r.code;
    this.#t.reply.answer(
      errorText(
        this.#t.id,
        gatewayError(
          r.code,
          `tool ${tool.name}: ${c.server.name} ${r.detail}; not sent to another server, since the call may have run (the route is not retry_safe)`,
          { tool: tool.name, provider: c.server.name },
        ),
      ),
    );
    this.end(null);
  }

  retryPolicy(): RetryPolicy | null {
    return null;
  }

  retryable(r: ToolFailure): boolean {
    return r.transient;
  }

  retrying(r: ToolFailure, c: ToolCandidate): void {
    this.#t.svc.metrics.retries.inc({ provider: c.server.name, reason: r.reason });
  }

  /** Counted as a fallback when noted: a failure that stops the chain is one too. */
  movedOn(): void {}

  answered(r: Exclude<ToolOutcome, ToolFailure>, c: ToolCandidate): void {
    const record = this.#record;
    this.#reached = true;
    if (r.kind === 'aborted') {
      record.outcome = 'failed';
      record.reason = 'client_closed';
      return this.end(null);
    }
    const { reply, id, session } = this.#t;
    session.bindings.set(this.#tool.name, c.stableId);
    const answer = r.answer;
    const guard = this.#t.guard;
    if (answer.kind === 'result' && guard !== undefined && guard !== null) {
      const guarded = guardResult(this.#t.x, guard, answer.result as Record<string, unknown>);
      const send = (result: Record<string, unknown>): void => {
        record.outcome = result.isError === true ? 'tool_error' : 'result';
        if (result.isError === true && answer.result.isError !== true) record.reason = 'content_filter';
        this.#span?.setAttribute('switchyard.tool.is_error', result.isError === true);
        reply.relay(resultText(id, result === answer.result ? (answer.resultJson ?? JSON.stringify(result)) : JSON.stringify(result)));
        this.end(null);
      };
      if (guarded instanceof Promise) guarded.then(send, (err: unknown) => this.end(err));
      else send(guarded);
      return;
    }
    if (answer.kind === 'result') {
      record.outcome = answer.result.isError === true ? 'tool_error' : 'result';
      this.#span?.setAttribute('switchyard.tool.is_error', answer.result.isError === true);
      // The server's bytes where they could be kept: the record needs only isError, read above.
      reply.relay(resultText(id, answer.resultJson ?? JSON.stringify(answer.result)));
    } else {
      record.outcome = 'error';
      record.reason = String(answer.error.code);
      reply.relay(errorText(id, upstreamError(answer.error)));
    }
    this.end(null);
  }

  exhausted(): void {
    const record = this.#record;
    const { reply, signal, id } = this.#t;
    const tool = this.#tool;
    record.outcome = 'failed';
    record.reason = 'upstream_unavailable';
    // A stopped call (the client's cancel, the call's deadline) is answered by whoever stopped it.
    // A server outside the caller's zones is not the caller's to hear of.
    const failures = record.fallback.filter((f) => !f.endsWith(':residency'));
    if (!reply.gone && !signal.aborted)
      reply.answer(
        errorText(
          id,
          gatewayError('upstream_unavailable', `tool ${tool.name}: no MCP server could take the call (${failures.join(', ')})`, {
            tool: tool.name,
            failures,
          }),
        ),
      );
    this.end(null);
  }

  abandoned(): void {
    this.end(null);
  }

  /** Settles the reservation, closes the span, then the call is over. */
  end(err: unknown): void {
    finish(this.#t.svc, this.#reservation, this.#reached, () => {
      const span = this.#span;
      const tracing = this.#t.svc.tracing;
      const record = this.#record;
      if (span !== null && tracing !== null) {
        if (record.candidate !== null) span.setAttribute('switchyard.provider', record.candidate.server.name);
        span.setAttribute('switchyard.tool.outcome', record.outcome);
        if (record.outcome === 'failed' || record.outcome === 'error')
          tracing.fail(span, record.reason ?? record.outcome, record.reason ?? record.outcome, false);
        span.end();
      }
      this.#done(err);
    });
  }

  #given(c: ToolCandidate, reason: string): void {
    const record = this.#record;
    record.fallback.push(`${c.server.name}:${reason}`);
    record.failedCandidates.push(c.stableId);
    this.#t.svc.metrics.fallbacks.inc({ provider: c.server.name, reason });
  }
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
