// The grid loop's Prometheus series, in a registry of its own. Label values are bounded by
// the inventory (providers, models, tools) and closed sets (results); revisions are never labels.

import type { Counter, Gauge } from 'prom-client';
import { Registry } from 'prom-client';
import { addProcessMetrics, counter, gauge } from '../telemetry/index.js';

export type PublishResult = 'written' | 'unchanged' | 'failed';

export class PublisherMetrics {
  readonly registry = new Registry();
  /** written: a new revision; unchanged: already published; failed: refused by the contract check or the write failed. */
  readonly publishes: Counter<'result'>;
  readonly probes: Counter<'provider' | 'result'>;
  readonly candidates: Gauge<'model'>;
  /** Its own series rather than a `tool` label on the model gauge: each series keeps one label set. */
  readonly toolCandidates: Gauge<'tool'>;
  readonly providerHealthy: Gauge<'provider'>;
  readonly inventoryLoads: Counter<'result'>;
  readonly sourceGeneration: Gauge;

  constructor() {
    const r = this.registry;
    this.publishes = counter(
      r,
      'switchyard_publisher_publishes_total',
      'Publish attempts by result: written (a new revision), unchanged (already published), failed.',
      ['result'],
    );
    this.probes = counter(r, 'switchyard_publisher_probes_total', 'Health probes by provider and result (success, failure).', [
      'provider',
      'result',
    ]);
    this.candidates = gauge(r, 'switchyard_publisher_candidates', 'Candidates per model in the last published revision.', ['model']);
    this.toolCandidates = gauge(
      r,
      'switchyard_publisher_tool_candidates',
      'Candidates (mcp_tool) per tool in the last published revision.',
      ['tool'],
    );
    this.providerHealthy = gauge(
      r,
      'switchyard_publisher_provider_healthy',
      'Provider health as the publisher judges it: 1 healthy, 0 unhealthy or not yet known.',
      ['provider'],
    );
    this.inventoryLoads = counter(
      r,
      'switchyard_publisher_inventory_loads_total',
      'Inventory reads after a change by result: applied, refused (the last valid inventory stays).',
      ['result'],
    );
    this.sourceGeneration = gauge(
      r,
      'switchyard_publisher_source_generation',
      'The provenance.source_generation of the last published revision.',
    );
    addProcessMetrics(r, 'switchyard_publisher_');
  }

  /** Replaces the per-model and per-tool gauges: names that left the overlay must not linger at their old count. */
  setCandidates(perModel: Readonly<Record<string, number>>, perTool: Readonly<Record<string, number>> = {}): void {
    this.candidates.reset();
    for (const [model, n] of Object.entries(perModel)) this.candidates.set({ model }, n);
    this.toolCandidates.reset();
    for (const [tool, n] of Object.entries(perTool)) this.toolCandidates.set({ tool }, n);
  }
}
