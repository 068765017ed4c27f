// The grid loop's Prometheus series, in a registry of its own. Label values are bounded by
// the inventory (providers, models) and closed sets (results); revisions are never labels.
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';

export type PublishResult = 'written' | 'unchanged' | 'failed';

export class PublisherMetrics {
  readonly registry = new Registry();
  /** written: a new revision; unchanged: already published; failed: refused by the contract check or the write failed. */
  readonly publishes: Counter<'result'>;
  readonly probes: Counter<'provider' | 'result'>;
  readonly candidates: Gauge<'model'>;
  readonly providerHealthy: Gauge<'provider'>;
  readonly inventoryLoads: Counter<'result'>;
  readonly sourceGeneration: Gauge;

  constructor() {
    const registers = [this.registry];
    this.publishes = new Counter({
      name: 'switchyard_publisher_publishes_total',
      help: 'Publish attempts by result: written (a new revision), unchanged (already published), failed.',
      labelNames: ['result'],
      registers,
    });
    this.probes = new Counter({
      name: 'switchyard_publisher_probes_total',
      help: 'Health probes by provider and result (success, failure).',
      labelNames: ['provider', 'result'],
      registers,
    });
    this.candidates = new Gauge({
      name: 'switchyard_publisher_candidates',
      help: 'Candidates per model in the last published revision.',
      labelNames: ['model'],
      registers,
    });
    this.providerHealthy = new Gauge({
      name: 'switchyard_publisher_provider_healthy',
      help: 'Provider health as the publisher judges it: 1 healthy, 0 unhealthy or not yet known.',
      labelNames: ['provider'],
      registers,
    });
    this.inventoryLoads = new Counter({
      name: 'switchyard_publisher_inventory_loads_total',
      help: 'Inventory reads after a change by result: applied, refused (the last valid inventory stays).',
      labelNames: ['result'],
      registers,
    });
    this.sourceGeneration = new Gauge({
      name: 'switchyard_publisher_source_generation',
      help: 'The provenance.source_generation of the last published revision.',
      registers,
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_publisher_' });
  }

  /** Replaces the per-model gauge: models that left the overlay must not linger at their old count. */
  setCandidates(perModel: Readonly<Record<string, number>>): void {
    this.candidates.reset();
    for (const [model, n] of Object.entries(perModel)) this.candidates.set({ model }, n);
  }
}
