// Circuit breakers, one per provider identity (type + base_url), never per name or
// position: renaming a provider keeps its health, re-pointing it starts fresh.

export type BreakerState = 'closed' | 'open' | 'half_open';

/** What a caller may do with a provider right now. */
export type Admission = 'allow' | 'probe' | 'deny';

export interface BreakerOptions {
  readonly failureThreshold: number;
  readonly openBaseMs: number;
  readonly openMaxMs: number;
}

export interface BreakerView {
  readonly identity: string;
  readonly state: BreakerState;
  readonly consecutiveFailures: number;
  readonly opens: number;
  readonly openUntilMs: number | null;
}

/** Why a breaker changed state. */
export type BreakerTransitionReason =
  /** failure_threshold consecutive failures while closed. */
  | 'failure_threshold'
  /** The provider said when to come back (a 429's retry-after). */
  | 'retry_after'
  /** The one request let through while half-open failed. */
  | 'probe_failed'
  /** A request let through while half-open (every candidate was open) failed. */
  | 'failed_while_half_open'
  /** The open window passed and a request arrived: it goes through as the probe. */
  | 'window_elapsed'
  | 'probe_succeeded'
  /** A request let through while open (every candidate was open) succeeded. */
  | 'request_succeeded';

/** A change of state, for the log: breakers change state rarely, so every change is worth a line. */
export interface BreakerTransition {
  readonly identity: string;
  readonly from: BreakerState;
  readonly to: BreakerState;
  readonly reason: BreakerTransitionReason;
  /** The failure that tipped it (`status_5xx`, `timeout`, …), when a failure did. */
  readonly cause: string | null;
  readonly consecutiveFailures: number;
  /** For a change to open: how long it stays open. */
  readonly openForMs: number | null;
}

export type BreakerListener = (t: BreakerTransition) => void;

interface Breaker {
  state: BreakerState;
  consecutiveFailures: number;
  /** Consecutive openings without a close: the exponent of the open window. */
  opens: number;
  openUntilMs: number;
  probeInFlight: boolean;
}

export class BreakerRegistry {
  #options: BreakerOptions;
  readonly #now: () => number;
  readonly #breakers = new Map<string, Breaker>();
  #listener: BreakerListener | null = null;

  constructor(options: BreakerOptions, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
  }

  /** Thresholds are hot-reloadable; they apply from the next transition on. */
  configure(options: BreakerOptions): void {
    this.#options = options;
  }

  /** Called synchronously on every change of state (one listener: the composition root's log). */
  observe(listener: BreakerListener): void {
    this.#listener = listener;
  }

  /**
   * Keeps the breakers of the identities given, creates fresh ones for new identities,
   * and forgets the rest. Called on every generation swap.
   */
  retain(identities: Iterable<string>): void {
    const keep = new Set(identities);
    for (const identity of this.#breakers.keys()) if (!keep.has(identity)) this.#breakers.delete(identity);
    for (const identity of keep) if (!this.#breakers.has(identity)) this.#breakers.set(identity, fresh());
  }

  has(identity: string): boolean {
    return this.#breakers.has(identity);
  }

  /**
   * Half-open lets exactly one probe through: the caller that receives 'probe' must report
   * its outcome (success, failure or release), or the breaker stays half-open.
   * An unknown identity (pruned by a swap while a request was in flight) is allowed.
   */
  admit(identity: string): Admission {
    const b = this.#breakers.get(identity);
    if (b === undefined || b.state === 'closed') return 'allow';
    if (b.state === 'open') {
      if (this.#now() < b.openUntilMs) return 'deny';
      b.state = 'half_open';
      b.probeInFlight = false;
      this.#emit(identity, b, 'open', 'window_elapsed', null, null);
    }
    if (b.probeInFlight) return 'deny';
    b.probeInFlight = true;
    return 'probe';
  }

  recordSuccess(identity: string): void {
    const b = this.#breakers.get(identity);
    // A result for an identity no longer present must not bring its breaker back.
    if (b === undefined) return;
    const from = b.state;
    b.state = 'closed';
    b.consecutiveFailures = 0;
    b.opens = 0;
    b.probeInFlight = false;
    if (from !== 'closed') this.#emit(identity, b, from, from === 'half_open' ? 'probe_succeeded' : 'request_succeeded', null, null);
  }

  /**
   * `holdMs`: the provider said when to come back (a 429's `retry-after`). The breaker then
   * opens at once and stays open at least that long, capped at open_max_ms so that a
   * hostile value cannot retire a provider for days. `cause` names the failure for the log.
   */
  recordFailure(identity: string, wasProbe: boolean, holdMs?: number, cause: string | null = null): void {
    const b = this.#breakers.get(identity);
    if (b === undefined) return;
    const from = b.state;
    if (holdMs !== undefined && holdMs > 0) {
      const heldMs = Math.min(holdMs, this.#options.openMaxMs);
      const until = this.#now() + heldMs;
      const wasOpen = b.state === 'open';
      b.consecutiveFailures += 1;
      if (!wasOpen) b.opens += 1;
      // Never shortens a window the breaker already has.
      b.openUntilMs = wasOpen ? Math.max(b.openUntilMs, until) : until;
      b.state = 'open';
      b.probeInFlight = false;
      if (!wasOpen) this.#emit(identity, b, from, 'retry_after', cause, heldMs);
      return;
    }
    b.consecutiveFailures += 1;
    if (b.state === 'closed') {
      if (b.consecutiveFailures >= this.#options.failureThreshold) {
        this.#emit(identity, b, from, 'failure_threshold', cause, this.#open(b));
      }
    } else if (wasProbe || b.state === 'half_open') {
      // A failed probe re-opens with a doubled window. A failure of a request that was
      // let through because every candidate was open leaves the window as it is.
      const windowMs = this.#open(b);
      if (from !== 'open') this.#emit(identity, b, from, wasProbe ? 'probe_failed' : 'failed_while_half_open', cause, windowMs);
    }
  }

  /** A probe that ended without a verdict (the client went away): let another one through. */
  release(identity: string): void {
    const b = this.#breakers.get(identity);
    if (b !== undefined && b.state === 'half_open') b.probeInFlight = false;
  }

  stateOf(identity: string): BreakerState | undefined {
    const b = this.#breakers.get(identity);
    if (b === undefined) return undefined;
    if (b.state === 'open' && this.#now() >= b.openUntilMs) return 'half_open';
    return b.state;
  }

  /** How long from now the breaker stays open, in ms; 0 when it is not open (or not known). */
  openForMs(identity: string): number {
    const b = this.#breakers.get(identity);
    if (b === undefined || b.state !== 'open') return 0;
    return Math.max(0, b.openUntilMs - this.#now());
  }

  view(identity: string): BreakerView | undefined {
    const b = this.#breakers.get(identity);
    if (b === undefined) return undefined;
    return {
      identity,
      state: this.stateOf(identity) ?? 'closed',
      consecutiveFailures: b.consecutiveFailures,
      opens: b.opens,
      openUntilMs: b.state === 'open' ? b.openUntilMs : null,
    };
  }

  get size(): number {
    return this.#breakers.size;
  }

  #emit(
    identity: string,
    b: Breaker,
    from: BreakerState,
    reason: BreakerTransitionReason,
    cause: string | null,
    openForMs: number | null,
  ): void {
    this.#listener?.({ identity, from, to: b.state, reason, cause, consecutiveFailures: b.consecutiveFailures, openForMs });
  }

  /** Opens the breaker; returns its window. */
  #open(b: Breaker): number {
    b.opens += 1;
    const windowMs = Math.min(this.#options.openBaseMs * 2 ** (b.opens - 1), this.#options.openMaxMs);
    b.state = 'open';
    b.openUntilMs = this.#now() + windowMs;
    b.probeInFlight = false;
    return windowMs;
  }
}

function fresh(): Breaker {
  return { state: 'closed', consecutiveFailures: 0, opens: 0, openUntilMs: 0, probeInFlight: false };
}
