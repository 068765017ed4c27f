import type { RetryPolicy } from '../live/index.js';
import type { StopSlot } from '../providers/index.js';
import { type BreakerRegistry, backoffDelayMs } from '../resilience/index.js';
import { type ResidencyRule, withinResidency } from '../routing/index.js';
import type { AttemptOutcome, ChainCandidate, Skipped } from './attempt.js';

// The one failover loop, for every call kind (a model request, a tool call): the candidates
// in order, skipped while their breaker is open, a second pass when every breaker was open
// (for a kind that wants one), a retry of the same candidate after a transient failure when
// its provider's `retry` allows, and the kind's rule for when a failure may move on to the
// next candidate. Driven by the attempts' callbacks, not by promises: a call answered by its
// first candidate resolves no promise in here (ADR 0019), and a result always comes after
// the attempt has returned, so a chain of skips never deepens the stack. It is also where
// residency holds (ADR 0043): every candidate of every call kind passes here before a byte
// is sent to it, whether first, after a failover or on the second pass.

type Failed<R> = Extract<R, { readonly kind: 'failed' }>;
type Ended<R> = Exclude<R, { readonly kind: 'failed' }>;

/**
 * One call's kind: how a candidate is tried, and what its results mean. The chain decides
 * the order, the skips, the retries and when to move on; the kind records and answers.
 */
export interface CallKind<C extends ChainCandidate, R extends AttemptOutcome> {
  readonly candidates: readonly C[];
  /** The caller's residency rule; null = none (then no candidate is ever outside, and nothing is looked up). */
  readonly residency: ResidencyRule | null;
  /** When the first pass tried nothing (every breaker open), whether the chain is tried again regardless. */
  readonly triesOpenBreakers: boolean;
  readonly breakers: BreakerRegistry;
  readonly random: () => number;
  /** performance.now() by which the call's deadline has passed; null = none. */
  readonly deadlineAt: number | null;
  /** Where a retry's wait is held, so that a leaving client or a stop ends it at once. */
  readonly slot: StopSlot;
  /** Tries one candidate: `done` once, after return. Throws when the call cannot be sent to it at all. */
  attempt(c: C, pass: 0 | 1, done: (r: R | Skipped) => void): void;
  /** Before each try: whether the call must end now (being stopped, out of time). */
  stopping(): boolean;
  /** Ends the call that is stopping, saying why. */
  halt(): void;
  /** Whether the client is gone (a retry's wait is then not followed by the retry). */
  clientGone(): boolean;
  /** An error the attempt threw: true when it says this candidate cannot take the call (the chain skips it). */
  cannotTake(err: unknown, c: C): boolean;
  /** An open breaker skipped `c`. */
  skipped(c: C): void;
  /** `c` lies outside the caller's zones: passed over before anything was sent (listed as `provider:residency`). */
  outside(c: C): void;
  /** Every candidate lay outside the caller's zones, so none was tried: the kind refuses (403 residency_not_allowed). */
  refuseOutside(rule: ResidencyRule): void;
  /** Notes a failed attempt (the record, the books). */
  noteFailure(r: Failed<R>, c: C): void;
  /** The kind's rule: whether a failed attempt may move on (to a retry, or to the next candidate). */
  movesOn(r: Failed<R>, c: C): boolean;
  /** A failure that may not move on: the kind answers with it and ends the call. */
  endOnFailure(r: Failed<R>, c: C): void;
  /** `c`'s provider's `retry`; null = none. */
  retryPolicy(c: C): RetryPolicy | null;
  /** Whether a failure is transient enough to try the same candidate again. */
  retryable(r: Failed<R>): boolean;
  /** A retry of `c` is scheduled (for the metrics). */
  retrying(r: Failed<R>, c: C): void;
  /** The chain moves on from `c` after this failure (for the metrics). */
  movedOn(r: Failed<R>, c: C): void;
  /** The attempt ended with an answer (committed) or with the client leaving (aborted): the kind takes it from here. */
  answered(r: Ended<R>, c: C): void;
  /** No candidate is left: `attempted` counts the tries that were made (not skipped). */
  exhausted(attempted: number): void;
  /** The client left during a retry's wait. */
  abandoned(): void;
  /** Ends the call with an error thrown by an attempt. */
  end(err: unknown): void;
}

/** Runs the chain of `kind` until the kind has answered or ended the call. */
export function runChain<C extends ChainCandidate, R extends AttemptOutcome>(kind: CallKind<C, R>): void {
  new Chain(kind).run();
}

class Chain<C extends ChainCandidate, R extends AttemptOutcome> {
  readonly #kind: CallKind<C, R>;
  #index = 0;
  #pass: 0 | 1 = 0;
  #attempted = 0;
  #current: C | null = null;
  /** The latest failed attempt: the one a retry's wait may turn into a fallback. */
  #lastFailed: Failed<R> | null = null;
  /** The candidates that could not take the call, or lie outside the caller's zones (skipped on the second pass too). */
  #unable: Set<C> | null = null;
  /** How many candidates lay outside the caller's zones. */
  #outside = 0;
  /** Retries of the current candidate so far (its provider's `retry`). */
  #retries = 0;
  /** The wait before the next retry, while one runs. */
  #waiting: NodeJS.Timeout | null = null;

  constructor(kind: CallKind<C, R>) {
    this.#kind = kind;
  }

  /** Tries the next candidate that can be tried; its result comes to #onResult, always after the attempt has returned. */
  run(): void {
    const kind = this.#kind;
    const candidates = kind.candidates;
    if (this.#index >= candidates.length) {
      const rule = kind.residency;
      if (rule !== null && this.#outside > 0 && this.#outside === candidates.length) return kind.refuseOutside(rule);
      const unable = this.#unable?.size ?? 0;
      if (kind.triesOpenBreakers && this.#attempted === 0 && this.#pass === 0 && candidates.length > unable) {
        this.#pass = 1;
        this.#index = 0;
      } else {
        kind.exhausted(this.#attempted);
        return;
      }
    }
    if (kind.stopping()) return kind.halt();
    const c = candidates[this.#index++] as C;
    if (this.#unable?.has(c) === true) return this.run();
    const rule = kind.residency;
    if (rule !== null && !withinResidency(rule, c.zones)) {
      // Before its breaker, its credential or its translation is looked at: nothing reaches it.
      (this.#unable ??= new Set()).add(c);
      this.#outside += 1;
      kind.outside(c);
      return this.run();
    }
    this.#current = c;
    this.#retries = 0;
    this.#send(c);
  }

  #send(c: C): void {
    const kind = this.#kind;
    try {
      kind.attempt(c, this.#pass, this.#onResult);
    } catch (err) {
      if (!kind.cannotTake(err, c)) return kind.end(err);
      (this.#unable ??= new Set()).add(c);
      // Nothing was sent: the next candidate is tried at once (the chain is short, so is the stack).
      this.run();
    }
  }

  readonly #onResult = (r: R | Skipped): void => {
    if (this.#take(r, this.#current as C)) this.run();
  };

  /**
   * Takes one attempt's result; true when the next candidate should be tried. A retry of
   * the same candidate whose breaker is now open is skipped: its retries end there.
   */
  #take(r: R | Skipped, c: C): boolean {
    const kind = this.#kind;
    if (r.kind === 'skipped') {
      kind.skipped(c);
      return true;
    }
    this.#attempted += 1;
    if (r.kind !== 'failed') {
      kind.answered(r as Ended<R>, c);
      return false;
    }
    const failed = r as Failed<R>;
    this.#lastFailed = failed;
    kind.noteFailure(failed, c);
    if (!kind.movesOn(failed, c)) {
      kind.endOnFailure(failed, c);
      return false;
    }
    if (this.#retryLater(failed, c)) return false;
    kind.movedOn(failed, c);
    return true;
  }

  /**
   * Schedules another try of `c` after a transient failure, when its provider's `retry`
   * has one left and it can still help: the client is still there, the call is not being
   * stopped, the breaker will be closed or half-open when the wait ends, and the wait ends
   * before the deadline. Not on the second pass: every breaker was open, and one try each
   * is all that pass is for. The wait is the backoff, or the provider's own `retry-after`
   * (a 429's or 503's) when it gave one: that is honoured only up to max_backoff_ms, and a
   * longer one moves on at once rather than retry sooner than asked. True when scheduled.
   */
  #retryLater(r: Failed<R>, c: C): boolean {
    const kind = this.#kind;
    const policy = kind.retryPolicy(c);
    if (policy === null || this.#retries >= policy.attempts || this.#pass === 1) return false;
    if (!kind.retryable(r)) return false;
    if (kind.clientGone() || kind.stopping()) return false;
    let waitMs: number;
    if (r.retryAfterMs !== undefined) {
      if (r.retryAfterMs > policy.maxBackoffMs) return false;
      waitMs = r.retryAfterMs;
    } else {
      waitMs = backoffDelayMs(this.#retries, policy.backoffMs, policy.maxBackoffMs, kind.random);
    }
    if (kind.deadlineAt !== null && performance.now() + waitMs >= kind.deadlineAt - 1) return false;
    // A breaker that this failure opened (or a 429's retry-after holds open) past the wait
    // would skip the retry: move on now. One that opens for no longer (a retry-after's hold)
    // lets the retry through as its probe.
    if (kind.breakers.openForMs(c.identity) > waitMs) return false;
    this.#retries += 1;
    kind.retrying(r, c);
    this.#wait(c, waitMs);
    return true;
  }

  /**
   * Waits `ms`, then tries `c` again. The wait holds the running attempt's slot, so a client
   * that leaves or the drain's stop ends it at once instead of when the timer fires.
   */
  #wait(c: C, ms: number): void {
    const slot = this.#kind.slot;
    const wake = (): void => {
      if (this.#waiting === null) return;
      clearTimeout(this.#waiting);
      this.#waiting = null;
      if (slot.stopAttempt === wake) slot.stopAttempt = null;
      if (slot.clientClosed === wake) slot.clientClosed = null;
      this.#retryNow(c);
    };
    this.#waiting = setTimeout(wake, ms);
    // The listener's socket keeps the process up while a call waits; the timer need not.
    this.#waiting.unref();
    slot.stopAttempt = wake;
    slot.clientClosed = wake;
  }

  /** The wait is over: try `c` again, unless the client left, the call is being stopped or time ran out. */
  #retryNow(c: C): void {
    const kind = this.#kind;
    if (kind.clientGone()) {
      kind.abandoned();
      return;
    }
    if (kind.stopping()) {
      // The failure that was to be retried stands as a fallback; run() ends the chain saying why.
      kind.movedOn(this.#lastFailed as Failed<R>, c);
      this.run();
      return;
    }
    this.#send(c);
  }
}
