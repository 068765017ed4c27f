import { TextDecoder } from 'node:util';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { connectionFailure, type ProviderPool, type RawHandler } from '../providers/index.js';

// One JSON-RPC exchange with an upstream agent over its provider's pool, through undici's raw
// handler protocol. A JSON answer is read whole, up to a bound. An event-stream answer is
// parsed as it arrives (chunk boundaries, CRLF framing and multi-line `data:` are the
// parser's), and each event is handed on at once; when the client cannot take more, the
// upstream is paused until it can (back-pressure), so a fast agent never fills the gateway's
// memory for a slow client. How the exchange ended says whether the agent can have seen the
// request: only a failure to connect proves it did not.

/** Of an answer that is not a 2xx, this much is kept (for its JSON-RPC error, or the failure's detail). */
const KEPT_FAILURE_BYTES = 64 * 1024;

/** What ends a call from outside: an AbortSignal, or the lighter CallStop (one per call, no EventTarget). */
export interface StopSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A call's stop: what an AbortController does, for the few listeners one call has. */
export class CallStop implements StopSignal {
  aborted = false;
  #listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.#listeners;
    if (listeners === null) return;
    const at = listeners.indexOf(listener);
    if (at >= 0) listeners.splice(at, 1);
  }

  stop(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.#listeners;
    this.#listeners = null;
    if (listeners !== null) for (const listener of listeners) listener();
  }
}

export interface AgentCallSpec {
  readonly pool: ProviderPool;
  /** POST for a JSON-RPC call (the default), GET for a card. */
  readonly method?: 'GET' | 'POST';
  /** The endpoint's path (and query) on the pool's origin. */
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string | Buffer | null;
  /** Time to the answer's head, and the longest silence between two chunks of its body. */
  readonly timeoutMs: number;
  /** The whole exchange: a call's answer, or a stream's length. */
  readonly totalMs: number;
  /** The largest JSON answer, and the largest event of a stream. */
  readonly maxEventBytes: number;
  /** Ends the exchange (the client left, the gateway is stopping): its end is then `aborted`. */
  readonly signal: StopSignal;
  /** Each event of an event-stream answer; false = the client is full: the upstream pauses until `resume()`. */
  readonly onEvent?: (data: string) => boolean;
  /** The head of an event-stream answer, before its first event. */
  readonly onStreamStart?: () => void;
}

export type AgentCallFailure =
  /** Never connected: the agent cannot have seen the request. */
  | 'refused'
  /** No head within timeout_ms, or a silence longer than it. */
  | 'timeout'
  /** Longer than the whole exchange may last (call_timeout_ms, stream_max_ms). */
  | 'too_long'
  | 'dropped'
  | 'aborted'
  /** A JSON answer or an event larger than the bound. */
  | 'too_large';

export type AgentCallEnd =
  /** A whole answer that is not an event stream (any status; a non-2xx one's body is kept up to a bound). */
  | { readonly kind: 'answer'; readonly status: number; readonly contentType: string; readonly body: Buffer }
  /** An event stream that ended; its events went to onEvent. */
  | { readonly kind: 'stream'; readonly status: number }
  | {
      readonly kind: 'failed';
      readonly reason: AgentCallFailure;
      readonly detail: string;
      /** The upstream's status, when its head arrived. */
      readonly status: number | null;
      /** Whether an event stream had begun (events may have gone to the client). */
      readonly streaming: boolean;
    };

export interface AgentCall {
  readonly done: Promise<AgentCallEnd>;
  /** Lets a paused stream go on (the client drained). */
  resume(): void;
}

class CallStopped extends Error {
  readonly reason: AgentCallFailure;
  constructor(reason: AgentCallFailure, detail: string) {
    super(detail);
    this.reason = reason;
  }
}

/** Sends one JSON-RPC request to an agent and reads its answer (see above). */
export function callAgent(spec: AgentCallSpec): AgentCall {
  let settle: (end: AgentCallEnd) => void = () => undefined;
  const done = new Promise<AgentCallEnd>((resolve) => {
    settle = resolve;
  });
  const handler = new AgentCallHandler(spec, (end) => settle(end));
  if (spec.signal.aborted) handler.stop(new CallStopped('aborted', 'aborted before it was sent'));
  else {
    try {
      spec.pool.dispatch(
        { method: spec.method ?? 'POST', path: spec.path, headers: spec.headers, body: spec.body, timeoutMs: spec.timeoutMs },
        handler,
      );
    } catch (err) {
      handler.onError(err instanceof Error ? err : new Error(String(err)));
    }
  }
  return { done, resume: () => handler.resume() };
}

class AgentCallHandler implements RawHandler {
  readonly #spec: AgentCallSpec;
  readonly #settle: (end: AgentCallEnd) => void;
  #abort: ((err?: Error) => void) | null = null;
  #pendingStop: CallStopped | null = null;
  #status: number | null = null;
  #contentType = '';
  #chunks: Buffer[] = [];
  #bytes = 0;
  #parser: EventSourceParser | null = null;
  #decoder: TextDecoder | null = null;
  #resume: (() => void) | null = null;
  #paused = false;
  #ended = false;
  #stopping = false;
  readonly #totalTimer: NodeJS.Timeout;
  readonly #onAbort = (): void => this.stop(new CallStopped('aborted', 'the client left'));

  constructor(spec: AgentCallSpec, settle: (end: AgentCallEnd) => void) {
    this.#spec = spec;
    this.#settle = settle;
    spec.signal.addEventListener('abort', this.#onAbort, { once: true });
    this.#totalTimer = setTimeout(() => this.stop(new CallStopped('too_long', `longer than ${spec.totalMs} ms`)), spec.totalMs);
    this.#totalTimer.unref();
  }

  stop(reason: CallStopped): void {
    if (this.#ended || this.#stopping) return;
    this.#stopping = true;
    if (this.#abort !== null) return this.#abort(reason);
    // Not connected yet: it ends here, onConnect aborts it, and undici's own onError is ignored.
    this.#pendingStop = reason;
    this.onError(reason);
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#resume?.();
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.#pendingStop !== null) abort(this.#pendingStop);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, _statusText: string): boolean {
    this.#resume = resume;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2)
      if (rawHeaders[i]?.toString('latin1').toLowerCase() === 'content-type')
        this.#contentType = rawHeaders[i + 1]?.toString('latin1').toLowerCase() ?? '';
    this.#status = statusCode;
    if (statusCode >= 200 && statusCode < 300 && this.#contentType.startsWith('text/event-stream')) {
      this.#decoder = new TextDecoder();
      this.#parser = createParser({
        maxBufferSize: this.#spec.maxEventBytes,
        onEvent: (event) => {
          if (this.#ended || this.#stopping) return;
          // The parser bounds characters; the bound is bytes (a character may take up to 4).
          if (event.data.length * 3 > this.#spec.maxEventBytes && Buffer.byteLength(event.data) > this.#spec.maxEventBytes)
            return this.stop(new CallStopped('too_large', `an event over ${this.#spec.maxEventBytes} bytes`));
          if (this.#spec.onEvent?.(event.data) === false) this.#paused = true;
        },
        onError: (err) => {
          if (err.type === 'max-buffer-size-exceeded')
            this.stop(new CallStopped('too_large', `an event over ${this.#spec.maxEventBytes} bytes`));
        },
      });
      this.#spec.onStreamStart?.();
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#ended || this.#stopping) return true;
    if (this.#parser !== null && this.#decoder !== null) {
      this.#parser.feed(this.#decoder.decode(chunk, { stream: true }));
      return !this.#paused;
    }
    const status = this.#status ?? 0;
    const ok = status >= 200 && status < 300;
    const limit = ok ? this.#spec.maxEventBytes : KEPT_FAILURE_BYTES;
    if (this.#bytes + chunk.length > limit) {
      if (ok) this.stop(new CallStopped('too_large', `an answer over ${limit} bytes`));
      else if (this.#bytes < limit) this.#keep(chunk.subarray(0, limit - this.#bytes));
      return true;
    }
    this.#keep(chunk);
    return true;
  }

  onComplete(_trailers: unknown[] | null): void {
    if (this.#status === null) return this.onError(new Error('ended without an answer'));
    if (!this.#finish()) return;
    if (this.#parser !== null) this.#settle({ kind: 'stream', status: this.#status });
    else this.#settle({ kind: 'answer', status: this.#status, contentType: this.#contentType, body: Buffer.concat(this.#chunks) });
  }

  onError(err: Error): void {
    if (!this.#finish()) return;
    this.#settle({ kind: 'failed', ...failureOf(err, this.#status !== null), status: this.#status, streaming: this.#parser !== null });
  }

  #keep(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
  }

  #finish(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    clearTimeout(this.#totalTimer);
    this.#spec.signal.removeEventListener('abort', this.#onAbort);
    return true;
  }
}

function failureOf(err: Error, answered: boolean): { reason: AgentCallFailure; detail: string } {
  if (err instanceof CallStopped) return { reason: err.reason, detail: err.message };
  return connectionFailure(err, answered);
}
