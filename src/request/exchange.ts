import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TokenVerdict } from '../auth/index.js';
import type { Principal } from '../governance/index.js';
import type { Generation, Keyring } from '../live/index.js';
import type { ChatProtocol, Operation, StopSlot } from '../providers/index.js';
import type { AnswerCacheSlot } from './cache/slot.js';
import type { RequestGuard } from './guardrails/guard.js';
import { RequestRecord } from './request-record.js';
import type { ResponsesTurn } from './responses/turn-state.js';

export type { AgentCallRecord, CacheOutcome, Failure, MatchedEndpoint, ToolCallRecord } from './request-record.js';

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
  /** A new Responses API request: its turn of the conversation the gateway holds (responses/turn.ts). */
  readonly turn?: ResponsesTurn;
  /** Set by the input guardrails' stage: what the answer owes them (its checks, the placeholders to restore). */
  readonly guard?: RequestGuard;
  /** Set by the cache stage on a request it did not answer: its answer's cache headers, and the capture of each attempt. */
  readonly cache?: AnswerCacheSlot;
}

/**
 * The control slot of a request in progress, owned by its listener: the running attempt
 * registers how to stop it, the listener tells it that the client closed, and the drain
 * stops it. Kept apart from the record: it steers the request, the record only says what
 * happened to it.
 */
export class ControlSlot implements StopSlot {
  stopAttempt: ((why: string) => void) | null = null;
  clientClosed: (() => void) | null = null;
  #stopped: string | null = null;

  /** Why the gateway stopped this request (the drain ran out), or null. */
  get stopped(): string | null {
    return this.#stopped;
  }

  /** Ends the request from outside (the drain's limit): the attempt in flight stops, and no other starts. */
  interrupt(why: string): void {
    this.#stopped = why;
    this.stopAttempt?.(why);
  }
}

/**
 * One request as its listener holds it, from arrival to the end of the response: the
 * connection's request and response, its record (RequestRecord: written once per phase,
 * then frozen and handed to the sinks) and its control slot. The record is ended exactly
 * once, when both the response has closed and the handler is done (whichever is last), so
 * it sees the final status and the settled cost whatever refused or ended the request.
 */
export class Exchange extends RequestRecord {
  readonly res: ServerResponse;
  /** The running attempt's controls (see ControlSlot): the listener's, which the relay fills while it runs. */
  readonly running: ControlSlot;
  /** The verdict on the JWT the request presented (caller-token.ts), judged before its endpoint ran; null = none presented. */
  token: TokenVerdict | null = null;
  #pending = 2;
  readonly #onRecord: (x: Exchange) => void;

  constructor(req: IncomingMessage, res: ServerResponse, onRecord: (x: Exchange) => void, control: ControlSlot = new ControlSlot()) {
    super(req);
    this.res = res;
    this.#onRecord = onRecord;
    this.running = control;
  }

  /** Why the gateway stopped this request (the drain ran out), or null. */
  get stopped(): string | null {
    return this.running.stopped;
  }

  /** The status the record reports: what was sent, 'partial' for a cut stream, 499 when the client left first. */
  override get status(): number | 'partial' {
    if (this.ended) return super.status;
    if (this.outcome === 'partial') return 'partial';
    if (this.outcome === 'aborted' || !this.res.writableFinished) return 499;
    return this.res.statusCode;
  }

  /** Called once by the response's 'close' and once when the handler is done. */
  readonly done = (): void => {
    this.#pending -= 1;
    if (this.#pending !== 0) return;
    this.end(this.status, this.res.statusCode);
    if (this.recorded) this.#onRecord(this);
  };
}

/** The request's path, without the query string. */
export function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
