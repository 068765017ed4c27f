import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '../errors.js';
import type { Principal, Reservation } from '../governance/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import type { CanonicalRequest, ChatProtocol, Operation, TokenUsage } from '../providers/index.js';
import type { FailureReason } from '../resilience/index.js';
import type { Span } from '../telemetry/index.js';

export interface Failure {
  readonly provider: string;
  /** The stable_id of the candidate that failed. */
  readonly candidate: string;
  readonly reason: FailureReason;
  readonly detail: string;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * One request and its response, from arrival to the end of the response: what the
 * handler learns as it goes (generation, model, candidate, failures, usage, cost) and
 * what the one record of the request is written from. The record is written exactly once,
 * when both the response has closed and the handler has returned (whichever is last), so
 * it sees the final status and the settled cost whatever refused or ended the request.
 */
export class Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly startedAt = performance.now();
  /** Whether this request gets a record (metrics, access line); probes and scrapes do not. */
  recorded = true;
  /** The protocol the client speaks: its answers and errors, whoever serves it, come in this shape. */
  protocol: ChatProtocol = 'openai';
  /** What the client asked for: a chat answer (either protocol), or one of OpenAI's other model endpoints. */
  operation: Operation = 'chat';
  /** `GET` / `DELETE /v1/responses/{id}`: the stored response asked for, and the client's query string. */
  storedResponse: { readonly method: 'GET' | 'DELETE'; readonly id: string; readonly query: string } | null = null;
  /** Called with each response id an answer carries and the candidate that made it (Responses API). */
  onResponseId: ((responseId: string, c: GenerationCandidate) => void) | null = null;
  /** The request in the canonical form, read once when the first candidate of another protocol needs it. */
  canonical: CanonicalRequest | null = null;
  /** The generation captured once at the start; everything after reads this one. */
  gen: Generation | null = null;
  principal: Principal | null = null;
  /** The pre-check's reservation until settle or release takes it (exactly once). */
  reservation: Reservation | null = null;
  /** `x-ratelimit-*` and the budget warning, for the response the request commits to, as names and values in turn. */
  limitHeaders: readonly string[] | null = null;
  pricingMissing = false;
  /** Passed authentication and the pre-check: its completion is audited. */
  admitted = false;
  /** The model the client asked for, once the body is parsed. */
  model: string | undefined = undefined;
  stream = false;
  /** The candidate the response committed to. */
  candidate: GenerationCandidate | null = null;
  /** The error code of a refusal, or of an answer the gateway wrote itself. */
  reason: ErrorCode | null = null;
  /** Set when the relayed response was cut after its first byte, or the client left. */
  outcome: 'complete' | 'partial' | 'aborted' = 'complete';
  failures: Failure[] = [];
  /** performance.now() by which the route's deadline_ms has passed, across every attempt; null = none. */
  deadlineAt: number | null = null;
  /** Tells the running attempt that the client closed (see StopSlot), set by the relay while it runs. */
  clientClosed: (() => void) | null = null;
  /** The running attempt's stop (see StopSlot), set by the relay while it runs. */
  stopAttempt: ((why: string) => void) | null = null;
  /** Why the gateway stopped this request (the drain ran out), or null. */
  stopped: string | null = null;
  attemptStartedAt = 0;
  headersAt: number | null = null;
  firstByteAt: number | null = null;
  usage: TokenUsage | null = null;
  /**
   * The usage was estimated, not reported: a stream cut (or left by its client) before its
   * usage arrived is billed on what was seen (see admission.ts settle).
   */
  usageEstimated = false;
  /** The request body's size, once read: a cut stream's input estimate. */
  bodyBytes = 0;
  /** Server-sent events relayed to the client. */
  events = 0;
  costMicroUsd: number | null = null;
  /** The request's server span, when tracing is on; ended by the record. */
  span: Span | null = null;
  /** The running upstream attempt's `traceparent` (and `tracestate`), from its span, for the upstream request. */
  attemptTrace: Record<string, string> | null = null;
  /** Neighbours in the listener's list of requests in progress (OpenExchanges). */
  prevOpen: Exchange | null = null;
  nextOpen: Exchange | null = null;
  #requestId: string | null = null;
  #pending = 2;
  readonly #onRecord: (x: Exchange) => void;

  constructor(req: IncomingMessage, res: ServerResponse, onRecord: (x: Exchange) => void) {
    this.req = req;
    this.res = res;
    this.#onRecord = onRecord;
  }

  /** Ends the request from outside (the drain's limit): the attempt in flight stops, and no other starts. */
  interrupt(why: string): void {
    this.stopped = why;
    this.stopAttempt?.(why);
  }

  /** The client's `x-request-id` when it is a sane token, or a new UUID. */
  get requestId(): string {
    if (this.#requestId === null) {
      const given = this.req.headers['x-request-id'];
      this.#requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    }
    return this.#requestId;
  }

  /** The status the record reports: what was sent, 'partial' for a cut stream, 499 when the client left first. */
  get status(): number | 'partial' {
    if (this.outcome === 'partial') return 'partial';
    if (this.outcome === 'aborted' || !this.res.writableFinished) return 499;
    return this.res.statusCode;
  }

  /** Called once by the response's 'close' and once when the handler returns. */
  readonly done = (): void => {
    this.#pending -= 1;
    if (this.#pending === 0 && this.recorded) this.#onRecord(this);
  };
}
