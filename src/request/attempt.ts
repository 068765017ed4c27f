import type { GenerationCandidate } from '../live/index.js';
import type { RelayResult } from '../providers/index.js';
import { type BreakerRegistry, type FallbackClass, isAnswerClass } from '../resilience/index.js';
import type { Exchange, ModelRequest } from './exchange.js';

// One attempt at one candidate, as a small core (send-to-candidate.ts: send it through the
// provider's pool and relay the answer) with behaviour wrapped around it, composed once at
// start-up: the credential check and the breaker's admission and bookkeeping (here), and
// tracing (attempt-tracing.ts). Like undici's
// interceptors, an attempt takes a callback rather than returning a promise (the request
// path resolves no promise per attempt), and like undici's handlers the callback is never
// called before the attempt function has returned. The failover loop in serve-chain.ts
// only sees the result.

/** A request routed and admitted: what every attempt at its candidates shares. */
export interface AdmittedRequest {
  readonly x: Exchange;
  readonly request: ModelRequest;
  /** The gateway limits' headers for the response (`x-ratelimit-*`, the budget warning), as names and values in turn; null = none. */
  readonly limitHeaders: readonly string[] | null;
  /** performance.now() by which the route's deadline_ms has passed, across every attempt; null = none. */
  readonly deadlineAt: number | null;
  /** The route's `fallback_on`: the client-error answers that move on to the next candidate; null = none. */
  readonly fallbackOn: readonly FallbackClass[] | null;
  /** The output cap the pre-check reserved for, to send upstream; null = send none (the client's own, if any, stands). */
  readonly outputCap: number | null;
  /** Called with each response id an answer carries and the candidate that made it (the Responses API). */
  readonly onResponseId: ((responseId: string, c: GenerationCandidate) => void) | null;
}

export interface AttemptRequest {
  readonly admitted: AdmittedRequest;
  readonly candidate: GenerationCandidate;
  /** 0: the breakers decide; 1: every breaker was open, so the chain is tried regardless. */
  readonly pass: 0 | 1;
  /** This attempt's `traceparent` (and `tracestate`) for the upstream request, from its span; null = none. */
  readonly trace: Readonly<Record<string, string>> | null;
}

export type AttemptResult = RelayResult | Skipped;
/** Called exactly once per attempt, and never before the attempt function has returned. */
export type AttemptCallback = (r: AttemptResult) => void;
/**
 * Tries one candidate and reports how it ended through `done`. A request that cannot be
 * sent to this candidate (it cannot be translated to its protocol) throws before anything
 * is sent, and `done` is then not called.
 */
export type Attempt = CallAttempt<AttemptRequest, RelayResult>;
export type Wrap = CallWrap<AttemptRequest, RelayResult>;

// The same shapes for any call kind (a model request, a tool call): the chain and the
// wraps below see only what every kind's attempt has in common.

/** What every call kind's candidate has: the breaker's key, its id for the record, and whether its credential could be read. */
export interface ChainCandidate {
  readonly identity: string;
  /** Its provider's zones (the residency filter's input); null = unlabelled. */
  readonly zones: ReadonlySet<string> | null;
  readonly stableId: string;
  readonly providerName: string;
  readonly credentialProblem: string | null;
}

/** What every call kind's attempt is asked with. */
export interface AttemptOf<C extends ChainCandidate> {
  readonly candidate: C;
  /** 0: the breakers decide; 1: every breaker was open, so the chain is tried regardless. */
  readonly pass: 0 | 1;
}

/** The breaker skipped the candidate: nothing was sent. */
export interface Skipped {
  readonly kind: 'skipped';
}

/**
 * How any attempt ends: failed before anything reached the client (with a reason the breaker
 * and the retry read), aborted by the client, or committed (its answer is the client's), with
 * its end told later.
 */
export type AttemptOutcome =
  | { readonly kind: 'failed'; readonly reason: string; readonly detail: string; readonly retryAfterMs?: number }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'committed'; onFinished(cb: (f: { readonly outcome: 'complete' | 'partial' | 'aborted' }) => void): void };

/** One attempt of a call kind: `done` is called exactly once, and never before the attempt has returned. */
export type CallAttempt<Q, R> = (a: Q, done: (r: R | Skipped) => void) => void;
export type CallWrap<Q, R> = (next: CallAttempt<Q, R>) => CallAttempt<Q, R>;

const SKIPPED: Skipped = Object.freeze({ kind: 'skipped' as const });

/** Reports a result known at once, after the attempt function has returned. */
function later<R>(done: (r: R) => void, r: R): void {
  queueMicrotask(() => done(r));
}

/**
 * An overlay candidate whose credential could not be read fails over without calling
 * upstream. It is outside the breaker: a missing secret says nothing of the provider.
 * `unavailable` is the kind's failure saying so.
 */
export const credentialCheck =
  <Q extends AttemptOf<ChainCandidate>, R>(unavailable: (detail: string) => R): CallWrap<Q, R> =>
  (next) =>
  (a, done) => {
    const problem = a.candidate.credentialProblem;
    if (problem === null) next(a, done);
    else later(done, unavailable(problem));
  };

export const withCredentialCheck: Wrap = credentialCheck<AttemptRequest, RelayResult>((detail) => ({
  kind: 'failed',
  reason: 'credential_unavailable',
  detail,
}));

/**
 * A provider without a valid cloud credential (an Entra ID or Google Cloud token, AWS keys:
 * the authority is down or refuses it) fails over without calling upstream. Unlike a missing
 * secret this is inside the breaker: the provider cannot be served, and its source keeps
 * retrying off the request path, so no request ever waits on the authority.
 */
export const withProviderToken: Wrap = (next) => (a, done) => {
  const p = a.candidate.provider;
  const source = p.bearer ?? p.signer?.keys ?? null;
  // An overlay candidate's own key stands in for the provider's bearer token.
  if (source === null || (p.bearer !== null && a.candidate.credential !== null) || source.current() !== null) next(a, done);
  else later(done, { kind: 'failed', reason: 'credential_unavailable', detail: `provider ${p.name}: ${source.problem()}` });
};

/**
 * The breaker of the candidate's provider identity: an open breaker skips the candidate
 * (on the first pass), a half-open one lets exactly one probe through. The outcome is
 * recorded when it is known: a failure before the first byte (but a fallback_on class is
 * the provider's sound answer, so a success); success when a probe's
 * response commits (so a long stream does not hold the probe) and when any other response
 * has ended whole; a failure when a stream is cut after it began. A probe whose client left
 * is released for another.
 */
export const withBreaker =
  (breakers: BreakerRegistry) =>
  <Q extends AttemptOf<ChainCandidate>, R extends AttemptOutcome>(next: CallAttempt<Q, R>): CallAttempt<Q, R> =>
  (a, done) => {
    const identity = a.candidate.identity;
    let probe = false;
    if (a.pass === 0) {
      const admission = breakers.admit(identity);
      if (admission === 'deny') {
        later(done, SKIPPED);
        return;
      }
      probe = admission === 'probe';
    }
    try {
      next(a, (r) => {
        if (r.kind === 'failed') {
          // A prompt too long or a filtered request (fallback_on) is an answer, as a relayed
          // 400 is: the provider is healthy. Only a 429's retry-after holds the breaker open;
          // a 503's is for the retry of this request alone.
          if (isAnswerClass(r.reason)) breakers.recordSuccess(identity);
          else breakers.recordFailure(identity, probe, r.reason === 'status_429' ? r.retryAfterMs : undefined, r.reason);
        } else if (r.kind === 'aborted') {
          if (probe) breakers.release(identity);
        } else if (r.kind === 'committed') {
          // A probe succeeds when it commits, so a long stream does not hold the probe;
          // any other response when it has ended whole, so that streams cut one after
          // another add up to the threshold instead of each being forgiven at its start.
          if (probe) breakers.recordSuccess(identity);
          r.onFinished((f) => {
            if (f.outcome === 'partial') breakers.recordFailure(identity, false, undefined, 'stream_cut');
            else if (!probe && f.outcome === 'complete') breakers.recordSuccess(identity);
          });
        }
        done(r);
      });
    } catch (err) {
      // Refused before anything was sent (a request that cannot be translated): the probe is someone else's.
      if (probe) breakers.release(identity);
      throw err;
    }
  };

/** Wraps the core in the given order: the first wrap is the outermost. */
export function composeAttempt<Q, R>(core: CallAttempt<Q, R>, ...wraps: readonly CallWrap<Q, R>[]): CallAttempt<Q, R> {
  return wraps.reduceRight<CallAttempt<Q, R>>((next, wrap) => wrap(next), core);
}
