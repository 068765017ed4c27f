// The last 15 minutes of API traffic in 10-second slots, for the status page: requests,
// errors and a latency histogram per slot, and per model which candidates served and which
// providers failed. A ring of 90 slots reused in place: recording a request is a few
// increments and two Map lookups, with no allocation except for a model, candidate or
// provider new to the slot. Prometheus keeps the long history; this is only "right now".

export const SLOT_MS = 10_000;
export const SLOTS = 90;

/** Latency buckets: the upper bound of bucket i is GROWTH^i ms (bucket 0: up to 1 ms), the last one open-ended. */
const GROWTH = 1.25;
const LOG_GROWTH = Math.log(GROWTH);
const LATENCY_BUCKETS = Math.ceil(Math.log(300_000) / LOG_GROWTH) + 1;

interface CandidateCounts {
  readonly provider: string;
  served: number;
  /** Served, then failed: a 5xx, or a stream cut after its first byte. */
  errors: number;
}

interface ModelCounts {
  /** By the stable_id of the candidate that served. */
  readonly served: Map<string, CandidateCounts>;
  /** Attempts given up on before the first byte, by provider (a failure names its provider only). */
  readonly failed: Map<string, number>;
}

class Slot {
  /** Which 10-second slot of the epoch this holds; -1 = never used. */
  epoch = -1;
  requests = 0;
  errors = 0;
  readonly latency = new Uint32Array(LATENCY_BUCKETS);
  latencyCount = 0;
  readonly models = new Map<string, ModelCounts>();

  reset(epoch: number): void {
    this.epoch = epoch;
    this.requests = 0;
    this.errors = 0;
    this.latency.fill(0);
    this.latencyCount = 0;
    this.models.clear();
  }
}

export interface TrafficPoint {
  /** Epoch ms at which the slot starts. */
  readonly at: number;
  readonly requests: number;
  readonly errors: number;
  /** Latency of the requests that reached an upstream; null when none did. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface RecentCandidate {
  readonly provider: string;
  readonly served: number;
  readonly errors: number;
}

export interface RecentModel {
  /** Requests served, by candidate stable_id. */
  readonly served: Readonly<Record<string, RecentCandidate>>;
  /** Failed attempts by provider. */
  readonly failed: Readonly<Record<string, number>>;
}

export class RecentTraffic {
  readonly #slots = Array.from({ length: SLOTS }, () => new Slot());

  /**
   * One finished request. `reachedUpstream`: it was sent to at least one candidate, so its
   * duration says something about the providers (a refusal's does not). `model` is null for
   * a model the generation does not route; `servedBy` is the stable_id of the candidate that
   * answered, and `provider` its provider (positional: the request path allocates nothing).
   */
  record(
    nowMs: number,
    durationMs: number,
    error: boolean,
    reachedUpstream: boolean,
    model: string | null,
    servedBy: string | null,
    provider: string,
    failures: readonly { readonly candidate: string }[],
  ): void {
    const slot = this.#slotAt(nowMs);
    slot.requests += 1;
    if (error) slot.errors += 1;
    if (reachedUpstream) {
      const i = durationMs <= 1 ? 0 : Math.min(LATENCY_BUCKETS - 1, Math.ceil(Math.log(durationMs) / LOG_GROWTH));
      slot.latency[i] = (slot.latency[i] as number) + 1;
      slot.latencyCount += 1;
    }
    if (model === null || (servedBy === null && failures.length === 0)) return;
    let m = slot.models.get(model);
    if (m === undefined) slot.models.set(model, (m = { served: new Map(), failed: new Map() }));
    if (servedBy !== null) {
      let c = m.served.get(servedBy);
      if (c === undefined) m.served.set(servedBy, (c = { provider, served: 0, errors: 0 }));
      c.served += 1;
      if (error) c.errors += 1;
    }
    for (const f of failures) m.failed.set(f.candidate, (m.failed.get(f.candidate) ?? 0) + 1);
  }

  /** The last 15 minutes, one point per slot, oldest first; the last point is the slot still filling. */
  series(nowMs: number): TrafficPoint[] {
    const current = Math.floor(nowMs / SLOT_MS);
    const points: TrafficPoint[] = [];
    for (let epoch = current - SLOTS + 1; epoch <= current; epoch++) {
      const slot = this.#slots[epoch % SLOTS] as Slot;
      const live = slot.epoch === epoch;
      points.push({
        at: epoch * SLOT_MS,
        requests: live ? slot.requests : 0,
        errors: live ? slot.errors : 0,
        p50Ms: live ? quantile(slot.latency, slot.latencyCount, 0.5) : null,
        p99Ms: live ? quantile(slot.latency, slot.latencyCount, 0.99) : null,
      });
    }
    return points;
  }

  /** Per model, what served and what failed over the last `windowMs` (whole slots, the current one included). */
  models(nowMs: number, windowMs: number): Record<string, RecentModel> {
    const current = Math.floor(nowMs / SLOT_MS);
    const oldest = current - Math.min(SLOTS, Math.ceil(windowMs / SLOT_MS)) + 1;
    const out: Record<string, { served: Record<string, RecentCandidate>; failed: Record<string, number> }> = {};
    for (const slot of this.#slots) {
      if (slot.epoch < oldest || slot.epoch > current) continue;
      for (const [model, m] of slot.models) {
        const into = (out[model] ??= { served: {}, failed: {} });
        for (const [id, c] of m.served) {
          const seen = into.served[id];
          into.served[id] = {
            provider: c.provider,
            served: (seen?.served ?? 0) + c.served,
            errors: (seen?.errors ?? 0) + c.errors,
          };
        }
        for (const [candidate, n] of m.failed) into.failed[candidate] = (into.failed[candidate] ?? 0) + n;
      }
    }
    return out;
  }

  #slotAt(nowMs: number): Slot {
    const epoch = Math.floor(nowMs / SLOT_MS);
    const slot = this.#slots[epoch % SLOTS] as Slot;
    if (slot.epoch !== epoch) slot.reset(epoch);
    return slot;
  }
}

/** The upper bound (ms) of the bucket holding quantile q; null when empty. */
function quantile(counts: Uint32Array, total: number, q: number): number | null {
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i] as number;
    if (seen >= rank) return Math.round(GROWTH ** i * 100) / 100;
  }
  return null;
}
