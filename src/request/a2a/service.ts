import { AgentCards, type CardTarget, type OwnershipStore, TrustedProxies } from '../../a2a/index.js';
import type { A2aConfig } from '../../config/index.js';
import type { AgentServerRuntime, Generation } from '../../live/index.js';
import { type Logger, type Metrics, RecentTraffic } from '../../telemetry/index.js';

// The /a2a endpoints' state that outlives a generation: the upstream agents' cards (read at
// start, on a reload that brings or moves an agent, and on a timer), who owns each task and
// context (this replica's memory, or Redis shared by the fleet), and the recent traffic the
// status page shows. Told of each new generation (sync).

export class A2aService {
  readonly cards: AgentCards;
  readonly owners: OwnershipStore;
  /** The last 15 minutes of /a2a traffic, for the status page. */
  readonly recent = new RecentTraffic();
  #trusted: { readonly list: readonly string[]; readonly proxies: TrustedProxies } | null = null;
  #closed = false;

  constructor(owners: OwnershipStore, settings: A2aConfig, logger: Logger, metrics: Metrics) {
    this.owners = owners;
    this.cards = new AgentCards({
      maxCardBytes: settings.max_card_bytes,
      recheckMs: settings.card_recheck_ms,
      onProblem: (provider, problem) =>
        logger.warn({ msg: "an agent's card could not be read: the last good one serves", provider, problem }),
    });
    metrics.a2aTasksTracked = () => owners.tracked();
  }

  /** After a swap: the cards of the generation's upstream agents (a new or moved one is read now). */
  sync(gen: Generation): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const settings = gen.config.a2a;
    this.cards.configure({ maxCardBytes: settings.max_card_bytes, recheckMs: settings.card_recheck_ms });
    const servers = gen.agents.servers;
    return this.cards.sync(Object.keys(servers).map((name) => cardTarget(servers[name] as AgentServerRuntime)));
  }

  /** `server.trusted_proxies` of the generation, compiled once per list. */
  trustedProxies(gen: Generation): TrustedProxies {
    const list = gen.config.server.trusted_proxies;
    if (this.#trusted === null || this.#trusted.list !== list) this.#trusted = { list, proxies: new TrustedProxies(list) };
    return this.#trusted.proxies;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.cards.close();
    await this.owners.close();
  }
}

/** The headers every call to an upstream agent carries: its configured ones, and its own key as a bearer. */
export function agentHeaders(server: AgentServerRuntime): Record<string, string> {
  const headers: Record<string, string> = { ...server.headers };
  if (server.credential !== null) headers.authorization = server.credential.authorization();
  return headers;
}

function cardTarget(server: AgentServerRuntime): CardTarget {
  return { name: server.name, cardUrl: server.cardUrl, pool: server.pool, headers: agentHeaders(server), timeoutMs: server.timeoutMs };
}
