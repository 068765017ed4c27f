import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '../errors.js';
import type { Principal } from '../governance/index.js';
import type { Generation, GenerationCandidate, Keyring, ToolCandidate } from '../live/index.js';
import type { ChatProtocol, Operation, StopSlot, TokenUsage } from '../providers/index.js';
import type { FailureReason } from '../resilience/index.js';
import type { Span } from '../telemetry/index.js';

export interface Failure {
  readonly provider: string;
  /** The stable_id of the candidate that failed. */
  readonly candidate: string;
  readonly reason: FailureReason;
  readonly detail: string;
}

/**
 * The caller of a model endpoint, once authenticated: the generation and the keyring
 * captured together for the request (everything after reads this pair, never the holders
 * again) and who is calling.
 */
export interface Caller {
  readonly gen: Generation;
  readonly keyring: Keyring;
  readonly principal: Principal;
}

/** One tools/call on /mcp, as its record needs it (filled as the call goes). */
export interface ToolCallRecord {
  /** The exposed tool name asked for. */
  readonly tool: string;
  /** The generation routes the name (so it may be a metrics label). */
  routed: boolean;
  /** The candidate that answered, or the last one tried. */
  candidate: ToolCandidate | null;
  outcome: 'result' | 'tool_error' | 'error' | 'refused' | 'failed';
  /** The error's stable code, or the upstream's JSON-RPC error code as text. */
  reason: string | null;
  /** `provider:reason` of each candidate given up on, and those candidates' stable_ids. */
  readonly fallback: string[];
  readonly failedCandidates: string[];
}

/** `GET` / `DELETE /v1/responses/{id}`: the stored response asked for, and the client's query string. */
export interface StoredResponse {
  readonly method: 'GET' | 'DELETE';
  readonly id: string;
  readonly query: string;
}

/**
 * A model request, authenticated and parsed: what every step after the body reads. It is
 * built whole, once, so no step can see a request that is only half admitted.
 */
export interface ModelRequest extends Caller {
  /** What the client asked for: a chat answer (either protocol), or one of the other model endpoints. */
  readonly operation: Operation;
  /** The protocol the client speaks: its answers and errors, whoever serves it, come in this shape. */
  readonly protocol: ChatProtocol;
  readonly model: string;
  readonly stream: boolean;
  /** The request body as received, and its parsed form (for a model rename or a translation). */
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  /** A stored response's read or delete; null for a new request. */
  readonly stored: StoredResponse | null;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * One request as its listener holds it, from arrival to the end of the response: the
 * connection's request and response, and the one record of the request, which each step
 * fills in as it learns its part:
 *
 * - the listener: `recorded`, `protocol`, `operation`, `endpoint`, `span`;
 * - admission: `gen` (captured once), `principal`, then `model`, `stream` and `bodyBytes`
 *   from the parsed request, and `admitted` after the pre-check;
 * - the failover chain: `candidate`, `failures`, `outcome` and the relay's timings, usage
 *   and events;
 * - settle: `costMicroUsd`, `pricingMissing`, `usageEstimated`;
 * - the error path: `reason`; the drain: `stopped`.
 *
 * No step reads its own inputs back from here: they travel as immutable values (Caller,
 * ModelRequest, the chain's request). The record is written exactly once, when both the
 * response has closed and the handler is done (whichever is last), so it sees the final
 * status and the settled cost whatever refused or ended the request.
 */
export class Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly startedAt = performance.now();
  /** Whether this request gets a record (metrics, access line); probes and scrapes do not. */
  recorded = true;
  /** The protocol the client speaks, set by the endpoint before anything can fail. */
  protocol: ChatProtocol = 'openai';
  operation: Operation = 'chat';
  /** The path of the endpoint the listener matched (a fixed set, so a metrics label), or `none`. */
  endpoint = 'none';
  /** The request's server span, when tracing is on; ended by the record. */
  span: Span | null = null;
  gen: Generation | null = null;
  /** The keyring captured with `gen`: the request's keys, teams and limits. */
  keyring: Keyring | null = null;
  principal: Principal | null = null;
  model: string | undefined = undefined;
  stream = false;
  /** The request body's size, once read: a cut stream's input estimate. */
  bodyBytes = 0;
  /** Passed authentication and the pre-check: its completion is audited. */
  admitted = false;
  /** The candidate the response committed to. */
  candidate: GenerationCandidate | null = null;
  failures: Failure[] = [];
  /** Request fields the last attempt's translation dropped or clamped (`x-switchyard-dropped`); null = none. */
  dropped: readonly string[] | null = null;
  /** Set when the relayed response was cut after its first byte, or the client left. */
  outcome: 'complete' | 'partial' | 'aborted' = 'complete';
  attemptStartedAt = 0;
  headersAt: number | null = null;
  firstByteAt: number | null = null;
  usage: TokenUsage | null = null;
  /** Server-sent events relayed to the client. */
  events = 0;
  /**
   * The usage was estimated, not reported: a stream cut (or left by its client) before its
   * usage arrived is billed on what was seen (see admission.ts settle).
   */
  usageEstimated = false;
  costMicroUsd: number | null = null;
  pricingMissing = false;
  /** The error code of a refusal, or of an answer the gateway wrote itself. */
  reason: ErrorCode | null = null;
  /** Why the gateway stopped this request (the drain ran out), or null. */
  stopped: string | null = null;
  /** A tools/call on /mcp: its own record (metrics, audit, access line) instead of a model request's. */
  toolCall: ToolCallRecord | null = null;
  /**
   * The running attempt's controls, which the relay fills while it runs: the listener tells
   * it that the client closed, and the drain stops it.
   */
  readonly running: StopSlot = { stopAttempt: null, clientClosed: null };
  /** Neighbours in the listener's list of requests in progress. */
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
    this.running.stopAttempt?.(why);
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

  /** Notes what the parsed request asks for: the record reports it whatever happens next. */
  asked(request: ModelRequest): void {
    this.model = request.model;
    this.stream = request.stream;
    this.bodyBytes = request.raw.length;
  }

  /** Called once by the response's 'close' and once when the handler is done. */
  readonly done = (): void => {
    this.#pending -= 1;
    if (this.#pending === 0 && this.recorded) this.#onRecord(this);
  };
}

/** The request's path, without the query string. */
export function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
