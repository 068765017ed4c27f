import type { ServerResponse } from 'node:http';
import { openaiErrorBody } from '../errors.js';
import { answerClassOf, type FallbackClass, isFailoverStatus } from '../resilience/index.js';
import { EventStreamFrames, holdsFailedFrame } from './canonical/bedrock-stream.js';
import type { TokenUsage } from './metering.js';
import { usageFromJson } from './openai-body.js';
import type { ProviderPool, RawHandler, UpstreamCall } from './provider-pool.js';
import { headerNameBytes, rawHeaderValue } from './raw-headers.js';
import type { MaybeAsync, PlainAnswer, RelayTransformAsync, StreamFailureCode } from './relay-transform.js';
import { type ClientHeaders, responseHeaders } from './response-headers.js';
import { holdsErrorEvent } from './sse-event.js';
import { DEFAULT_MAX_EVENT_BYTES, SseReader } from './sse-reader.js';
import {
  ANSWER_BODY_BYTES,
  AnswerBody,
  type AnswerHeader,
  type AnswerReader,
  classFailure,
  encodingFailure,
  type FailedAttempt,
  isAuthStatus,
  keyRefusedFailure,
  OutOfTime,
  retryAfterOf,
  saneRetryAfter,
  statusFailure,
  TooLargeToTranslate,
  upstreamFailure,
} from './upstream-failure.js';
import { keepTail, usageOfTail } from './usage-tail.js';

// One attempt at one candidate, as an undici dispatch handler. Until something is written
// to the client the attempt can still fail over. A stream (SSE) commits when its headers
// arrive, and each upstream chunk is written as it arrives, with the upstream paused while
// the client's socket is full. A plain response is buffered (up to a bound) and written
// whole when it has ended: its usage, hence its cost, is then known before the headers
// go out, and an upstream that stalls or breaks mid-body can still fail over. A body over
// the bound commits and streams from there. Only a bounded tail is kept to read usage.
// What else happens to a response (another protocol, another usage shape, an event left
// out, headers from its usage) is its transform's; without one the bytes pass as they are.
// A stream is read as server-sent events (SseReader): whole events go on, to the client or
// to the transform, and the one still open waits for its empty line, up to a bound. So a
// stream cut or ended mid-event leaves the client no half event for its error event to
// run into, and one endless event cannot grow the gateway's memory.

/** A plain response up to this size is buffered and written whole (see above). */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** A plain body a transform reads whole (its `plain`) is buffered up to this size; a larger one fails the attempt. */
const MAX_TRANSLATED_BYTES = 32 * 1024 * 1024;

/** One attempt at one candidate: where it goes, and what the client sees if it commits. */
export interface RelayRequest {
  readonly res: ServerResponse;
  readonly pool: ProviderPool;
  readonly providerName: string;
  readonly call: UpstreamCall;
  /** The gateway's headers on the client's response, and which upstream ones pass. */
  readonly clientHeaders: ClientHeaders;
  /**
   * What the response needs beyond its bytes as they are: the translation and the
   * transforms in the client's protocol, composed into one (composeTransforms); without
   * one, the pass-through path runs unchanged.
   */
  readonly transform?: RelayTransformAsync;
  /**
   * When this attempt must be over, as performance.now() ms: the provider's
   * request_timeout_ms for a non-streamed response, or the route's deadline, whichever comes
   * first. Before anything reached the client the attempt then fails over (reason timeout);
   * a body already being relayed is cut. A stream that has started is no longer bound by it.
   */
  readonly doneBy?: number;
  /** A stream's whole length (stream_max_ms): it then ends with the SSE error event. */
  readonly streamMaxMs?: number;
  /** The largest event a stream may send (max_event_bytes; default 1 MiB); a larger one ends it with `stream_event_too_large`. */
  readonly maxEventBytes?: number;
  /**
   * Where the relay leaves a way to stop it from outside (the drain), and a way to tell it
   * that the client closed, while it runs. Without a slot it listens to the response's
   * 'close' itself; the request path's Exchange listens already, and passes it on.
   */
  readonly stopSlot?: StopSlot;
  /**
   * The route's `fallback_on`: a plain 400 or 413 whose body says it is one of these fails
   * the attempt (reason: the class) instead of reaching the client. Absent: every such
   * answer is relayed, and its body is never read.
   */
  readonly fallbackOn?: readonly FallbackClass[];
  /**
   * For a provider whose error bodies say more than their status (Gemini, Bedrock): a 400 is
   * held until its body shows whether the gateway's key was refused or the answer is of a
   * fallback class, and a 429 without `retry-after` until its body gives the delay. The
   * reader may also look at the answer's headers (Bedrock names its error type in one).
   */
  readonly readAnswer?: AnswerReader;
  /**
   * For a provider that names its error type in a header (Bedrock's `x-amzn-errortype`):
   * the status an error answer stands for, which decides failover (a quota exceeded that
   * Bedrock answers 400 is a 429; a model's 424 or 408 a 5xx). Absent: its own status.
   */
  readonly statusOfAnswer?: (status: number, header: AnswerHeader) => number;
}

/** The longest a 429's body is waited for, for its delay, before failing over without one. */
const ANSWER_DELAY_WAIT_MS = 1_000;

/** Holds the running attempt's stop: it ends the attempt as out of time, saying why. */
export interface StopSlot {
  stopAttempt: ((why: string) => void) | null;
  /** Called by the slot's owner when the client's connection closes. */
  clientClosed: (() => void) | null;
}

/**
 * How an attempt ended: it failed before anything reached the client (the caller may try
 * the next candidate), the client left first, or the response committed to this attempt
 * and is being relayed; its `onFinished` observers hear when the relayed response has ended.
 */
export type RelayResult = FailedAttempt | { readonly kind: 'aborted' } | Committed;

export interface Committed {
  readonly kind: 'committed';
  readonly status: number;
  /** performance.now() when the upstream's response headers arrived. */
  readonly headersAt: number;
  /**
   * Calls `observer` once the relayed response has ended (at once if it already has).
   * Observers run in the order they were added, synchronously with the end.
   */
  onFinished(observer: (relayed: Relayed) => void): void;
}

/** Called exactly once per relay, with how the attempt ended (see RelayResult). */
export type RelayCallback = (result: RelayResult) => void;

export interface Relayed {
  /** complete; partial = cut after bytes reached the client; aborted = the client left. */
  readonly outcome: 'complete' | 'partial' | 'aborted';
  readonly usage: TokenUsage | null;
  /** performance.now() when the first body byte was written, or null. */
  readonly firstByteAt: number | null;
  /**
   * Server-sent events relayed (a stream's), for a stream cut before its usage arrived:
   * an OpenAI-compatible stream sends about one token per event.
   */
  readonly events: number;
  /**
   * Why a stream that committed did not end well, when the relay knows: the upstream sent
   * an error event in it (`stream_interrupted`, outcome partial even when the upstream
   * then ended it), or an event over max_event_bytes.
   */
  readonly reason?: StreamFailureCode;
}

const CONTENT_TYPE = headerNameBytes('content-type');
const RETRY_AFTER = headerNameBytes('retry-after');
/** AWS's binary event stream, Bedrock's ConverseStream body. */
const EVENT_STREAM_TYPE = 'application/vnd.amazon.eventstream';
const CONTENT_ENCODING = headerNameBytes('content-encoding');

class ClientGone extends Error {
  constructor() {
    super('the client closed the connection');
  }
}

type State = 'waiting' | 'discarding' | 'buffering' | 'relaying' | 'ended';

/**
 * Sends one attempt upstream and relays its response. `onResult` is called exactly once,
 * and never before this function has returned: in a microtask when the attempt fails
 * before it commits (the client already left, the pool refused it, the upstream failed),
 * from undici's callback when it commits. No promise per attempt: the result is a callback, and
 * a committed response tells its observers when it has ended (Committed.onFinished).
 */
export function relay(request: RelayRequest, onResult: RelayCallback): void {
  // The client may have left while an earlier candidate failed: do not call another.
  if (request.res.destroyed) {
    queueMicrotask(() => onResult(ABORTED));
    return;
  }
  const handler = new Relay(request, onResult);
  const slot = request.stopSlot;
  if (slot === undefined) request.res.on('close', handler.onClientClose);
  else slot.clientClosed = handler.onClientClose;
  try {
    request.pool.dispatch(request.call, handler);
  } catch (err) {
    handler.fail(err);
  }
}

const ABORTED: RelayResult = Object.freeze({ kind: 'aborted' });

const NO_HEADERS: readonly Buffer[] = Object.freeze([]);

class Relay implements RawHandler {
  readonly #request: RelayRequest;
  readonly #res: ServerResponse;
  readonly #transform: RelayTransformAsync | undefined;
  /**
   * The transform once the response's kind is known, when it has a part for that kind
   * (`plain` for a plain body, `chunk` for a stream); undefined: the bytes pass as they are.
   */
  #body: RelayTransformAsync | undefined = undefined;
  /**
   * While a transform's part answers later (a guardrail asking a service): the upstream is
   * paused, and what arrives meanwhile waits here, in order, with the stream's end.
   */
  #waiting: { chunks: Buffer[]; complete: boolean } | null = null;
  readonly #resolve: RelayCallback;
  /** Who waits for the committed response to end; the relayed outcome once it has. */
  #observers: Array<(relayed: Relayed) => void> | null = null;
  #relayed: Relayed | null = null;
  /** undici's way to end the call (onError follows), once the call has started. */
  #abort: ((err?: Error) => void) | null = null;
  /** undici's way to resume a response paused by returning false. */
  #resume: (() => void) | null = null;
  #state: State = 'waiting';
  /** A failing answer's body, kept while it drains (upstream-failure.ts). */
  #answer: AnswerBody | null = null;
  /** A buffered 400/413 on a route with fallback_on: its body decides, once whole, whether it commits. */
  #classify = false;
  #clientGone = false;
  #drainListened = false;
  /** The answer is a stream: server-sent events, or AWS's binary event stream (Bedrock's ConverseStream). */
  #isSse = false;
  /** The stream is AWS's binary event stream: cut into frames by length, not into events by blank lines. */
  #isEventStream = false;
  #status = 0;
  #headersAt = 0;
  #upstreamHeaders: readonly Buffer[] = NO_HEADERS;
  #firstByteAt: number | null = null;
  /** A plain body while it is buffered; once relaying as it comes, the tail its usage is read from. */
  #kept: Buffer[] = [];
  #keptBytes = 0;
  /** A stream's events, once its headers said it is one. */
  #sse: SseReader | EventStreamFrames | null = null;
  /** The upstream sent an error event in the stream. */
  #upstreamError = false;
  /** Set when an event grew past max_event_bytes: what the client is told. */
  #overflow: string | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** Set when this relay aborted the upstream for time: the reason the client is told. */
  #outOfTime: string | null = null;

  constructor(request: RelayRequest, resolve: RelayCallback) {
    this.#request = request;
    this.#res = request.res;
    this.#transform = request.transform;
    this.#resolve = resolve;
    if (request.doneBy !== undefined) this.#limit(request.doneBy - performance.now(), 'its time limit (request_timeout_ms or deadline_ms)');
    if (request.stopSlot !== undefined) request.stopSlot.stopAttempt = this.#stop;
  }

  readonly #stop = (why: string): void => {
    this.#outOfTime = why;
    this.#abort?.(new OutOfTime(why));
  };

  /** Aborts the upstream after `ms`, telling the client `why` if it has been answered by then. */
  #limit(ms: number, why: string): void {
    this.#clearLimit();
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#stop(why);
      },
      Math.max(0, ms),
    );
    this.#timer.unref();
  }

  #clearLimit(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** A synchronous refusal by the pool: the attempt failed before it started. */
  fail(err: unknown): void {
    this.#state = 'ended';
    this.#failed(upstreamFailure(err));
  }

  readonly onClientClose = (): void => {
    if (this.#res.writableFinished) return;
    this.#clientGone = true;
    this.#abort?.(new ClientGone());
  };

  readonly #onDrain = (): void => {
    this.#resume?.();
  };

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.#clientGone) abort(new ClientGone());
    else if (this.#outOfTime !== null) abort(new OutOfTime(this.#outOfTime));
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true;
    this.#resume = resume;
    this.#status = statusCode;
    this.#headersAt = performance.now();
    const standsFor = statusCode >= 400 ? this.#standsFor(statusCode, headers) : statusCode;
    if (isFailoverStatus(standsFor) || isAuthStatus(standsFor)) {
      // Let the body drain so the connection stays reusable, and fail over now; the start
      // of the body is kept, for the client's error should this be the last candidate.
      this.#state = 'discarding';
      const retryAfter = rawHeaderValue(headers, RETRY_AFTER);
      const answer = new AnswerBody(statusCode, retryAfter);
      this.#answer = answer;
      // A 503's retry-after is read too: a retry of this candidate waits for it (a breaker only for a 429's).
      const retryAfterMs = standsFor === 429 || standsFor === 503 ? retryAfterOf(retryAfter) : null;
      const reader = this.#request.readAnswer;
      if (reader !== undefined && standsFor === 429 && retryAfterMs === null) {
        answer.readBody((text) => {
          const seconds = reader(statusCode, text, (name) => rawHeaderValue(headers, headerNameBytes(name))).retryAfterSeconds;
          if (seconds !== null) answer.retryAfter = saneRetryAfter(String(seconds));
          const ms = answer.retryAfter === null ? null : Number(answer.retryAfter) * 1000;
          this.#failed(statusFailure(standsFor, ms, answer));
        }, ANSWER_DELAY_WAIT_MS);
        return true;
      }
      this.#failed(statusFailure(standsFor, retryAfterMs, answer));
      return true;
    }
    const encoding = rawHeaderValue(headers, CONTENT_ENCODING);
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      // Asked for identity (providerHeaders), it compressed anyway: its usage cannot be
      // read, and the client never asked for that encoding. Another candidate may answer.
      this.#state = 'discarding';
      this.#failed(encodingFailure(encoding));
      return true;
    }
    this.#upstreamHeaders = headers;
    const contentType = rawHeaderValue(headers, CONTENT_TYPE);
    this.#isEventStream = contentType?.startsWith(EVENT_STREAM_TYPE) === true;
    this.#isSse = this.#isEventStream || contentType?.startsWith('text/event-stream') === true;
    const transform = this.#transform;
    if (!this.#isSse) {
      if (transform?.plain !== undefined) this.#body = transform;
      this.#state = 'buffering';
      if ((statusCode === 400 || statusCode === 413) && this.#request.fallbackOn !== undefined) this.#classify = true;
      if (statusCode === 400 && this.#request.readAnswer !== undefined) this.#classify = true;
      return true;
    }
    if (transform?.chunk !== undefined) this.#body = transform;
    const maxEventBytes = this.#request.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    // The same bound on a binary frame as on an event: a larger one ends the stream alike.
    this.#sse = this.#isEventStream ? new EventStreamFrames(maxEventBytes) : new SseReader(maxEventBytes);
    // A started stream is bound by its own length limit, not by the time to start it.
    this.#clearLimit();
    const maxMs = this.#request.streamMaxMs;
    if (maxMs !== undefined) this.#limit(maxMs, `it reached stream_max_ms (${maxMs} ms)`);
    const out = responseHeaders(headers, this.#request.clientHeaders, null);
    if (transform?.trailers !== undefined) out.push('trailer', transform.trailers);
    this.#commit(out);
    // A stream's client should see it start at once, not with the first token.
    this.#res.flushHeaders();
    return true;
  }

  /** The status an error answer stands for: its own, unless the provider's error type says otherwise (statusOfAnswer). */
  #standsFor(statusCode: number, headers: readonly Buffer[]): number {
    const of = this.#request.statusOfAnswer;
    return of === undefined ? statusCode : of(statusCode, (name) => rawHeaderValue(headers, headerNameBytes(name)));
  }

  /** Returns false to pause the upstream until the client's socket drains. */
  onData(chunk: Buffer): boolean {
    if (this.#state === 'discarding') {
      this.#answer?.push(chunk);
      return true;
    }
    if (this.#state === 'buffering') {
      this.#kept.push(chunk);
      this.#keptBytes += chunk.length;
      if (this.#keptBytes > MAX_BUFFERED_BYTES) {
        // A transform's `plain` needs the whole body; the pass-through commits and relays from here.
        if (this.#body === undefined) return this.#streamBuffered();
        if (this.#keptBytes > MAX_TRANSLATED_BYTES) this.#abort?.(new TooLargeToTranslate('the response is too large to translate'));
      }
      return true;
    }
    if (this.#state !== 'relaying') return true;
    if (this.#waiting !== null) {
      this.#waiting.chunks.push(chunk);
      return false;
    }
    if (this.#firstByteAt === null) this.#firstByteAt = performance.now();
    const sse = this.#sse;
    if (sse === null) {
      // A plain body past the buffering bound.
      this.#keptBytes = keepTail(this.#kept, this.#keptBytes, chunk);
      return this.#write(chunk);
    }
    const events = sse.push(chunk);
    if (events === null) return this.#eventTooLarge();
    return events.length === 0 || this.#relayEvents(events);
  }

  /** Whole events of a stream, to the client (through the transform, if it has `chunk`). */
  #relayEvents(events: Buffer): boolean {
    if (!this.#upstreamError) this.#upstreamError = this.#isEventStream ? holdsFailedFrame(events) : holdsErrorEvent(events);
    const body = this.#body;
    // Set only for a stream whose transform has `chunk` (onHeaders).
    if (body !== undefined) {
      const out = body.chunk!(events);
      return out instanceof Promise ? this.#wait(out) : this.#write(out);
    }
    this.#keptBytes = keepTail(this.#kept, this.#keptBytes, events);
    return this.#write(events);
  }

  /**
   * A transform answers later: the upstream pauses until it has, then its bytes are written,
   * and what arrived meanwhile (more data, the end) is taken in order. Returns false (pause).
   */
  #wait(out: Promise<Buffer | string>): false {
    this.#waiting = { chunks: [], complete: false };
    out.then(
      (bytes) => this.#resumeAfter(bytes),
      (err: unknown) => this.#transformFailed(err),
    );
    return false;
  }

  #resumeAfter(bytes: Buffer | string): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    if (waiting === null || this.#state !== 'relaying' || this.#res.destroyed) return;
    let flowing = this.#write(bytes);
    for (let i = 0; i < waiting.chunks.length; i++) {
      flowing = this.onData(waiting.chunks[i] as Buffer);
      if (this.#waiting !== null) {
        // Waiting again: the rest of what came meanwhile queues behind.
        const again = this.#waiting as { chunks: Buffer[]; complete: boolean };
        again.chunks.push(...waiting.chunks.slice(i + 1));
        again.complete ||= waiting.complete;
        return;
      }
    }
    if (waiting.complete) return this.onComplete();
    // Resumed at once unless the client's socket is full (then its drain resumes it).
    if (flowing) this.#resume?.();
  }

  /** A transform part failed: the stream ends with its error event, as an upstream break would. */
  #transformFailed(err: unknown): void {
    this.#waiting = null;
    if (this.#state !== 'relaying') return;
    this.#state = 'ended';
    this.#abort?.(new Error('transform failed'));
    const message = `the gateway could not finish the answer: ${(err as Error)?.message ?? String(err)}`;
    if (this.#isSse && !this.#res.destroyed)
      this.#res.end(this.#transform?.fail?.(message) ?? `data: ${openaiErrorBody('stream_interrupted', message)}\n\n`);
    else this.#res.destroy();
    this.#served('partial', undefined, 'stream_interrupted');
  }

  #write(out: Buffer | string): boolean {
    return out.length === 0 || this.#res.write(out) || this.#pauseUntilDrain();
  }

  /** An event grew past the bound: the upstream is ended, and onError ends the client's stream saying why. */
  #eventTooLarge(): boolean {
    if (this.#overflow === null) {
      this.#overflow = `the stream from provider ${this.#request.providerName} sent an event larger than max_event_bytes (${this.#request.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES} bytes)`;
      this.#abort?.(new Error(this.#overflow));
    }
    return true;
  }

  /**
   * The client's socket is full: the upstream waits until it drains (listened to only once
   * it is needed). Returns false, which is what pauses undici.
   */
  #pauseUntilDrain(): false {
    if (!this.#drainListened) {
      this.#drainListened = true;
      this.#res.on('drain', this.#onDrain);
    }
    return false;
  }

  onComplete(): void {
    if (this.#waiting !== null) {
      this.#waiting.complete = true;
      return;
    }
    const state = this.#state;
    this.#state = 'ended';
    this.#answer?.end();
    if (state === 'buffering') {
      if (!this.#classify || !this.#failedAsClass()) this.#writeBuffered();
      return;
    }
    if (state !== 'relaying') return;
    // An event the upstream left without its empty line goes on as it came.
    const rest = this.#sse?.end();
    if (rest !== undefined && rest.length > 0) {
      this.#state = 'relaying';
      this.#relayEvents(rest);
      if (this.#waiting !== null) {
        (this.#waiting as { complete: boolean }).complete = true;
        return;
      }
      this.#state = 'ended';
    }
    const last = this.#body?.end?.();
    if (last instanceof Promise) {
      last.then(
        (bytes) => this.#endStream(bytes),
        (err: unknown) => {
          this.#state = 'relaying';
          this.#transformFailed(err);
        },
      );
      return;
    }
    this.#endStream(last);
  }

  /** The stream's last bytes: its trailers, the end, and the relayed outcome. */
  #endStream(last: Buffer | string | undefined): void {
    if (this.#res.destroyed) {
      this.#served('aborted');
      return;
    }
    const usage = this.#usage();
    const transform = this.#transform;
    if (transform?.trailers !== undefined) {
      const trailers = transform.usageHeaders?.(usage) ?? null;
      if (trailers !== null) this.#res.addTrailers(trailers);
    }
    if (last !== undefined) this.#res.end(last);
    else this.#res.end();
    if (this.#upstreamError) this.#served('partial', usage, 'stream_interrupted');
    else this.#served('complete', usage);
  }

  onError(err: Error): void {
    const state = this.#state;
    this.#state = 'ended';
    this.#answer?.end();
    if (state === 'discarding') return;
    if (state === 'waiting' || state === 'buffering') {
      // Nothing reached the client yet: the next candidate may still answer.
      this.#failed(this.#clientGone ? ABORTED : upstreamFailure(err));
      return;
    }
    if (this.#clientGone) {
      // A client that leaves on the upstream's error event (an SDK raises on it) left because the upstream failed.
      if (this.#upstreamError) this.#served('partial', undefined, 'stream_interrupted');
      else this.#served('aborted');
      return;
    }
    // Bytes may already be with the client: no failover now. A stream ends with an error
    // event its SDK understands; a plain body can only be cut short.
    const code: StreamFailureCode = this.#overflow === null ? 'stream_interrupted' : 'stream_event_too_large';
    if (this.#isSse && !this.#res.destroyed) {
      const message =
        this.#overflow ??
        (this.#outOfTime === null
          ? `the upstream stream from provider ${this.#request.providerName} was interrupted`
          : `the stream from provider ${this.#request.providerName} was ended by the gateway: ${this.#outOfTime}`);
      this.#res.end(this.#transform?.fail?.(message, code) ?? `data: ${openaiErrorBody(code, message)}\n\n`);
    } else {
      this.#res.destroy();
    }
    this.#served('partial', undefined, this.#overflow !== null || this.#upstreamError ? code : undefined);
  }

  /** The response now belongs to this attempt: headers to the client, and the caller told. */
  #commit(headers: string[]): void {
    this.#state = 'relaying';
    this.#res.writeHead(this.#status, headers);
    this.#resolve({ kind: 'committed', status: this.#status, headersAt: this.#headersAt, onFinished: this.#onFinished });
  }

  readonly #onFinished = (observer: (relayed: Relayed) => void): void => {
    if (this.#relayed !== null) observer(this.#relayed);
    else (this.#observers ??= []).push(observer);
  };

  #finish(relayed: Relayed): void {
    this.#relayed = relayed;
    const observers = this.#observers;
    this.#observers = null;
    if (observers !== null) for (const observer of observers) observer(relayed);
  }

  /**
   * A whole buffered 400/413 on a route with fallback_on: when its start says it is one of
   * the route's classes, the attempt fails with that reason (nothing was written), keeping
   * the answer for the client's error should no other candidate serve. True when it did.
   */
  #failedAsClass(): boolean {
    const whole = this.#wholeBody();
    const start = whole.subarray(0, ANSWER_BODY_BYTES).toString('utf8');
    const headers = this.#upstreamHeaders;
    const verdict = this.#request.readAnswer?.(this.#status, start, (name) => rawHeaderValue(headers, headerNameBytes(name)));
    const keyRefused = verdict?.keyRefused === true;
    const wanted = this.#request.fallbackOn ?? [];
    const said = verdict?.answerClass;
    const kind = keyRefused
      ? null
      : said !== undefined && said !== null && wanted.includes(said)
        ? said
        : answerClassOf(this.#status, start, wanted);
    if (kind === null && !keyRefused) return false;
    const answer = new AnswerBody(this.#status, undefined);
    answer.push(whole);
    answer.end();
    this.#failed(kind === null ? keyRefusedFailure(this.#status, answer) : classFailure(this.#status, kind, answer));
    return true;
  }

  /** The buffered body as one buffer, joined once (a 400 read for its class is then written from the same bytes). */
  #wholeBody(): Buffer {
    if (this.#kept.length !== 1) this.#kept = [Buffer.concat(this.#kept, this.#keptBytes)];
    return this.#kept[0] as Buffer;
  }

  /** A whole buffered body: one write, with the headers its usage decides. */
  #writeBuffered(): void {
    const whole = this.#wholeBody();
    let body: Buffer | string = whole;
    let usage: TokenUsage | null;
    const rewriting = this.#body;
    if (rewriting === undefined) usage = this.#status < 300 ? usageFromJson(whole) : null;
    else {
      // Set only for a plain body whose transform has `plain` (onHeaders).
      const answer: MaybeAsync<PlainAnswer> = rewriting.plain!(this.#status, whole);
      if (answer instanceof Promise) {
        answer.then(
          (a) => this.#writeAnswer(a.status, a.body, a.usage),
          (err: unknown) => this.#failed(upstreamFailure(err)),
        );
        return;
      }
      this.#status = answer.status;
      body = answer.body;
      usage = answer.usage;
    }
    this.#writeAnswer(this.#status, body, usage);
  }

  /** A whole answer, read: one write, with the headers its usage decides. */
  #writeAnswer(status: number, body: Buffer | string, usage: TokenUsage | null): void {
    if (this.#clientGone || this.#res.destroyed) {
      this.#failed(ABORTED);
      return;
    }
    this.#status = status;
    const translated = typeof body === 'string';
    const extra = this.#transform?.usageHeaders?.(usage) ?? null;
    const headers = responseHeaders(this.#upstreamHeaders, this.#request.clientHeaders, extra, translated);
    if (translated) headers.push('content-type', 'application/json');
    headers.push('content-length', String(Buffer.byteLength(body)));
    this.#commit(headers);
    this.#state = 'ended';
    this.#firstByteAt = performance.now();
    this.#res.end(body);
    this.#detach();
    this.#finish({ outcome: 'complete', usage, firstByteAt: this.#firstByteAt, events: 0 });
  }

  /**
   * A body over the buffering bound: commit without usage headers and relay from here on.
   * Returns false when the client's socket is full (undici then pauses).
   */
  #streamBuffered(): boolean {
    this.#commit(responseHeaders(this.#upstreamHeaders, this.#request.clientHeaders, null));
    this.#firstByteAt = performance.now();
    const kept = this.#kept;
    this.#kept = [];
    this.#keptBytes = 0;
    let full = false;
    for (const chunk of kept) {
      this.#keptBytes = keepTail(this.#kept, this.#keptBytes, chunk);
      full = !this.#res.write(chunk);
    }
    return full ? this.#pauseUntilDrain() : true;
  }

  /**
   * The usage a relayed response reports: its transform's, or what the kept tail holds. A
   * cut stream's tail may still hold one (a server that reports usage as it goes); a cut
   * plain body cannot be read.
   */
  #usage(): TokenUsage | null {
    if (this.#status >= 300) return null;
    const body = this.#body;
    return body === undefined ? usageOfTail(this.#kept, this.#keptBytes, this.#isSse) : (body.usage ?? null);
  }

  #served(
    outcome: Relayed['outcome'],
    usage: TokenUsage | null = outcome === 'complete' || this.#isSse ? this.#usage() : null,
    reason?: StreamFailureCode,
  ): void {
    this.#detach();
    this.#finish({ outcome, usage, firstByteAt: this.#firstByteAt, events: this.#sse?.events ?? 0, reason });
  }

  /**
   * Before commit: the attempt is over and the caller may try another candidate. Told in a
   * microtask: undici reports some failures from inside dispatch() itself, and the caller
   * must never hear of an attempt before the call that started it has returned, nor start
   * the next one from inside undici's callbacks.
   */
  #failed(result: RelayResult): void {
    this.#detach();
    queueMicrotask(() => this.#resolve(result));
  }

  #detach(): void {
    this.#clearLimit();
    const slot = this.#request.stopSlot;
    if (slot === undefined) this.#res.off('close', this.onClientClose);
    else {
      if (slot.stopAttempt === this.#stop) slot.stopAttempt = null;
      if (slot.clientClosed === this.onClientClose) slot.clientClosed = null;
    }
    if (this.#drainListened) {
      this.#drainListened = false;
      this.#res.off('drain', this.#onDrain);
    }
    this.#kept = [];
  }
}
