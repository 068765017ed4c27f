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

  constructor(options: BreakerOptions, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
  }

  /** Thresholds are hot-reloadable; they apply from the next transition on. */
  configure(options: BreakerOptions): void {
    this.#options = options;
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
    }
    if (b.probeInFlight) return 'deny';
    b.probeInFlight = true;
    return 'probe';
  }

  recordSuccess(identity: string): void {
    const b = this.#breakers.get(identity);
    // A result for an identity no longer present must not bring its breaker back.
    if (b === undefined) return;
    b.state = 'closed';
    b.consecutiveFailures = 0;
    b.opens = 0;
    b.probeInFlight = false;
  }

  /**
   * `holdMs`: the provider said when to come back (a 429's `retry-after`). The breaker then
   * opens at once and stays open at least that long, capped at open_max_ms so that a
   * hostile value cannot retire a provider for days.
   */
  recordFailure(identity: string, wasProbe: boolean, holdMs?: number): void {
    const b = this.#breakers.get(identity);
    if (b === undefined) return;
    if (holdMs !== undefined && holdMs > 0) {
      const until = this.#now() + Math.min(holdMs, this.#options.openMaxMs);
      const wasOpen = b.state === 'open';
      b.consecutiveFailures += 1;
      if (!wasOpen) b.opens += 1;
      // Never shortens a window the breaker already has.
      b.openUntilMs = wasOpen ? Math.max(b.openUntilMs, until) : until;
      b.state = 'open';
      b.probeInFlight = false;
      return;
    }
    b.consecutiveFailures += 1;
    if (b.state === 'closed') {
      if (b.consecutiveFailures >= this.#options.failureThreshold) this.#open(b);
    } else if (wasProbe || b.state === 'half_open') {
      // A failed probe re-opens with a doubled window. A failure of a request that was
      // let through because every candidate was open leaves the window as it is.
      this.#open(b);
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

  #open(b: Breaker): void {
    b.opens += 1;
    const windowMs = Math.min(this.#options.openBaseMs * 2 ** (b.opens - 1), this.#options.openMaxMs);
    b.state = 'open';
    b.openUntilMs = this.#now() + windowMs;
    b.probeInFlight = false;
  }
}

function fresh(): Breaker {
  return { state: 'closed', consecutiveFailures: 0, opens: 0, openUntilMs: 0, probeInFlight: false };
}
