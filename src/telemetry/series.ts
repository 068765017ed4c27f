import type { Metric, Registry } from 'prom-client';

// Counters and histograms for the per-request path, whose series are bound once to their
// label values and then updated without allocating: prom-client's generic inc/observe
// build a label object, validate it and hash it into a string on every call, which
// measured about 4 µs per proxied request. These register with prom-client's registry
// and render through it, so /metrics is unchanged; everything off the request path keeps
// using prom-client's own types.

type LabelValues = readonly string[];

interface Sample {
  readonly value: number;
  readonly labels: Record<string, string | number>;
  readonly metricName?: string;
}

/**
 * Series keyed by up to five label values through nested maps: a lookup is one Map.get
 * per label with strings the caller already holds.
 */
abstract class Family<S> {
  readonly name: string;
  readonly help: string;
  abstract readonly type: 'counter' | 'histogram';
  readonly #labelNames: readonly string[];
  readonly #root = new Map<string, unknown>();
  protected readonly all: Array<{ readonly labels: LabelValues; readonly series: S }> = [];

  constructor(registry: Registry, name: string, help: string, labelNames: readonly string[]) {
    if (labelNames.length < 1 || labelNames.length > 5) throw new Error(`${name}: 1 to 5 labels`);
    this.name = name;
    this.help = help;
    this.#labelNames = labelNames;
    // A prom-client registry renders anything with name, help, type and get().
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series for these label values (one per label name, in order). */
  series(a: string, b = '', c = '', d = '', e = ''): S {
    const depth = this.#labelNames.length;
    if (depth === 1) return (this.#root.get(a) as S | undefined) ?? this.#add(this.#root, a, [a]);
    const level2 = level(this.#root, a);
    if (depth === 2) return (level2.get(b) as S | undefined) ?? this.#add(level2, b, [a, b]);
    const level3 = level(level2, b);
    if (depth === 3) return (level3.get(c) as S | undefined) ?? this.#add(level3, c, [a, b, c]);
    const level4 = level(level3, c);
    if (depth === 4) return (level4.get(d) as S | undefined) ?? this.#add(level4, d, [a, b, c, d]);
    const level5 = level(level4, d);
    return (level5.get(e) as S | undefined) ?? this.#add(level5, e, [a, b, c, d, e]);
  }

  protected abstract create(): S;
  protected abstract samples(labels: Record<string, string>, series: S): Sample[];

  #add(map: Map<string, unknown>, key: string, labels: LabelValues): S {
    const series = this.create();
    map.set(key, series);
    this.all.push({ labels, series });
    return series;
  }

  /** prom-client's metric shape, read by the registry when /metrics is scraped. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    for (const { labels, series } of this.all) {
      const named: Record<string, string> = {};
      this.#labelNames.forEach((n, i) => {
        named[n] = labels[i] as string;
      });
      values.push(...this.samples(named, series));
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values };
  }
}

function level(map: Map<string, unknown>, key: string): Map<string, unknown> {
  let next = map.get(key) as Map<string, unknown> | undefined;
  if (next === undefined) map.set(key, (next = new Map()));
  return next;
}

export class CounterSeries {
  value = 0;

  inc(by = 1): void {
    this.value += by;
  }
}

export class CounterFamily extends Family<CounterSeries> {
  readonly type = 'counter';

  protected create(): CounterSeries {
    return new CounterSeries();
  }

  protected samples(labels: Record<string, string>, series: CounterSeries): Sample[] {
    return [{ labels, value: series.value }];
  }
}

export class HistogramSeries {
  readonly #bounds: readonly number[];
  /** Per bucket (not cumulative); the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count += 1;
  }
}

export class HistogramFamily extends Family<HistogramSeries> {
  readonly type = 'histogram';
  readonly #bounds: readonly number[];

  constructor(registry: Registry, name: string, help: string, labelNames: readonly string[], bounds: readonly number[]) {
    super(registry, name, help, labelNames);
    this.#bounds = Object.freeze([...bounds]);
  }

  protected create(): HistogramSeries {
    return new HistogramSeries(this.#bounds);
  }

  protected samples(labels: Record<string, string>, series: HistogramSeries): Sample[] {
    const out: Sample[] = [];
    let cumulative = 0;
    for (let i = 0; i <= this.#bounds.length; i++) {
      cumulative += series.counts[i] as number;
      out.push({
        labels: { le: i < this.#bounds.length ? (this.#bounds[i] as number) : '+Inf', ...labels },
        value: cumulative,
        metricName: `${this.name}_bucket`,
      });
    }
    out.push({ labels, value: series.sum, metricName: `${this.name}_sum` });
    out.push({ labels, value: series.count, metricName: `${this.name}_count` });
    return out;
  }
}
