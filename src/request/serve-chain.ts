import { type ErrorCode, SwitchyardError, statusOf } from '../errors.js';
import type { Reservation } from '../governance/index.js';
import type { GenerationCandidate, RetryPolicy } from '../live/index.js';
import {
  type Committed,
  type FailedAttempt,
  type Relayed,
  type RelayResult,
  type StopSlot,
  type TokenUsage,
  upstreamMessage,
} from '../providers/index.js';
import { type BreakerRegistry, type FailureReason, isRetryable } from '../resilience/index.js';
import type { ResidencyRule } from '../routing/index.js';
import { settle } from './admission.js';
import type { AdmittedRequest, Attempt, AttemptCallback } from './attempt.js';
import { type CallKind, runChain } from './chain.js';
import type { Failure } from './exchange.js';
import { CandidateUnable, operations } from './operations.js';
import { residencyOf, residencyRefusal } from './residency.js';
import type { Services } from './services.js';

// The end of every model request's path, once its chain is chosen and admitted: the model
// request as a call kind of the one failover loop (chain.ts), the relay of the answer that
// commits, and the one settle. A request that is answered by its first candidate resolves no
// promise between its body and its record (ADR 0019). A provider with `retry` is tried
// again after a transient failure, after a timer, before the chain moves on (ADR 0028).

/** One admitted request and the chain to serve it with. */
export interface ChainRequest extends AdmittedRequest {
  readonly svc: Services;
  readonly candidates: readonly GenerationCandidate[];
  readonly attempt: Attempt;
  /** The pre-check's reservation, which the chain settles or releases exactly once (metered operations). */
  readonly reservation: Reservation | null;
  /** Runs when a candidate's response commits, before its body is relayed. */
  readonly onCommit: ((committed: Committed, c: GenerationCandidate) => void) | null;
  /** Bill this usage whatever the response says (a stored response's read costs no tokens); null = the response's. */
  readonly usage: TokenUsage | null;
  /** Runs once the committed answer's last byte was written (a Responses turn is stored then); null = nothing. */
  readonly onRelayed: ((relayed: Relayed) => void) | null;
}

/** Called once when the request is over: with null, or with the error its client must be answered with. */
export type ServeCallback = (err: unknown) => void;

/**
 * The chain's error when no candidate served the request (every one failed, or none could
 * take it), rather than the deadline or the drain ending it: a request stage may answer in
 * its place (stage.ts). Otherwise it is answered like any other SwitchyardError.
 */
export class Unserved extends SwitchyardError {}

/**
 * Tries the chain, relays the committed answer, and settles, once, whatever happened; then
 * calls `done`. The first pass skips candidates whose breaker is open; when every breaker
 * was open the chain is tried anyway, in order: failing fast would turn a provider blip
 * into an outage.
 */
export function serveChain(req: ChainRequest, done: ServeCallback): void {
  runChain(new ModelCall(req, done));
}

/**
 * The model request as a call kind: a failed attempt moves on while nothing has reached the
 * client (a failure is always before the first byte), except when the provider refused the
 * gateway's credential.
 */
class ModelCall implements CallKind<GenerationCandidate, RelayResult> {
  readonly #req: ChainRequest;
  readonly #done: ServeCallback;
  /** The latest failed attempt and its candidate: its own answer, if it was one, is what the client is told. */
  #lastFailed: { readonly r: FailedAttempt; readonly c: GenerationCandidate } | null = null;
  /** Whether every candidate that failed answered 503 (so far). */
  #every503 = true;
  /** The first candidate that could not take the request. */
  #unable: CandidateUnable | null = null;
  readonly candidates: readonly GenerationCandidate[];
  readonly residency: ResidencyRule | null;
  readonly triesOpenBreakers = true;
  readonly breakers: BreakerRegistry;
  readonly random: () => number;
  readonly deadlineAt: number | null;
  readonly slot: StopSlot;

  constructor(req: ChainRequest, done: ServeCallback) {
    this.#req = req;
    this.#done = done;
    this.candidates = req.candidates;
    // Every model call of the request (its judge's and its embedding's too, which come back
    // in as requests of the same caller) is held to the caller's zones.
    this.residency = residencyOf(req.request.keyring, req.request.principal);
    this.breakers = req.svc.breakers;
    this.random = req.svc.random;
    this.deadlineAt = req.deadlineAt;
    this.slot = req.x.running;
  }

  attempt(c: GenerationCandidate, pass: 0 | 1, done: AttemptCallback): void {
    const req = this.#req;
    req.attempt({ admitted: req, candidate: c, pass, trace: null }, done);
  }

  stopping(): boolean {
    return pastDeadline(this.#req) || this.#req.x.stopped !== null;
  }

  halt(): void {
    const req = this.#req;
    if (pastDeadline(req)) this.end(outOfTime(req, req.candidates.length));
    else this.end(new SwitchyardError('shutting_down', `the gateway is shutting down: ${req.x.stopped}`));
  }

  clientGone(): boolean {
    return this.#req.x.res.destroyed;
  }

  /** The candidate cannot take the request: skipped like an open breaker, and listed as `provider:unable:field`. */
  cannotTake(err: unknown, c: GenerationCandidate): boolean {
    if (!(err instanceof CandidateUnable)) return false;
    this.#unable ??= err;
    const { x, svc } = this.#req;
    x.failedOver({ provider: c.provider.name, candidate: c.stableId, reason: 'unable', detail: err.field });
    svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: 'unable' });
    return true;
  }

  skipped(): void {}

  outside(c: GenerationCandidate): void {
    const { x, svc } = this.#req;
    x.failedOver({ provider: c.provider.name, candidate: c.stableId, reason: 'residency', detail: '' });
    svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: 'residency' });
  }

  refuseOutside(rule: ResidencyRule): void {
    this.end(residencyRefusal(`model "${this.#req.request.model}"`, rule));
  }

  noteFailure(r: FailedAttempt, c: GenerationCandidate): void {
    this.#req.x.failedOver({ provider: c.provider.name, candidate: c.stableId, reason: r.reason, detail: r.detail });
    this.#lastFailed = { r, c };
    if (r.answer?.status !== 503) this.#every503 = false;
  }

  movesOn(r: FailedAttempt): boolean {
    return r.reason !== 'status_auth';
  }

  /**
   * The provider refused the gateway's credential. As when its 401 was relayed, the chain
   * stops here: the client hears of it at once, as the gateway's fault, not its own.
   */
  endOnFailure(): void {
    this.#upstreamAnswered('upstream_auth_failed');
  }

  retryPolicy(c: GenerationCandidate): RetryPolicy | null {
    return c.provider.retry;
  }

  retryable(r: FailedAttempt): boolean {
    return isRetryable(r.reason, r.answer?.status);
  }

  retrying(r: FailedAttempt, c: GenerationCandidate): void {
    this.#req.svc.metrics.retries.inc({ provider: c.provider.name, reason: r.reason });
  }

  movedOn(r: FailedAttempt, c: GenerationCandidate): void {
    this.#req.svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: r.reason });
  }

  answered(r: Exclude<RelayResult, FailedAttempt>, c: GenerationCandidate): void {
    const x = this.#req.x;
    x.committed(c);
    if (r.kind === 'aborted') {
      x.clientLeft();
      this.end(null);
      return;
    }
    x.headersArrived(r.headersAt);
    try {
      this.#req.onCommit?.(r, c);
    } catch (err) {
      this.end(err);
      return;
    }
    r.onFinished(this.#onFinished);
  }

  abandoned(): void {
    this.#req.x.clientLeft();
    this.end(null);
  }

  readonly #onFinished = (relayed: Relayed): void => {
    const x = this.#req.x;
    // An error event in the stream, or an event over the bound (relayed.reason): the access line says which.
    x.relayed(relayed, this.#req.usage ?? relayed.usage);
    try {
      this.#req.onRelayed?.(relayed);
    } catch (err) {
      // The answer is the client's already: what runs after it never changes how it ended.
      this.#req.svc.logger.error({ msg: 'a step after the answer failed', error: (err as Error)?.message ?? String(err) });
    }
    this.end(null);
  };

  /**
   * Every candidate failed (or none could be tried): the operation's own answer, when it
   * has one for a route nobody served, or the one error that says so.
   */
  exhausted(attempted: number): void {
    const req = this.#req;
    const x = req.x;
    if (this.stopping()) return this.halt();
    const unable = this.#unable;
    // No candidate could take the request: the client's 400, naming the field.
    if (unable !== null && attempted === 0) return this.end(new Unserved('invalid_request', unable.message, unable.field));
    const last = this.#lastFailed;
    if (last?.r.answer !== undefined) return this.#upstreamAnswered(classCode(last.r.reason) ?? failureCode(tried(x.failures)), Unserved);
    this.end(new Unserved(failureCode(tried(x.failures)), `all ${this.#summary()}`));
  }

  /** `N candidate(s) for model "m" failed (east: HTTP 429; …)`: what every failure was, for the client's error. */
  #summary(): string {
    const req = this.#req;
    // A candidate outside the caller's zones is not the caller's to hear of, nor counted.
    const failures = req.x.failures.filter((f) => f.reason !== 'residency');
    const summary = failures.map((f) => `${f.provider}: ${f.reason === 'unable' ? `cannot take ${f.detail}` : f.detail}`).join('; ');
    return `${req.candidates.length - (req.x.failures.length - failures.length)} candidate(s) for model "${req.request.model}" failed (${summary})`;
  }

  /**
   * The chain ends on an upstream's own HTTP answer (the last candidate's): the client is
   * told its status class, its `retry-after` and its message, after a prefix naming the
   * provider, so a client that backs off on a provider's 429 still can. The body is read as
   * it drains, for at most a short wait (and never past the route's deadline). `As` is
   * Unserved when the chain ran out of candidates, SwitchyardError when it stops early.
   */
  #upstreamAnswered(chosen: ErrorCode, As: typeof SwitchyardError = SwitchyardError): void {
    const { r, c } = this.#lastFailed as { readonly r: FailedAttempt; readonly c: GenerationCandidate };
    const answer = r.answer;
    if (answer === undefined) {
      this.end(new As(chosen, `all ${this.#summary()}`));
      return;
    }
    const req = this.#req;
    const failures = req.x.failures.filter((f) => f.reason !== 'residency');
    // Every candidate answered 503: the client may retry as it would on the provider's own 503.
    const code: ErrorCode = chosen === 'upstream_error' && this.#every503 ? 'upstream_unavailable' : chosen;
    const left = req.deadlineAt === null ? ANSWER_WAIT_MS : Math.max(0, Math.min(ANSWER_WAIT_MS, req.deadlineAt - performance.now()));
    answer.readBody((body) => {
      const credential = c.credential ?? c.provider.credential;
      // An upstream that echoes what it was sent must not pass the key or the token on.
      const secrets = credential === null ? [] : [credential.apiKey()];
      const token = c.credential === null ? c.provider.bearer?.bearer() : null;
      if (token != null) secrets.push(token);
      const said = upstreamMessage(body, secrets);
      const prefix = `provider "${c.provider.name}" answered ${answer.status}`;
      const rest = failures.length > 1 ? ` (all ${this.#summary()})` : '';
      const status = statusOf(code);
      const headers = (status === 429 || status === 503) && answer.retryAfter !== null ? { 'retry-after': answer.retryAfter } : undefined;
      this.end(new As(code, `${said === null ? prefix : `${prefix}: ${said}`}${rest}`, null, headers));
    }, left);
  }

  /** Bills what was served, or gives the reservation back when nothing was; then the request is over. */
  end(err: unknown): void {
    const req = this.#req;
    if (!operations[req.request.operation].metered) {
      this.#done(err);
      return;
    }
    let settled: void | Promise<void>;
    try {
      settled = settle(req.x, req.svc, req.request, req.reservation);
    } catch (settleErr) {
      this.#done(settleErr);
      return;
    }
    if (settled === undefined) this.#done(err);
    else settled.then(() => this.#done(err), this.#done);
  }
}

/** The longest a failing answer's body is waited for, once its status is known. */
const ANSWER_WAIT_MS = 250;

/**
 * Whether the route's deadline has passed, give or take a millisecond: a timer may fire a
 * fraction early, and an attempt with less than that left could not be answered anyway.
 */
function pastDeadline(req: AdmittedRequest): boolean {
  return req.deadlineAt !== null && performance.now() >= req.deadlineAt - 1;
}

/** The route's deadline passed before a candidate answered: 504, naming what was tried. */
function outOfTime(req: AdmittedRequest, candidates: number): SwitchyardError {
  const failures = req.x.failures.filter((f) => f.reason !== 'residency');
  const outside = req.x.failures.length - failures.length;
  const tried = failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  return new SwitchyardError(
    'upstream_timeout',
    `deadline_ms for model "${req.request.model}" passed after ${failures.length} of ${candidates - outside} candidate(s)${tried === '' ? '' : ` (${tried})`}`,
  );
}

/** The failures of candidates that were tried: one that could not take the request, or lay outside the caller's zones, says nothing of the upstreams. */
function tried(failures: readonly Failure[]): readonly Failure[] {
  return failures.some((f) => f.reason === 'unable' || f.reason === 'residency')
    ? failures.filter((f) => f.reason !== 'unable' && f.reason !== 'residency')
    : failures;
}

/**
 * The code of a client-error answer the route failed over on (fallback_on), when the last
 * candidate gave one: the request did not fit any candidate, and that is the client's to
 * hear, as a 400 with the upstream's words, not a gateway fault. Null for any other reason.
 */
function classCode(reason: FailureReason): ErrorCode | null {
  if (reason === 'context_length') return 'context_length_exceeded';
  if (reason === 'content_filter') return 'content_filter';
  return null;
}

/**
 * One status for "every candidate failed": when all failures agree (all timeouts, all
 * 429s, all missing credentials) the client gets that specific answer; a mix is a 502.
 */
function failureCode(failures: readonly Failure[]): ErrorCode {
  const first = failures[0];
  if (first === undefined) return 'upstream_unavailable';
  if (failures.some((f) => f.reason !== first.reason)) return 'upstream_error';
  switch (first.reason) {
    case 'timeout':
      return 'upstream_timeout';
    case 'status_429':
      return 'upstream_rate_limited';
    case 'credential_unavailable':
      return 'credential_unavailable';
    default:
      return 'upstream_error';
  }
}
