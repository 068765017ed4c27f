import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from 'prom-client';

// Series for a registry of one's own. The gateway and the publisher each keep one, never
// prom-client's global registry, so that several of them in one test process do not collide;
// every series below registers in the registry it is given and nowhere else.

export function counter<L extends string = string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [registry] });
}

/** `collect` runs at each scrape, for a gauge read from elsewhere rather than set. */
export function gauge<L extends string = string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
  collect?: (this: Gauge<L>) => void | Promise<void>,
): Gauge<L> {
  return new Gauge({ name, help, labelNames, registers: [registry], collect });
}

export function histogram<L extends string = string>(
  registry: Registry,
  name: string,
  help: string,
  buckets: number[],
  labelNames: readonly L[] = [],
): Histogram<L> {
  return new Histogram({ name, help, labelNames, buckets, registers: [registry] });
}

/**
 * Node's process series (CPU, memory, event loop, GC) under `prefix`. Call it after the
 * application's own series: a registry renders in registration order, and /metrics lists the
 * application's series first.
 */
export function addProcessMetrics(registry: Registry, prefix: string): void {
  collectDefaultMetrics({ register: registry, prefix });
}
