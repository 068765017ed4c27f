import type { SwitchyardError } from '../errors.js';
import type { GenerationCandidate } from '../live/index.js';
import type { Attempt } from './attempt.js';
import type { Exchange, ModelRequest } from './exchange.js';
import type { ChainRequest, ServeCallback } from './serve-chain.js';
import type { Services } from './services.js';

// A request-level stage: the same shape as an attempt's wrap (attempt.ts), one level up.
// A stage gets the request once it is admitted and routed, before the pre-check, and
// either answers it itself (writes the response and calls `done`: a cached answer, a
// refusal, an estimate), or calls `next` and may observe or replace what comes back. The
// stages of each endpoint kind are a table (stages.ts); a new one is a file and a line
// there, never a branch in serve-model.ts.

/** A request admitted and routed: what every stage, the pre-check and the chain share. */
export interface RoutedRequest {
  readonly x: Exchange;
  readonly request: ModelRequest;
  readonly svc: Services;
  /** The candidates that serve the operation, in the order to try them; empty when none of the route's does. */
  readonly candidates: readonly GenerationCandidate[];
  /** What the client is told when `candidates` is empty and no stage answers; null while there are candidates. */
  readonly unserved: SwitchyardError | null;
  /** The attempt the chain tries each candidate with (behind the breaker or not, per the operation). */
  readonly attempt: Attempt;
  readonly onCommit: ChainRequest['onCommit'];
}

/**
 * Serves a routed request and calls `done` once: with null when the response was written
 * (or the client left), or with the error its client must be answered with. An error may
 * be an `Unserved` (serve-chain.ts): every candidate failed, and a stage may answer instead.
 */
export type Serve = (r: RoutedRequest, done: ServeCallback) => void;
export type Stage = (next: Serve) => Serve;

/**
 * The stages around `core`, the first the outermost. Each stage's `done` is held to the
 * attempts' discipline: it never fires before the stage function has returned (a stage
 * that answers at once is heard a microtask later), and a `next` that throws is heard by
 * the stage as its callback, after `next` has returned. With no stages, `core` itself.
 */
export function composeStages(core: Serve, stages: readonly Stage[]): Serve {
  return stages.reduceRight<Serve>((next, stage) => disciplined(stage(reported(next))), core);
}

/** `next`, with a throw reported to its callback once it has returned (as an attempt's refusal is not, since a stage may call `next` from a callback). */
function reported(next: Serve): Serve {
  return (r, done) => {
    try {
      next(r, done);
    } catch (err) {
      queueMicrotask(() => done(err));
    }
  };
}

/** `serve`, whose callback is deferred to a microtask when it fires before `serve` has returned. */
function disciplined(serve: Serve): Serve {
  return (r, done) => {
    let returned = false;
    let early = false;
    let earlyErr: unknown = null;
    serve(r, (err) => {
      if (returned) done(err);
      else {
        early = true;
        earlyErr = err;
      }
    });
    returned = true;
    if (early) queueMicrotask(() => done(earlyErr));
  };
}
