import type { ErrorCode } from '../../errors.js';
import type { ToolCandidate } from '../../live/index.js';
import type { CallOutcome, JsonRpcNotification, McpUpstream, StopSignal } from '../../mcp/index.js';
import { type AttemptOf, type CallAttempt, type CallWrap, credentialCheck } from '../attempt.js';

// One attempt at one tool candidate, as a small core (send the tools/call to the server's
// upstream session) with the wraps every call kind shares: the credential check and the
// breaker, composed once at start (handlers.ts). Its outcome has the shape the chain and
// the wraps read: a failure says whether the server may have seen the call (`reached`) and
// whether it is transient; a server's answer, a result or a JSON-RPC error, commits.

/** One tools/call attempt: the candidate, and what every attempt of the call shares. */
export interface ToolAttemptRequest extends AttemptOf<ToolCandidate> {
  /** The candidate's upstream session owner; undefined = none (the call cannot be sent to it). */
  readonly upstream: McpUpstream | undefined;
  /** The client's params with the gateway's progress token (the tool's name is the candidate's). */
  readonly params: Record<string, unknown>;
  readonly signal: StopSignal;
  readonly onNotification: (n: JsonRpcNotification) => void;
}

/** A tools/call that ended without a server's answer. */
export interface ToolFailure {
  readonly kind: 'failed';
  /** The breaker's and the record's word for it: connect_error, timeout, dropped, status_5xx, … */
  readonly reason: string;
  readonly detail: string;
  /** False only when the server provably never received the call. */
  readonly reached: boolean;
  /** A timeout, a dropped connection or a 5xx: a call safe to repeat may be sent again after one. */
  readonly transient: boolean;
  /** The code the client is told when the chain stops on this failure. */
  readonly code: ErrorCode;
}

/** The server answered: its result or its JSON-RPC error is the client's answer. */
export interface ToolAnswer {
  readonly kind: 'committed';
  readonly answer: Extract<CallOutcome, { readonly kind: 'result' | 'error' }>;
  onFinished(cb: (f: { readonly outcome: 'complete' }) => void): void;
}

export type ToolOutcome = ToolFailure | { readonly kind: 'aborted' } | ToolAnswer;
export type ToolAttempt = CallAttempt<ToolAttemptRequest, ToolOutcome>;

const ABORTED: ToolOutcome = Object.freeze({ kind: 'aborted' as const });
const COMPLETE = Object.freeze({ outcome: 'complete' as const });

/** The core: the call sent upstream, its outcome mapped (after this function has returned, as a promise's reaction is). */
export const sendToTool: ToolAttempt = (a, done) => {
  const upstream = a.upstream;
  if (upstream === undefined) {
    // Refused by withServerUpstream before the breaker; kept here so the core stands alone.
    queueMicrotask(() => done(noUpstream(a)));
    return;
  }
  upstream.call({ method: 'tools/call', params: a.params, signal: a.signal, onNotification: a.onNotification }).then(
    (outcome) => done(toolOutcome(outcome)),
    (err: unknown) => done(unexpected(err)),
  );
};

/** A candidate with no upstream (its server is gone from this generation) fails over without a call, outside the breaker. */
export const withServerUpstream: CallWrap<ToolAttemptRequest, ToolOutcome> = (next) => (a, done) => {
  if (a.upstream !== undefined) next(a, done);
  else queueMicrotask(() => done(noUpstream(a)));
};

function noUpstream(a: ToolAttemptRequest): ToolFailure {
  return unavailable(`no upstream for ${a.candidate.server.name}`);
}

export const withToolCredentialCheck: CallWrap<ToolAttemptRequest, ToolOutcome> = credentialCheck<ToolAttemptRequest, ToolOutcome>(
  (detail) => unavailable(detail),
);

function unavailable(detail: string): ToolFailure {
  return { kind: 'failed', reason: 'credential_unavailable', detail, reached: false, transient: false, code: 'credential_unavailable' };
}

function unexpected(err: unknown): ToolFailure {
  const detail = err instanceof Error ? err.message : String(err);
  return { kind: 'failed', reason: 'malformed', detail, reached: true, transient: false, code: 'upstream_error' };
}

function toolOutcome(outcome: CallOutcome): ToolOutcome {
  if (outcome.kind !== 'failed') return { kind: 'committed', answer: outcome, onFinished: finishedAtOnce };
  if (outcome.reason === 'aborted') return ABORTED;
  return {
    kind: 'failed',
    reason: failureReason(outcome),
    detail: outcome.detail,
    reached: outcome.reached,
    transient: outcome.reason === 'timeout' || outcome.reason === 'dropped' || (outcome.status ?? 0) >= 500,
    code: errorCodeOf(outcome),
  };
}

/** A tool's answer is whole when it arrives: it has ended as soon as it commits. */
function finishedAtOnce(cb: (f: { readonly outcome: 'complete' }) => void): void {
  cb(COMPLETE);
}

/**
 * A status that says the server refused the gateway itself (4xx) is as much a failure of
 * this candidate as a 5xx; a timeout or a drop counts too.
 */
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
