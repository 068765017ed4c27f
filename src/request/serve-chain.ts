import { type ErrorCode, SwitchyardError, statusOf } from '../errors.js';
import type { Reservation } from '../governance/index.js';
import type { GenerationCandidate } from '../live/index.js';
import { type Committed, type FailedAttempt, type Relayed, type TokenUsage, upstreamMessage } from '../providers/index.js';
import { backoffDelayMs, type FailureReason, isRetryable } from '../resilience/index.js';
import { settle } from './admission.js';
import type { AdmittedRequest, Attempt, AttemptResult } from './attempt.js';
import type { Failure } from './exchange.js';
import { CandidateUnable, operations } from './operations.js';
import type { Services } from './services.js';

// The end of every model request's path, once its chain is chosen and admitted: the
// failover loop over the chain, the relay of the answer that commits, and the one settle.
// Driven by the attempts' callbacks, not by promises: a request that is answered by its
// first candidate resolves no promise between its body and its record (ADR 0019). A
// provider with `retry` is tried again after a transient failure, after a timer, before
// the chain moves on (ADR 0028).

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
  new Failover(req, done).run();
}

class Failover {
  readonly #req: ChainRequest;
  readonly #done: ServeCallback;
  #index = 0;
  #pass: 0 | 1 = 0;
  #attempted = 0;
  #current: GenerationCandidate | null = null;
  /** The latest failed attempt and its candidate: its own answer, if it was one, is what the client is told. */
  #lastFailed: { readonly r: FailedAttempt; readonly c: GenerationCandidate } | null = null;
  /** Whether every candidate that failed answered 503 (so far). */
  #every503 = true;
  /** The first candidate that could not take the request, and the candidates that could not (skipped on the second pass). */
  #unable: CandidateUnable | null = null;
  #unableSet: Set<GenerationCandidate> | null = null;
  /** Retries of the current candidate so far (its provider's `retry`). */
  #retries = 0;
  /** The wait before the next retry, while one runs. */
  #waiting: NodeJS.Timeout | null = null;

  constructor(req: ChainRequest, done: ServeCallback) {
    this.#req = req;
    this.#done = done;
  }

  /**
   * Tries the next candidate that can be tried; its result comes to #onResult, always after
   * the attempt has returned (so a chain of skips never deepens the stack).
   */
  run(): void {
    const req = this.#req;
    const { x, candidates } = req;
    if (this.#index >= candidates.length) {
      const unable = this.#unableSet?.size ?? 0;
      if (this.#attempted === 0 && this.#pass === 0 && candidates.length > unable) {
        this.#pass = 1;
        this.#index = 0;
      } else {
        this.#exhausted();
        return;
      }
    }
    if (pastDeadline(req)) {
      this.#end(outOfTime(req, candidates.length));
      return;
    }
    if (x.stopped !== null) {
      this.#end(new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`));
      return;
    }
    const c = candidates[this.#index++] as GenerationCandidate;
    if (this.#unableSet?.has(c) === true) return this.run();
    this.#current = c;
    this.#retries = 0;
    this.#send(c);
  }

  #send(c: GenerationCandidate): void {
    const req = this.#req;
    try {
      req.attempt({ admitted: req, candidate: c, pass: this.#pass, trace: null }, this.#onResult);
    } catch (err) {
      if (!(err instanceof CandidateUnable)) return this.#end(err);
      this.#cannotTake(err, c);
      // Nothing was sent: the next candidate is tried at once (the chain is short, so is the stack).
      this.run();
    }
  }

  /** The candidate cannot take the request: skipped like an open breaker, and listed as `provider:unable:field`. */
  #cannotTake(err: CandidateUnable, c: GenerationCandidate): void {
    this.#unable ??= err;
    (this.#unableSet ??= new Set()).add(c);
    const { x, svc } = this.#req;
    x.failedOver({ provider: c.provider.name, candidate: c.stableId, reason: 'unable', detail: err.field });
    svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: 'unable' });
  }

  readonly #onResult = (r: AttemptResult): void => {
    if (this.#take(r, this.#current as GenerationCandidate)) this.run();
  };

  /**
   * Takes one attempt's result; true when the next candidate should be tried. A retry of
   * the same candidate whose breaker is now open is skipped: its retries end there.
   */
  #take(r: AttemptResult, c: GenerationCandidate): boolean {
    if (r.kind === 'skipped') return true;
    this.#attempted += 1;
    const { x, svc } = this.#req;
    if (r.kind === 'failed') {
      x.failedOver({ provider: c.provider.name, candidate: c.stableId, reason: r.reason, detail: r.detail });
      this.#lastFailed = { r, c };
      if (r.answer?.status !== 503) this.#every503 = false;
      if (r.reason === 'status_auth') {
        // The provider refused the gateway's credential. As when its 401 was relayed, the
        // chain stops here: the client hears of it at once, as the gateway's fault, not its own.
        this.#upstreamAnswered('upstream_auth_failed');
        return false;
      }
      if (c.provider.retry !== null && this.#retryLater(r, c)) return false;
      svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: r.reason });
      return true;
    }
    x.committed(c);
    if (r.kind === 'aborted') {
      x.clientLeft();
      this.#end(null);
      return false;
    }
    x.headersArrived(r.headersAt);
    try {
      this.#req.onCommit?.(r, c);
    } catch (err) {
      this.#end(err);
      return false;
    }
    r.onFinished(this.#onFinished);
    return false;
  }

  /**
   * Schedules another try of `c` after a transient failure, when its provider's `retry`
   * has one left and it can still help: nothing reached the client (a failure never did),
   * the client is still there, the gateway is not stopping it, the breaker will be closed
   * or half-open when the wait ends, and the wait ends before the route's deadline. Not on
   * the second pass: every breaker was open, and one try each is all that pass is for. The
   * wait is the backoff, or the provider's own `retry-after` (a 429's or 503's) when it
   * gave one: that is honoured only up to max_backoff_ms, and a longer one moves on at
   * once rather than retry sooner than asked. True when a retry is scheduled.
   */
  #retryLater(r: FailedAttempt, c: GenerationCandidate): boolean {
    const policy = c.provider.retry;
    if (policy === null || this.#retries >= policy.attempts || this.#pass === 1) return false;
    if (!isRetryable(r.reason, r.answer?.status)) return false;
    const req = this.#req;
    const { x, svc } = req;
    if (x.stopped !== null || x.res.destroyed) return false;
    let waitMs: number;
    if (r.retryAfterMs !== undefined) {
      if (r.retryAfterMs > policy.maxBackoffMs) return false;
      waitMs = r.retryAfterMs;
    } else {
      waitMs = backoffDelayMs(this.#retries, policy.backoffMs, policy.maxBackoffMs, svc.random);
    }
    if (req.deadlineAt !== null && performance.now() + waitMs >= req.deadlineAt - 1) return false;
    // A breaker that this failure opened (or a 429's retry-after holds open) past the wait
    // would skip the retry: move on now. One that opens for no longer (a retry-after's hold)
    // lets the retry through as its probe.
    if (svc.breakers.openForMs(c.identity) > waitMs) return false;
    this.#retries += 1;
    svc.metrics.retries.inc({ provider: c.provider.name, reason: r.reason });
    this.#wait(c, waitMs);
    return true;
  }

  /**
   * Waits `ms`, then tries `c` again. The wait holds the running attempt's slot, so a client
   * that leaves or the drain's stop ends it at once instead of when the timer fires.
   */
  #wait(c: GenerationCandidate, ms: number): void {
    const slot = this.#req.x.running;
    const wake = (): void => {
      if (this.#waiting === null) return;
      clearTimeout(this.#waiting);
      this.#waiting = null;
      if (slot.stopAttempt === wake) slot.stopAttempt = null;
      if (slot.clientClosed === wake) slot.clientClosed = null;
      this.#retryNow(c);
    };
    this.#waiting = setTimeout(wake, ms);
    // The listener's socket keeps the process up while a request waits; the timer need not.
    this.#waiting.unref();
    slot.stopAttempt = wake;
    slot.clientClosed = wake;
  }

  /** The wait is over: try `c` again, unless the client left, the gateway stopped it or time ran out. */
  #retryNow(c: GenerationCandidate): void {
    const req = this.#req;
    const x = req.x;
    if (x.res.destroyed) {
      x.clientLeft();
      this.#end(null);
      return;
    }
    if (x.stopped !== null || pastDeadline(req)) {
      // The failure that was to be retried stands as a fallback; run() ends the chain saying why.
      const reason = this.#lastFailed?.r.reason as FailureReason;
      req.svc.metrics.fallbacks.inc({ provider: c.provider.name, reason });
      this.run();
      return;
    }
    this.#send(c);
  }

  readonly #onFinished = (relayed: Relayed): void => {
    const x = this.#req.x;
    // An error event in the stream, or an event over the bound (relayed.reason): the access line says which.
    x.relayed(relayed, this.#req.usage ?? relayed.usage);
    this.#end(null);
  };

  /**
   * Every candidate failed (or none could be tried): the operation's own answer, when it
   * has one for a route nobody served, or the one error that says so.
   */
  #exhausted(): void {
    const req = this.#req;
    const x = req.x;
    if (pastDeadline(req)) return this.#end(outOfTime(req, req.candidates.length));
    if (x.stopped !== null) return this.#end(new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`));
    const unable = this.#unable;
    // No candidate could take the request: the client's 400, naming the field.
    if (unable !== null && this.#attempted === 0) return this.#end(new Unserved('invalid_request', unable.message, unable.field));
    const last = this.#lastFailed;
    if (last?.r.answer !== undefined) return this.#upstreamAnswered(classCode(last.r.reason) ?? failureCode(tried(x.failures)), Unserved);
    this.#end(new Unserved(failureCode(tried(x.failures)), `all ${this.#summary()}`));
  }

  /** `N candidate(s) for model "m" failed (east: HTTP 429; …)`: what every failure was, for the client's error. */
  #summary(): string {
    const req = this.#req;
    const summary = req.x.failures.map((f) => `${f.provider}: ${f.reason === 'unable' ? `cannot take ${f.detail}` : f.detail}`).join('; ');
    return `${req.candidates.length} candidate(s) for model "${req.request.model}" failed (${summary})`;
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
      this.#end(new As(chosen, `all ${this.#summary()}`));
      return;
    }
    const req = this.#req;
    const failures = req.x.failures;
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
      this.#end(new As(code, `${said === null ? prefix : `${prefix}: ${said}`}${rest}`, null, headers));
    }, left);
  }

  /** Bills what was served, or gives the reservation back when nothing was; then the request is over. */
  #end(err: unknown): void {
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
  const x = req.x;
  const tried = x.failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  return new SwitchyardError(
    'upstream_timeout',
    `deadline_ms for model "${req.request.model}" passed after ${x.failures.length} of ${candidates} candidate(s)${tried === '' ? '' : ` (${tried})`}`,
  );
}

/** The failures of candidates that were tried: one that could not take the request says nothing of the upstreams. */
function tried(failures: readonly Failure[]): readonly Failure[] {
  return failures.some((f) => f.reason === 'unable') ? failures.filter((f) => f.reason !== 'unable') : failures;
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
