import {
  type A2AMethod,
  type A2AVersion,
  type AgentCallEnd,
  callAgent,
  eventIds,
  type JsonRpcErrorObject,
  type LearnedIds,
  resultIds,
  type StopSignal,
  translateError,
  translateEvent,
  translateRequest,
  translateResult,
} from '../../a2a/index.js';
import type { ErrorCode } from '../../errors.js';
import type { AgentCandidate } from '../../live/index.js';
import type { AttemptOf, Skipped } from '../attempt.js';
import type { JsonRpcId } from './messages.js';
import { agentHeaders } from './service.js';

// One attempt at one upstream agent: its JSON-RPC endpoint read from its card (the version
// the client spoke when the agent speaks it, so the bytes pass through untouched; the other
// one, translated both ways, when it does not), the call sent, and its answer read. A JSON
// answer is handed back whole; an event stream commits as soon as it starts and is relayed
// event by event, each one's ids learned (and recorded before the event goes on) and, when
// the versions differ, translated. A failure says whether the agent can have seen the call:
// only a refused connection, an open breaker, or a 502/503/504 that is not a JSON-RPC
// answer prove it did not, and only then may a new task move on to another candidate.

/** Where the attempt's events go: the client's SSE stream, opened on the first. */
export interface StreamReply {
  /** Opens the client's event stream (status 200, text/event-stream). */
  open(): void;
  /** Sends one event (a JSON-RPC response); false = the client is full: wait for `onDrain`. */
  event(json: string): boolean;
  onDrain(cb: () => void): void;
  /** The client's connection closed (whatever waits for it is dropped). */
  onClose(cb: () => void): void;
  readonly gone: boolean;
}

/** Learns the ids one answer names: resolves once they are recorded (a follow-up on any replica then finds them). */
export type Learn = (ids: LearnedIds, c: AgentCandidate) => Promise<void> | null;

export interface AgentAttemptRequest extends AttemptOf<AgentCandidate> {
  readonly method: A2AMethod;
  /** The version the client spoke, and its request as it sent it. */
  readonly version: A2AVersion;
  readonly id: JsonRpcId;
  readonly params: Record<string, unknown>;
  readonly raw: Buffer;
  /** The client's `A2A-Extensions` (or 0.3's `X-A2A-Extensions`), passed on. */
  readonly extensions: string | null;
  readonly maxEventBytes: number;
  /** A call's whole time, or a stream's length, for this candidate. */
  readonly totalMs: (c: AgentCandidate) => number;
  readonly signal: StopSignal;
  readonly reply: StreamReply;
  readonly learn: Learn;
  readonly endpointFor: (c: AgentCandidate) => { readonly path: string; readonly version: A2AVersion } | string;
}

export interface AgentFailure {
  readonly kind: 'failed';
  /** The breaker's and the record's word: connect_error, timeout, status_5xx, dropped, malformed, no_card, ... */
  readonly reason: string;
  readonly detail: string;
  /** False only when the agent provably never received the call. */
  readonly reached: boolean;
  /** The code the client is told when the chain stops on this failure. */
  readonly code: ErrorCode;
}

/** The agent answered with one JSON-RPC response (a result or its error), already in the client's version. */
export interface AgentAnswer {
  readonly kind: 'committed';
  readonly answer: 'json';
  /** The JSON-RPC response's bytes for the client. */
  readonly body: string | Buffer;
  readonly status: number;
  readonly error: JsonRpcErrorObject | null;
  /** Resolves once the answer's ids are recorded. */
  readonly learned: Promise<void> | null;
  readonly ids: LearnedIds;
  onFinished(cb: (f: { readonly outcome: 'complete' }) => void): void;
}

/** The agent answered with an event stream, relayed as it came; `ended` tells how it ended. */
export interface AgentStream {
  readonly kind: 'committed';
  readonly answer: 'stream';
  /** The last state an event gave, and the ids. */
  readonly ids: () => LearnedIds | null;
  onFinished(cb: (f: { readonly outcome: 'complete' | 'partial' | 'aborted'; readonly failure: AgentFailure | null }) => void): void;
}

export type AgentOutcome = AgentFailure | { readonly kind: 'aborted' } | AgentAnswer | AgentStream;

const ABORTED: AgentOutcome = Object.freeze({ kind: 'aborted' as const });

/**
 * The candidate cannot take the call, and nothing was sent: it has no card yet (or one that
 * names no usable endpoint), or the call has no counterpart in the version it speaks. Thrown
 * before anything is sent, so its breaker counts nothing: the agent did nothing wrong.
 */
export class AgentCannotTake extends Error {
  /** `no_card` or `unable`: the record's word for it. */
  readonly reason: 'no_card' | 'unable';
  readonly code: ErrorCode;
  constructor(reason: 'no_card' | 'unable', detail: string, code: ErrorCode) {
    super(detail);
    this.reason = reason;
    this.code = code;
  }
}

/**
 * Sends the call to one candidate and reports how it ended (after this function has
 * returned). Throws AgentCannotTake when the call cannot be sent to it at all.
 */
export function sendToAgent(a: AgentAttemptRequest, done: (r: AgentOutcome | Skipped) => void): void {
  const c = a.candidate;
  const endpoint = a.endpointFor(c);
  if (typeof endpoint === 'string') throw new AgentCannotTake('no_card', endpoint, 'upstream_unavailable');
  const upstreamVersion = endpoint.version;
  let body: string | Buffer = a.raw;
  if (upstreamVersion !== a.version) {
    const translated = translateRequest(a.method, a.params, a.version, upstreamVersion);
    if (!translated.ok)
      throw new AgentCannotTake('unable', `${c.server.name} speaks A2A ${upstreamVersion}: ${translated.error.message}`, 'invalid_request');
    body = JSON.stringify({ jsonrpc: '2.0', id: a.id, method: translated.method, params: translated.params });
  }
  const headers = agentHeaders(c.server);
  headers['content-type'] = 'application/json';
  headers.accept = a.method.streams ? 'text/event-stream, application/json' : 'application/json';
  // Always sent: an agent that speaks both versions answers in the one the gateway means.
  headers['a2a-version'] = upstreamVersion;
  if (a.extensions !== null) headers[upstreamVersion === '1.0' ? 'a2a-extensions' : 'x-a2a-extensions'] = a.extensions;
  const relay = new StreamRelay(a, c, upstreamVersion);
  const call = callAgent({
    pool: c.server.pool,
    path: endpoint.path,
    headers,
    body,
    timeoutMs: c.server.timeoutMs,
    totalMs: a.totalMs(c),
    maxEventBytes: a.maxEventBytes,
    signal: a.signal,
    onStreamStart: () => relay.start(done),
    onEvent: (data) => relay.event(data),
  });
  relay.resume = () => call.resume();
  call.done.then(
    (end) => (relay.started ? relay.ended(end) : done(outcomeOf(end, a, c, upstreamVersion, a.method))),
    (err: unknown) => done(unreached('malformed', err instanceof Error ? err.message : String(err), 'upstream_error')),
  );
}

function unreached(reason: string, detail: string, code: ErrorCode): AgentFailure {
  return { kind: 'failed', reason, detail, reached: false, code };
}

/** A whole answer (or a failure before any answer) as the chain reads it. */
function outcomeOf(end: AgentCallEnd, a: AgentAttemptRequest, c: AgentCandidate, from: A2AVersion, method: A2AMethod): AgentOutcome {
  const name = c.server.name;
  if (end.kind === 'failed') {
    switch (end.reason) {
      case 'aborted':
        return ABORTED;
      case 'refused':
        return unreached('connect_error', `${name} ${end.detail}`, 'upstream_unavailable');
      case 'timeout':
      case 'too_long':
        return { kind: 'failed', reason: 'timeout', detail: `${name} ${end.detail}`, reached: true, code: 'upstream_timeout' };
      case 'too_large':
        return { kind: 'failed', reason: 'malformed', detail: `${name}: ${end.detail}`, reached: true, code: 'stream_event_too_large' };
      default:
        return { kind: 'failed', reason: 'dropped', detail: `${name} ${end.detail}`, reached: true, code: 'upstream_error' };
    }
  }
  if (end.kind === 'stream')
    return { kind: 'failed', reason: 'malformed', detail: `${name}: an empty event stream`, reached: true, code: 'upstream_error' };
  const response = jsonRpcResponse(end.body);
  if (response === null) {
    // A gateway in front of the agent answered for it: the agent never saw the call.
    if (end.status === 502 || end.status === 503 || end.status === 504)
      return unreached('status_5xx', `${name} answered ${end.status} (not a JSON-RPC answer)`, 'upstream_unavailable');
    const auth = end.status === 401 || end.status === 403;
    return {
      kind: 'failed',
      reason: auth ? 'status_auth' : end.status >= 500 ? 'status_5xx' : end.status >= 300 || end.status < 200 ? 'status_4xx' : 'malformed',
      detail: `${name} answered ${end.status}${end.status >= 200 && end.status < 300 ? ' with something that is not a JSON-RPC response' : ''}`,
      reached: true,
      code: auth ? 'upstream_auth_failed' : 'upstream_error',
    };
  }
  let body: string | Buffer = end.body;
  let error: JsonRpcErrorObject | null = null;
  let ids: LearnedIds = NO_IDS;
  if (response.error !== undefined) {
    error = response.error;
    if (from !== a.version) {
      error = translateError(response.error, from, a.version);
      body = JSON.stringify({ jsonrpc: '2.0', id: a.id, error });
    }
  } else {
    ids = resultIds(method, from, response.result);
    if (from !== a.version)
      body = JSON.stringify({ jsonrpc: '2.0', id: a.id, result: translateResult(method, response.result, from, a.version) });
  }
  return {
    kind: 'committed',
    answer: 'json',
    body,
    // A JSON-RPC error answered over a non-2xx status keeps it; a result is a 200.
    status: error === null ? 200 : end.status,
    error,
    learned: a.learn(ids, c),
    ids,
    onFinished: finishedAtOnce,
  };
}

const NO_IDS: LearnedIds = Object.freeze({ terminal: false });
const COMPLETE = Object.freeze({ outcome: 'complete' as const });

function finishedAtOnce(cb: (f: { readonly outcome: 'complete' }) => void): void {
  cb(COMPLETE);
}

interface JsonRpcResponse {
  readonly result?: unknown;
  readonly error?: JsonRpcErrorObject;
}

/** The body as a JSON-RPC response (a result or an error object), or null when it is not one. */
function jsonRpcResponse(body: Buffer): JsonRpcResponse | null {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const m = value as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return null;
  if ('result' in m) return { result: m.result };
  const e = m.error;
  if (e !== null && typeof e === 'object' && typeof (e as Record<string, unknown>).code === 'number')
    return { error: e as JsonRpcErrorObject };
  return null;
}

/**
 * An event stream from the agent to the client: each event read as a JSON-RPC response, its
 * ids learned and recorded before it goes on (the upstream waits meanwhile), translated when
 * the versions differ, and written to the client, whose back-pressure pauses the upstream.
 */
class StreamRelay {
  readonly #a: AgentAttemptRequest;
  readonly #c: AgentCandidate;
  readonly #from: A2AVersion;
  resume: () => void = () => undefined;
  started = false;
  #lastIds: LearnedIds | null = null;
  #finished: ((f: { outcome: 'complete' | 'partial' | 'aborted'; failure: AgentFailure | null }) => void) | null = null;
  #end: { outcome: 'complete' | 'partial' | 'aborted'; failure: AgentFailure | null } | null = null;
  /** Events read while an id was being recorded or the client was full, in order: they go out before any later one. */
  #waiting: string[] = [];
  #recording = false;
  /** Called once the waiting events have all gone out (the end waits for it). */
  #onFlushed: (() => void) | null = null;

  constructor(a: AgentAttemptRequest, c: AgentCandidate, from: A2AVersion) {
    this.#a = a;
    this.#c = c;
    this.#from = from;
  }

  start(done: (r: AgentOutcome) => void): void {
    this.started = true;
    this.#a.reply.open();
    this.#a.reply.onDrain(() => {
      if (!this.#recording) this.#flush();
    });
    this.#a.reply.onClose(() => {
      if (!this.#recording) this.#flush();
    });
    done({
      kind: 'committed',
      answer: 'stream',
      ids: () => this.#lastIds,
      onFinished: (cb) => {
        if (this.#end !== null) cb(this.#end);
        else this.#finished = cb;
      },
    });
  }

  /** One event's data; false = pause the upstream (the client is full, or an id is being recorded). */
  event(data: string): boolean {
    if (this.#recording || this.#waiting.length > 0) {
      this.#waiting.push(data);
      return false;
    }
    return this.#relay(data);
  }

  #relay(data: string): boolean {
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      // Not JSON: passed on as it came (the client's library judges it), nothing learned.
      return this.#a.reply.event(data);
    }
    let out = data;
    if (value !== null && typeof value === 'object') {
      const m = value as Record<string, unknown>;
      if ('result' in m) {
        const ids = eventIds(this.#from, m.result);
        if (ids.taskId !== undefined || ids.contextId !== undefined || ids.state !== undefined) this.#lastIds = merge(this.#lastIds, ids);
        if (this.#from !== this.#a.version)
          out = JSON.stringify({ jsonrpc: '2.0', id: this.#a.id, result: translateEvent(m.result, this.#from, this.#a.version) });
        const learned = this.#a.learn(ids, this.#c);
        if (learned !== null) {
          // Recorded before the client sees it, so that a follow-up on any replica finds the task.
          this.#recording = true;
          learned.then(
            () => this.#afterRecord(out),
            () => this.#afterRecord(out),
          );
          return false;
        }
      } else if (this.#from !== this.#a.version && m.error !== null && typeof m.error === 'object') {
        out = JSON.stringify({
          jsonrpc: '2.0',
          id: this.#a.id,
          error: translateError(m.error as JsonRpcErrorObject, this.#from, this.#a.version),
        });
      }
    }
    return this.#a.reply.event(out);
  }

  #afterRecord(out: string): void {
    this.#recording = false;
    if (this.#a.reply.gone || this.#a.reply.event(out)) this.#flush();
  }

  /**
   * Sends the waiting events, in order, while the client takes them; the upstream goes on
   * once none waits. A client that is gone takes nothing more: what waits is dropped.
   */
  #flush(): void {
    if (this.#a.reply.gone) this.#waiting.length = 0;
    let open = true;
    while (open && !this.#recording && this.#waiting.length > 0) open = this.#relay(this.#waiting.shift() as string);
    if (this.#recording || this.#waiting.length > 0) return;
    const flushed = this.#onFlushed;
    this.#onFlushed = null;
    flushed?.();
    if (open) this.resume();
  }

  ended(end: AgentCallEnd): void {
    const name = this.#c.server.name;
    let result: { outcome: 'complete' | 'partial' | 'aborted'; failure: AgentFailure | null };
    if (end.kind !== 'failed') result = { outcome: 'complete', failure: null };
    else if (end.reason === 'aborted') result = { outcome: 'aborted', failure: null };
    else {
      const code: ErrorCode =
        end.reason === 'too_large'
          ? 'stream_event_too_large'
          : end.reason === 'timeout' || end.reason === 'too_long'
            ? 'upstream_timeout'
            : 'stream_interrupted';
      result = {
        outcome: 'partial',
        failure: { kind: 'failed', reason: end.reason, detail: `${name}: ${end.detail}`, reached: true, code },
      };
    }
    // Events still waiting (on a record, or on the client) go out before the end is told.
    const tell = (): void => {
      this.#end = result;
      this.#finished?.(result);
    };
    if (this.#a.reply.gone) this.#waiting.length = 0;
    if (!this.#recording && this.#waiting.length === 0) tell();
    else this.#onFlushed = tell;
  }
}

function merge(prev: LearnedIds | null, next: LearnedIds): LearnedIds {
  if (prev === null) return next;
  return {
    taskId: next.taskId ?? prev.taskId,
    contextId: next.contextId ?? prev.contextId,
    terminal: prev.terminal || next.terminal,
    state: next.state ?? prev.state,
  };
}
