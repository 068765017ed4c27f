import type { IncomingHttpHeaders } from 'node:http';

/** The A2A-Version and Authorization headers of one request, null where absent. */
export interface A2aSeenHeaders {
  a2a_version: string | null;
  authorization: string | null;
}

/** What one agent saw last: its last JSON-RPC request (with the method as sent) and its last card fetch. */
export interface A2aAgentSeen {
  last_rpc: (A2aSeenHeaders & { method: string | null }) | null;
  last_card: A2aSeenHeaders | null;
}

/** Served at `GET /__mock/a2a`, and by `MockProvider.a2aStats()`. */
export interface A2aStats {
  /**
   * Keyed `"<agent> <method>"` with the JSON-RPC method as sent (`"worker SendMessage"`,
   * `"worker message/send"`; `"worker (none)"` for a body without one), and `"<agent> card"` per card fetch.
   */
  requests: Record<string, number>;
  /** By agent name, once it was asked anything. */
  agents: Record<string, A2aAgentSeen>;
}

// Method names come from clients, so the keys they make are bounded.
const keyLimit = 1000;

function one(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

export class A2aCounters {
  #requests = new Map<string, number>();
  #agents = new Map<string, A2aAgentSeen>();

  #bump(key: string, agent: string): void {
    const k = this.#requests.has(key) || this.#requests.size < keyLimit ? key : `${agent} (other)`;
    this.#requests.set(k, (this.#requests.get(k) ?? 0) + 1);
  }

  #seen(agent: string): A2aAgentSeen {
    let seen = this.#agents.get(agent);
    if (seen === undefined) {
      seen = { last_rpc: null, last_card: null };
      this.#agents.set(agent, seen);
    }
    return seen;
  }

  rpc(agent: string, method: unknown, headers: IncomingHttpHeaders): void {
    const name = typeof method === 'string' ? method : null;
    this.#bump(`${agent} ${name ?? '(none)'}`, agent);
    this.#seen(agent).last_rpc = { method: name, a2a_version: one(headers, 'a2a-version'), authorization: one(headers, 'authorization') };
  }

  card(agent: string, a2aVersion: string | undefined, authorization: string | undefined): void {
    this.#bump(`${agent} card`, agent);
    this.#seen(agent).last_card = { a2a_version: a2aVersion ?? null, authorization: authorization ?? null };
  }

  reset(): void {
    this.#requests = new Map();
    this.#agents = new Map();
  }

  snapshot(): A2aStats {
    const agents: Record<string, A2aAgentSeen> = {};
    for (const [name, seen] of this.#agents) {
      agents[name] = {
        last_rpc: seen.last_rpc === null ? null : { ...seen.last_rpc },
        last_card: seen.last_card === null ? null : { ...seen.last_card },
      };
    }
    return { requests: Object.fromEntries(this.#requests), agents };
  }
}
