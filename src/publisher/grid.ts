// The controller loop behind `switchyard grid`: keep the published overlay equal to what the
// inventory and the providers' health say, and nothing more. It watches the inventory with
// the gateway's own parent-directory watch, probes each provider, and republishes only when
// the rendered revision (or scope) differs from what it last published.
import type { Logger } from '../telemetry/index.js';
import { FileWatch } from '../watch/index.js';
import { type HealthSnapshot, ProviderHealth, probe } from './health.js';
import { type HealthCheck, type Inventory, readInventory } from './inventory.js';
import { PublishError } from './issues.js';
import { PublisherMetrics } from './metrics.js';
import type { Output } from './output.js';
import { publishOverlay, readPublished } from './publish.js';
import { candidatesPerModel, candidatesPerTool, renderOverlay } from './render.js';

export interface GridOptions {
  readonly inventoryPath: string;
  readonly output: Output;
  readonly producerVersion: string;
  readonly logger: Logger;
  /** Inventory watch debounce; editors write in bursts. */
  readonly debounceMs?: number;
  /** The slow re-check that catches a lost watch event (and retries a failed publish). */
  readonly recheckMs?: number;
}

export interface GridStatus {
  readonly inventory: {
    readonly path: string;
    readonly value: Inventory;
    readonly last_error: { at: string; code: string; message: string } | null;
  };
  readonly rendered_revision: string | null;
  readonly published_revision: string | null;
  readonly source_generation: number | null;
  readonly last_publish: { at: string; result: string; error?: string } | null;
  /** Candidates per model and per tool in the last published revision; null before the first publish. */
  readonly candidates: { readonly per_model: Record<string, number>; readonly per_tool: Record<string, number> } | null;
  readonly providers: ReadonlyArray<{
    cluster: string;
    state: string;
    models: readonly string[];
    tools: readonly string[];
    health: HealthSnapshot | null;
  }>;
}

interface Prober {
  readonly check: HealthCheck;
  readonly health: ProviderHealth;
  timer: NodeJS.Timeout | null;
  stopped: boolean;
}

export class Grid {
  readonly metrics = new PublisherMetrics();
  readonly #options: GridOptions;
  readonly #log: Logger;
  #inventory: Inventory;
  #inventoryError: GridStatus['inventory']['last_error'] = null;
  readonly #probers = new Map<string, Prober>();
  #watch: FileWatch | null = null;
  #rendered: string | null = null;
  #published: string | null = null;
  #publishedScope = '';
  #sourceGeneration: number | null = null;
  #lastPublish: GridStatus['last_publish'] = null;
  #candidates: GridStatus['candidates'] = null;
  #running: Promise<void> | null = null;
  #again = false;
  #closed = false;

  private constructor(options: GridOptions, inventory: Inventory) {
    this.#options = options;
    this.#log = options.logger;
    this.#inventory = inventory;
  }

  /**
   * Reads the inventory (an invalid one at start-up is an error: there is no last good one
   * to keep), probes every provider once, publishes, then starts watching. Waiting for the
   * first probes means a start never publishes a provider that was never seen healthy.
   */
  static async start(options: GridOptions): Promise<Grid> {
    const grid = new Grid(options, await readInventory(options.inventoryPath));
    const published = await readPublished(options.output);
    if (published !== null) {
      grid.#published = published.revision;
      grid.#publishedScope = JSON.stringify(published.scope ?? null);
      grid.#sourceGeneration = published.provenance?.source_generation ?? null;
    }
    await grid.#syncProbers();
    await grid.#evaluate();
    grid.#watch = new FileWatch({
      file: options.inventoryPath,
      debounceMs: options.debounceMs ?? 100,
      recheckMs: options.recheckMs ?? 10_000,
      onChange: () => void grid.#reloadInventory(),
    });
    grid.#watch.start();
    return grid;
  }

  status(): GridStatus {
    return {
      inventory: { path: this.#options.inventoryPath, value: this.#inventory, last_error: this.#inventoryError },
      rendered_revision: this.#rendered,
      published_revision: this.#published,
      source_generation: this.#sourceGeneration,
      last_publish: this.#lastPublish,
      candidates: this.#candidates,
      providers: this.#inventory.providers.map((p) => ({
        cluster: p.cluster,
        state: p.state,
        models: p.models,
        tools: p.tools,
        health: this.#probers.get(p.cluster)?.health.snapshot() ?? null,
      })),
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.close();
    for (const p of this.#probers.values()) stopProber(p);
    this.#probers.clear();
    await this.#running;
  }

  async #reloadInventory(): Promise<void> {
    if (this.#closed) return;
    let next: Inventory;
    try {
      next = await readInventory(this.#options.inventoryPath);
    } catch (err) {
      const code = err instanceof PublishError ? err.code : 'inventory_unreadable';
      const message = (err as Error).message;
      // A refusal met again with the same message (the re-check re-reading the same bad
      // file) is not news: log and count it once.
      if (this.#inventoryError?.message !== message) {
        this.metrics.inventoryLoads.inc({ result: 'refused' });
        this.#log.error({ msg: 'inventory refused; keeping the last valid one', code, error: message, path: this.#options.inventoryPath });
      }
      this.#inventoryError = { at: new Date().toISOString(), code, message };
      return;
    }
    this.#inventoryError = null;
    if (JSON.stringify(next) === JSON.stringify(this.#inventory)) return this.#requestEvaluate();
    this.#inventory = next;
    this.metrics.inventoryLoads.inc({ result: 'applied' });
    this.#log.info({ msg: 'inventory applied', path: this.#options.inventoryPath, providers: next.providers.length });
    await this.#syncProbers();
    this.#requestEvaluate();
  }

  /**
   * One prober per provider with a health block. A provider whose check is unchanged keeps
   * its prober and verdict; a new or changed check starts unknown (not published) and is
   * probed once before this returns.
   */
  async #syncProbers(): Promise<void> {
    const wanted = new Map(this.#inventory.providers.flatMap((p) => (p.health ? [[p.cluster, p.health] as const] : [])));
    for (const [cluster, prober] of this.#probers) {
      if (JSON.stringify(wanted.get(cluster)) !== JSON.stringify(prober.check)) {
        stopProber(prober);
        this.#probers.delete(cluster);
        this.metrics.providerHealthy.remove({ provider: cluster });
      }
    }
    const first: Promise<void>[] = [];
    for (const [cluster, check] of wanted) {
      if (this.#probers.has(cluster)) continue;
      const prober: Prober = { check, health: new ProviderHealth(check), timer: null, stopped: false };
      this.#probers.set(cluster, prober);
      this.metrics.providerHealthy.set({ provider: cluster }, 0);
      first.push(this.#probeLoop(cluster, prober));
    }
    await Promise.all(first);
  }

  /** Probes once, then schedules the next probe `interval_ms` after this one ends (never overlapping). */
  async #probeLoop(cluster: string, prober: Prober): Promise<void> {
    const result = await probe(prober.check);
    if (prober.stopped || this.#closed) return;
    this.metrics.probes.inc({ provider: cluster, result: result.ok ? 'success' : 'failure' });
    const changed = prober.health.record(result.ok, new Date(), result.ok ? undefined : result.error);
    if (changed) {
      const verdict = prober.health.verdict;
      this.metrics.providerHealthy.set({ provider: cluster }, verdict === 'healthy' ? 1 : 0);
      this.#log.info({ msg: 'provider health changed', provider: cluster, health: verdict, error: result.ok ? undefined : result.error });
      this.#requestEvaluate();
    }
    prober.timer = setTimeout(() => void this.#probeLoop(cluster, prober), prober.check.interval_ms);
  }

  #isHealthy = (cluster: string): boolean => {
    const prober = this.#probers.get(cluster);
    return prober === undefined || prober.health.verdict === 'healthy';
  };

  /** Serialized: a change during a publish coalesces into one more evaluation after it. */
  #requestEvaluate(): void {
    if (this.#closed) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#evaluate();
      } while (this.#again && !this.#closed);
      this.#running = null;
    })();
  }

  async #evaluate(): Promise<void> {
    const inventory = this.#inventory;
    const rendered = renderOverlay(inventory, this.#isHealthy);
    this.#rendered = rendered.revision;
    const scope = JSON.stringify({
      network: inventory.network,
      gateway: inventory.gateway,
      namespace: inventory.namespace,
      local_site: inventory.local_site,
    });
    if (rendered.revision === this.#published && scope === this.#publishedScope && this.#lastPublish?.result !== 'failed') return;
    try {
      const outcome = await publishOverlay(inventory, rendered, this.#options.output, { producerVersion: this.#options.producerVersion });
      this.#published = outcome.revision;
      this.#publishedScope = scope;
      if (outcome.sourceGeneration !== null) this.#sourceGeneration = outcome.sourceGeneration;
      this.#lastPublish = { at: new Date().toISOString(), result: outcome.result };
      this.metrics.publishes.inc({ result: outcome.result });
      if (this.#sourceGeneration !== null) this.metrics.sourceGeneration.set(this.#sourceGeneration);
      const perModel = candidatesPerModel(rendered.payload);
      const perTool = candidatesPerTool(rendered.payload);
      this.metrics.setCandidates(perModel, perTool);
      this.#candidates = { per_model: perModel, per_tool: perTool };
      this.#log.info({
        msg: outcome.result === 'written' ? 'published' : 'already published',
        revision: outcome.revision,
        source_generation: outcome.sourceGeneration,
        candidates: rendered.payload.candidates.length,
        candidates_per_model: perModel,
        candidates_per_tool: perTool,
        path: outcome.path,
      });
    } catch (err) {
      const code = err instanceof PublishError ? err.code : 'write_failed';
      this.#lastPublish = { at: new Date().toISOString(), result: 'failed', error: (err as Error).message };
      this.metrics.publishes.inc({ result: 'failed' });
      this.#log.error({
        msg: 'publish failed; the last published revision stays',
        code,
        error: (err as Error).message,
        revision: rendered.revision,
      });
    }
  }
}

function stopProber(p: Prober): void {
  p.stopped = true;
  if (p.timer !== null) clearTimeout(p.timer);
}
