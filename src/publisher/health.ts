// Health of one provider, with hysteresis: `unhealthy_after` consecutive failures withdraw
// it, `healthy_after` consecutive successes restore it, so one lost probe or one lucky one
// does not flap the published routing.
import type { HealthCheck } from './inventory.js';

export type HealthVerdict = 'unknown' | 'healthy' | 'unhealthy';

export interface HealthSnapshot {
  readonly verdict: HealthVerdict;
  readonly consecutive_failures: number;
  readonly consecutive_successes: number;
  readonly last_probe_at: string | null;
  readonly last_error: { readonly at: string; readonly message: string } | null;
}

export class ProviderHealth {
  #verdict: HealthVerdict = 'unknown';
  #failures = 0;
  #successes = 0;
  #lastProbeAt: string | null = null;
  #lastError: { at: string; message: string } | null = null;
  readonly #thresholds: Pick<HealthCheck, 'unhealthy_after' | 'healthy_after'>;

  constructor(thresholds: Pick<HealthCheck, 'unhealthy_after' | 'healthy_after'>) {
    this.#thresholds = thresholds;
  }

  get verdict(): HealthVerdict {
    return this.#verdict;
  }

  /**
   * Records one probe; returns true when the verdict changed. At start-up (unknown) one
   * success is enough: there is no healthy state to protect from flapping yet, and a provider
   * must not wait `healthy_after` intervals to be published at all. Until then it is not.
   */
  record(ok: boolean, at: Date, error?: string): boolean {
    const before = this.#verdict;
    this.#lastProbeAt = at.toISOString();
    if (ok) {
      this.#successes += 1;
      this.#failures = 0;
      if (before === 'unknown' || (before === 'unhealthy' && this.#successes >= this.#thresholds.healthy_after)) this.#verdict = 'healthy';
    } else {
      this.#failures += 1;
      this.#successes = 0;
      this.#lastError = { at: this.#lastProbeAt, message: error ?? 'failed' };
      if (before !== 'unhealthy' && this.#failures >= this.#thresholds.unhealthy_after) this.#verdict = 'unhealthy';
    }
    return this.#verdict !== before;
  }

  snapshot(): HealthSnapshot {
    return {
      verdict: this.#verdict,
      consecutive_failures: this.#failures,
      consecutive_successes: this.#successes,
      last_probe_at: this.#lastProbeAt,
      last_error: this.#lastError,
    };
  }
}

/**
 * One probe: GET the health URL within `timeout_ms`; any 2xx passes. The error names the
 * failure (status, timeout, connection error code), never a response body.
 */
export async function probe(check: Pick<HealthCheck, 'url' | 'timeout_ms'>): Promise<{ ok: true } | { ok: false; error: string }> {
  try {
    const res = await fetch(check.url, { signal: AbortSignal.timeout(check.timeout_ms), redirect: 'manual' });
    await res.body?.cancel().catch(() => undefined);
    return res.status >= 200 && res.status < 300 ? { ok: true } : { ok: false, error: `HTTP ${res.status}` };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return { ok: false, error: `no answer within ${check.timeout_ms} ms` };
    return { ok: false, error: e.cause?.code ?? e.message };
  }
}
