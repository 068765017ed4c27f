import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** A provider's breaker state for the gauge: 0 closed, 1 open, 2 half-open. */
export type BreakerStateCode = 0 | 1 | 2;

/**
 * The gateway's Prometheus series, in a registry of its own (never the global one, so that
 * several gateways in one test process do not collide). Label values are bounded sets:
 * models and providers from config, statuses, reasons. Revisions and request ids are never
 * labels.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly requests: Counter<'model' | 'provider' | 'status'>;
  readonly requestDuration: Histogram<'model'>;
  readonly upstreamDuration: Histogram<'provider'>;
  readonly timeToFirstToken: Histogram<'model' | 'provider'>;
  readonly fallbacks: Counter<'provider' | 'reason'>;
  readonly costUsd: Counter<'model' | 'provider'>;
  readonly reloads: Counter<'trigger' | 'result'>;
  readonly reloadDuration: Histogram;
  readonly generation: Gauge;
  readonly lastReloadSuccess: Gauge;
  readonly overlayReloads: Counter<'result' | 'reason'>;
  readonly overlayUnroutable: Gauge;

  constructor(breakerStates: () => Iterable<readonly [provider: string, state: BreakerStateCode]>) {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'switchyard_requests_total', help: 'Proxied requests by model, serving provider and outcome status (HTTP status, or "partial" for a stream cut after its first byte).', labelNames: ['model', 'provider', 'status'], registers });
    this.requestDuration = new Histogram({ name: 'switchyard_request_duration_seconds', help: 'Time from request received to response end.', labelNames: ['model'], buckets: LATENCY_BUCKETS, registers });
    this.upstreamDuration = new Histogram({ name: 'switchyard_upstream_duration_seconds', help: 'Time from the upstream call to its response headers, for the attempt that served the request.', labelNames: ['provider'], buckets: LATENCY_BUCKETS, registers });
    this.timeToFirstToken = new Histogram({ name: 'switchyard_time_to_first_token_seconds', help: 'For streams: time from request received to the first body chunk sent to the client.', labelNames: ['model', 'provider'], buckets: LATENCY_BUCKETS, registers });
    this.fallbacks = new Counter({ name: 'switchyard_fallbacks_total', help: 'Candidates given up on before the first byte, by provider and reason.', labelNames: ['provider', 'reason'], registers });
    this.costUsd = new Counter({ name: 'switchyard_cost_usd_total', help: 'Priced spend of served requests, in USD.', labelNames: ['model', 'provider'], registers });
    this.reloads = new Counter({ name: 'switchyard_reload_total', help: 'Reloads by trigger and result.', labelNames: ['trigger', 'result'], registers });
    this.reloadDuration = new Histogram({ name: 'switchyard_reload_duration_seconds', help: 'Time to read, validate, build and swap a generation.', buckets: LATENCY_BUCKETS, registers });
    this.generation = new Gauge({ name: 'switchyard_generation', help: 'The serving generation number.', registers });
    this.lastReloadSuccess = new Gauge({ name: 'switchyard_last_reload_success_timestamp_seconds', help: 'When the last successful reload (or the start-up build) was swapped in.', registers });
    this.overlayReloads = new Counter({ name: 'switchyard_overlay_reload_total', help: 'Overlay reads by result and rejection reason.', labelNames: ['result', 'reason'], registers });
    this.overlayUnroutable = new Gauge({ name: 'switchyard_overlay_unroutable_candidates', help: 'Overlay candidates whose cluster names no configured provider (kept, never selected).', registers });
    new Gauge({
      name: 'switchyard_breaker_state',
      help: 'Circuit breaker state by provider: 0 closed, 1 open, 2 half-open.',
      labelNames: ['provider'],
      registers,
      collect() {
        this.reset();
        for (const [provider, state] of breakerStates()) this.set({ provider }, state);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_' });
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
