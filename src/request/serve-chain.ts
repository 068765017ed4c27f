import { type ErrorCode, SwitchyardError } from '../errors.js';
import type { GenerationCandidate } from '../live/index.js';
import type { Committed, Relayed, TokenUsage } from '../providers/index.js';
import { settle } from './admission.js';
import type { Attempt, AttemptResult } from './attempt.js';
import type { Exchange, Failure } from './exchange.js';
import type { Services } from './services.js';

// The end of every model request's path, once its chain is chosen and admitted: the
// failover loop over the chain, the relay of the answer that commits, and the one settle.
// Driven by the attempts' callbacks, not by promises: a request that is answered by its
// first candidate resolves no promise between its body and its record (ADR 0019).

export interface ServeOptions {
  /** Runs when a candidate's response commits, before its body is relayed. */
  readonly onCommit?: (committed: Committed) => void;
  /** Bill this usage whatever the response says (a stored response's read costs no tokens). */
  readonly usage?: TokenUsage;
}

export interface ChainBody {
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
}

/** Called once when the request is over: with null, or with the error its client must be answered with. */
export type ServeCallback = (err: unknown) => void;

/**
 * Tries the chain, relays the committed answer, and settles, once, whatever happened; then
 * calls `done`. The first pass skips candidates whose breaker is open; when every breaker
 * was open the chain is tried anyway, in order: failing fast would turn a provider blip
 * into an outage.
 */
export function serveChain(
  x: Exchange,
  svc: Services,
  chain: readonly GenerationCandidate[],
  body: ChainBody,
  attempt: Attempt,
  options: ServeOptions,
  done: ServeCallback,
): void {
  new Failover(x, svc, chain, body, attempt, options, done).run();
}

/** serveChain for callers that await: resolves when the request is over, rejects with its error. */
export function serveChainAsync(
  x: Exchange,
  svc: Services,
  chain: readonly GenerationCandidate[],
  body: ChainBody,
  attempt: Attempt,
  options: ServeOptions = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    serveChain(x, svc, chain, body, attempt, options, (err) => (err === null ? resolve() : reject(err)));
  });
}

class Failover {
  readonly #x: Exchange;
  readonly #svc: Services;
  readonly #chain: readonly GenerationCandidate[];
  readonly #body: ChainBody;
  readonly #attempt: Attempt;
  readonly #options: ServeOptions;
  readonly #done: ServeCallback;
  #index = 0;
  #pass: 0 | 1 = 0;
  #attempted = 0;
  #current: GenerationCandidate | null = null;
  /** True while an attempt function runs: a result reported then is taken by the loop itself. */
  #inAttempt = false;
  #early: AttemptResult | null = null;

  constructor(
    x: Exchange,
    svc: Services,
    chain: readonly GenerationCandidate[],
    body: ChainBody,
    attempt: Attempt,
    options: ServeOptions,
    done: ServeCallback,
  ) {
    this.#x = x;
    this.#svc = svc;
    this.#chain = chain;
    this.#body = body;
    this.#attempt = attempt;
    this.#options = options;
    this.#done = done;
  }

  /**
   * Tries candidates until one commits or the chain runs out. An attempt that ends before
   * its function returns (skipped, refused at once) is taken here, in the loop, so a long
   * chain of skips never deepens the stack.
   */
  readonly run = (): void => {
    const x = this.#x;
    const chain = this.#chain;
    for (;;) {
      if (this.#index >= chain.length) {
        if (this.#attempted > 0 || this.#pass === 1) {
          this.#end(this.#exhausted());
          return;
        }
        this.#pass = 1;
        this.#index = 0;
        continue;
      }
      if (pastDeadline(x)) {
        this.#end(outOfTime(x, chain.length));
        return;
      }
      if (x.stopped !== null) {
        this.#end(new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`));
        return;
      }
      const c = chain[this.#index++] as GenerationCandidate;
      this.#current = c;
      this.#inAttempt = true;
      try {
        this.#attempt({ x, raw: this.#body.raw, parsed: this.#body.parsed, candidate: c, pass: this.#pass }, this.#onResult);
      } catch (err) {
        this.#inAttempt = false;
        this.#end(err);
        return;
      }
      this.#inAttempt = false;
      const early = this.#early;
      if (early === null) return;
      this.#early = null;
      if (!this.#take(early, c)) return;
    }
  };

  readonly #onResult = (r: AttemptResult): void => {
    if (this.#inAttempt) {
      this.#early = r;
      return;
    }
    // From undici's callbacks: the next candidate is tried once they have returned.
    if (this.#take(r, this.#current as GenerationCandidate)) queueMicrotask(this.run);
  };

  /** Takes one attempt's result; true when the next candidate should be tried. */
  #take(r: AttemptResult, c: GenerationCandidate): boolean {
    if (r.kind === 'skipped') return true;
    this.#attempted += 1;
    const x = this.#x;
    if (r.kind === 'failed') {
      x.failures.push({ provider: c.provider.name, candidate: c.stableId, reason: r.reason, detail: r.detail });
      this.#svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: r.reason });
      return true;
    }
    x.candidate = c;
    if (r.kind === 'aborted') {
      x.outcome = 'aborted';
      this.#end(null);
      return false;
    }
    x.headersAt = r.headersAt;
    try {
      this.#options.onCommit?.(r);
    } catch (err) {
      this.#end(err);
      return false;
    }
    r.onFinished(this.#onFinished);
    return false;
  }

  readonly #onFinished = (relayed: Relayed): void => {
    const x = this.#x;
    x.outcome = relayed.outcome;
    x.firstByteAt = relayed.firstByteAt;
    x.usage = this.#options.usage ?? relayed.usage;
    x.events = relayed.events;
    this.#end(null);
  };

  /** Every candidate failed (or none could be tried): the one error that says so. */
  #exhausted(): SwitchyardError {
    const x = this.#x;
    if (pastDeadline(x)) return outOfTime(x, this.#chain.length);
    if (x.stopped !== null) return new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`);
    const summary = x.failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
    return new SwitchyardError(
      failureCode(x.failures),
      `all ${this.#chain.length} candidate(s) for model "${x.model}" failed (${summary})`,
    );
  }

  /** Bills what was served, or gives the reservation back when nothing was; then the request is over. */
  #end(err: unknown): void {
    let settled: void | Promise<void>;
    try {
      settled = settle(this.#x, this.#svc);
    } catch (settleErr) {
      this.#done(settleErr);
      return;
    }
    if (settled === undefined) this.#done(err);
    else settled.then(() => this.#done(err), this.#done);
  }
}

/**
 * Whether the route's deadline has passed, give or take a millisecond: a timer may fire a
 * fraction early, and an attempt with less than that left could not be answered anyway.
 */
function pastDeadline(x: Exchange): boolean {
  return x.deadlineAt !== null && performance.now() >= x.deadlineAt - 1;
}

/** The route's deadline passed before a candidate answered: 504, naming what was tried. */
function outOfTime(x: Exchange, candidates: number): SwitchyardError {
  const tried = x.failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  return new SwitchyardError(
    'upstream_timeout',
    `deadline_ms for model "${x.model}" passed after ${x.failures.length} of ${candidates} candidate(s)${tried === '' ? '' : ` (${tried})`}`,
  );
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
