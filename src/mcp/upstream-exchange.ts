import { TextDecoder } from 'node:util';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import { connectionFailure, type ProviderPool, type UpstreamCall } from '../providers/index.js';
import type { StopSignal } from './stop.js';

// One HTTP exchange with an MCP server over its provider's pool, through undici's raw
// handler protocol (no stream or fetch Response per message). An event-stream answer is
// parsed as it arrives and each event handed on at once, so a tool's progress reaches the
// caller before its result; any other answer is buffered, up to a bound, and read whole.
// How the exchange ended says whether the server can have seen the request: only a failure
// to connect proves it did not.

type RawHandler = Parameters<ProviderPool['dispatch']>[1];

/** A JSON answer or one SSE event longer than this is not read: 4 MiB. */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** Of an answer that is not a 200, this much is kept for the failure's detail. */
const KEPT_FAILURE_BYTES = 1024;

export interface AnswerHead {
  readonly status: number;
  readonly eventStream: boolean;
  readonly sessionId: string | null;
}

export type ExchangeFailure = 'refused' | 'timeout' | 'dropped' | 'aborted' | 'malformed';

export type ExchangeEnd =
  /** The answer ended; `body` is a plain answer's bytes (empty for an event stream). */
  | { readonly kind: 'complete'; readonly head: AnswerHead; readonly body: Buffer }
  | { readonly kind: 'failed'; readonly reason: ExchangeFailure; readonly head: AnswerHead | null; readonly detail: string };

export interface ExchangeSpec {
  readonly pool: ProviderPool;
  /** With `timeoutMs` 0 (a standing stream) the pool bounds nothing; `headersTimeoutMs` bounds the headers. */
  readonly call: UpstreamCall;
  readonly headersTimeoutMs?: number;
  readonly signal: StopSignal;
  /**
   * A second signal that ends it too (the upstream's lifetime, beside the caller's): listened
   * to as it is, rather than joined with AbortSignal.any, which costs a signal per call.
   */
  readonly stopSignal?: StopSignal;
  readonly onHead?: (head: AnswerHead) => void;
  readonly onEvent?: (event: EventSourceMessage) => void;
  readonly onRetry?: (retryMs: number) => void;
}

export interface Exchange {
  readonly done: Promise<ExchangeEnd>;
  /** Ends the exchange now (its end is `aborted` unless it had already ended). */
  cancel(): void;
}

class ExchangeCancelled extends Error {
  readonly reason: ExchangeFailure;
  constructor(reason: ExchangeFailure, detail: string) {
    super(detail);
    this.reason = reason;
  }
}

/** Sends one request and reads its answer (see above). */
export function exchange(spec: ExchangeSpec): Exchange {
  let settle: (end: ExchangeEnd) => void = () => undefined;
  const done = new Promise<ExchangeEnd>((resolve) => {
    settle = resolve;
  });
  const cancel = startExchange(spec, (end) => settle(end));
  return { done, cancel };
}

/**
 * The same, with its end handed to `settle` (once) rather than a promise: for a caller that
 * waits on the end or on something sooner with one promise of its own. Returns `cancel`.
 */
export function startExchange(spec: ExchangeSpec, settle: (end: ExchangeEnd) => void): () => void {
  const handler = new ExchangeHandler(spec, settle);
  if (spec.signal.aborted || spec.stopSignal?.aborted === true) {
    handler.stop(new ExchangeCancelled('aborted', 'aborted before it was sent'));
    return () => undefined;
  }
  try {
    spec.pool.dispatch(spec.call, handler);
  } catch (err) {
    handler.onError(err instanceof Error ? err : new Error(String(err)));
  }
  return () => handler.stop(new ExchangeCancelled('aborted', 'cancelled'));
}

class ExchangeHandler implements RawHandler {
  readonly #spec: ExchangeSpec;
  readonly #settle: (end: ExchangeEnd) => void;
  #abort: ((err?: Error) => void) | null = null;
  #pendingStop: ExchangeCancelled | null = null;
  #head: AnswerHead | null = null;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #parser: EventSourceParser | null = null;
  #decoder: TextDecoder | null = null;
  #ended = false;
  #stopping = false;
  #headersTimer: NodeJS.Timeout | null = null;
  readonly #onAbort = (): void => this.stop(new ExchangeCancelled('aborted', 'aborted by the caller'));

  constructor(spec: ExchangeSpec, settle: (end: ExchangeEnd) => void) {
    this.#spec = spec;
    this.#settle = settle;
    spec.signal.addEventListener('abort', this.#onAbort, { once: true });
    spec.stopSignal?.addEventListener('abort', this.#onAbort, { once: true });
    if (spec.headersTimeoutMs !== undefined && spec.headersTimeoutMs > 0) {
      this.#headersTimer = setTimeout(
        () => this.stop(new ExchangeCancelled('timeout', `no answer within ${spec.headersTimeoutMs} ms`)),
        spec.headersTimeoutMs,
      );
      this.#headersTimer.unref();
    }
  }

  stop(reason: ExchangeCancelled): void {
    if (this.#ended || this.#stopping) return;
    this.#stopping = true;
    if (this.#abort !== null) return this.#abort(reason);
    // Not connected yet: it ends here, onConnect aborts it, and undici's own onError is ignored.
    this.#pendingStop = reason;
    this.onError(reason);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.#pendingStop !== null) abort(this.#pendingStop);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], _resume: () => void, _statusText: string): boolean {
    if (this.#headersTimer !== null) clearTimeout(this.#headersTimer);
    let contentType = '';
    let sessionId: string | null = null;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const name = rawHeaders[i]?.toString('latin1').toLowerCase();
      if (name === 'content-type') contentType = rawHeaders[i + 1]?.toString('latin1').toLowerCase() ?? '';
      else if (name === 'mcp-session-id') sessionId = rawHeaders[i + 1]?.toString('latin1') ?? null;
    }
    const eventStream = statusCode === 200 && contentType.startsWith('text/event-stream');
    this.#head = { status: statusCode, eventStream, sessionId };
    if (eventStream) {
      this.#decoder = new TextDecoder();
      this.#parser = createParser({
        maxBufferSize: MAX_ANSWER_BYTES,
        onEvent: (event) => this.#spec.onEvent?.(event),
        onRetry: (retryMs) => this.#spec.onRetry?.(retryMs),
        onError: (err) => {
          if (err.type === 'max-buffer-size-exceeded') this.stop(new ExchangeCancelled('malformed', 'an event is too large'));
        },
      });
    }
    this.#spec.onHead?.(this.#head);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#ended || this.#stopping) return true;
    if (this.#parser !== null && this.#decoder !== null) {
      this.#parser.feed(this.#decoder.decode(chunk, { stream: true }));
      return true;
    }
    const status = this.#head?.status ?? 0;
    const limit = status === 200 ? MAX_ANSWER_BYTES : KEPT_FAILURE_BYTES;
    if (this.#bytes + chunk.length > limit) {
      if (status === 200) this.stop(new ExchangeCancelled('malformed', `an answer over ${MAX_ANSWER_BYTES} bytes`));
      else if (this.#bytes < limit) this.#keep(chunk.subarray(0, limit - this.#bytes));
      return true;
    }
    this.#keep(chunk);
    return true;
  }

  onComplete(_trailers: unknown[] | null): void {
    if (this.#head === null) return this.onError(new Error('ended without an answer'));
    if (!this.#finish()) return;
    this.#settle({ kind: 'complete', head: this.#head, body: Buffer.concat(this.#chunks) });
  }

  onError(err: Error): void {
    if (!this.#finish()) return;
    this.#settle({ kind: 'failed', head: this.#head, ...failureOf(err, this.#head !== null) });
  }

  #keep(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
  }

  #finish(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    if (this.#headersTimer !== null) clearTimeout(this.#headersTimer);
    this.#spec.signal.removeEventListener('abort', this.#onAbort);
    this.#spec.stopSignal?.removeEventListener('abort', this.#onAbort);
    return true;
  }
}

function failureOf(err: Error, answered: boolean): { reason: ExchangeFailure; detail: string } {
  if (err instanceof ExchangeCancelled) return { reason: err.reason, detail: err.message };
  return connectionFailure(err, answered);
}
