import type { AgentRoute, AgentServerRuntime, Generation } from '../live/index.js';
import type { Services } from '../request/index.js';
import type { BreakerState, BreakerView } from '../resilience/index.js';
import type { RecentModel } from '../telemetry/index.js';

// The `a2a` section of /admin/status and of the status page's data: each exposed agent with
// its candidates (the upstream agent's card read or not, its last problem, its breaker), the
// task and context ids the gateway tracks, and the recent traffic per agent and candidate.
// /admin/status names base and card URLs and credential references; the page's view leaves
// them out, and a card problem there says "the agent" where it named an address.

/** What both views say of an upstream agent's card. */
interface CardFacts {
  /** A card was read well at least once: the agent is served with it. */
  readonly card_read: boolean;
  readonly card_read_at: string | null;
  /** Why the last read failed; null when it did not. */
  readonly card_problem: string | null;
  /** The card's own name for the agent, once read. */
  readonly card_name: string | null;
}

function cardFacts(svc: Services, provider: string): CardFacts {
  const s = svc.a2a.cards.stateOf(provider);
  return {
    card_read: s.view !== null,
    card_read_at: s.readAt === null ? null : new Date(s.readAt).toISOString(),
    card_problem: s.problem,
    card_name: s.view?.name ?? null,
  };
}

/** The ids tracked now; a store that cannot say (Redis down) gives its error instead. */
async function tasksTracked(svc: Services): Promise<{ readonly tasks_tracked: number | null; readonly tasks_error: string | null }> {
  try {
    return { tasks_tracked: await svc.a2a.owners.tracked(), tasks_error: null };
  } catch (err) {
    return { tasks_tracked: null, tasks_error: (err as Error).message };
  }
}

/** Calls an agent served in the window, whichever candidate served them. */
function servedOf(recent: RecentModel | undefined): number {
  return recent === undefined ? 0 : Object.values(recent.served).reduce((n, c) => n + c.served, 0);
}

export interface AgentCandidateStatus extends CardFacts {
  readonly stable_id: string;
  readonly provider: string;
  readonly weight: number;
  readonly admission: string;
  readonly selection_group: number;
  readonly breaker: BreakerView | null;
  /** Calls it answered in the window, those of them that then failed, and its failed attempts. */
  readonly served: number;
  readonly errors: number;
  readonly failed: number;
}

export interface AgentStatus {
  readonly agent: string;
  readonly policy: string;
  readonly admits_new: boolean;
  /** Calls answered in the window. */
  readonly served: number;
  readonly candidates: readonly AgentCandidateStatus[];
}

export interface A2aStatus {
  readonly tasks_tracked: number | null;
  readonly tasks_error: string | null;
  readonly store: string;
  readonly recent_window_s: number;
  readonly agents: readonly AgentStatus[];
  /** Every configured upstream agent (type a2a), routed or not. */
  readonly servers: readonly Record<string, unknown>[];
}

/** /admin/status `a2a`: the complete view, addresses and credential references included. */
export async function a2aStatus(svc: Services, gen: Generation, nowMs: number, windowMs: number): Promise<A2aStatus> {
  const recent = svc.a2a.recent.models(nowMs, windowMs);
  const agents = gen.agents.names.map((name): AgentStatus => {
    const route = gen.agents.routes[name] as AgentRoute;
    const r = recent[name];
    return {
      agent: name,
      policy: route.policy,
      admits_new: route.admitsNew,
      served: servedOf(r),
      candidates: route.groups.flatMap((g) =>
        g.candidates.map((c) => ({
          stable_id: c.stableId,
          provider: c.providerName,
          weight: c.weight,
          admission: c.admission,
          selection_group: c.group,
          breaker: svc.breakers.view(c.identity) ?? null,
          served: r?.served[c.stableId]?.served ?? 0,
          errors: r?.served[c.stableId]?.errors ?? 0,
          failed: r?.failed[c.stableId] ?? 0,
          ...cardFacts(svc, c.providerName),
        })),
      ),
    };
  });
  return {
    ...(await tasksTracked(svc)),
    store: gen.config.governance.store,
    recent_window_s: windowMs / 1000,
    agents,
    servers: Object.values(gen.agents.servers).map((s) => serverStatus(svc, s)),
  };
}

function serverStatus(svc: Services, s: AgentServerRuntime): Record<string, unknown> {
  return {
    name: s.name,
    base_url: s.baseUrl,
    card_url: s.cardUrl,
    identity: s.identity,
    credential: s.credential?.source ?? null,
    timeout_ms: s.timeoutMs,
    breaker: svc.breakers.view(s.identity) ?? null,
    inflight: s.pool.inflight,
    ...cardFacts(svc, s.name),
  };
}

/** An agent's candidate on the status page: a model's candidate row, and its card. */
export interface PageAgentCandidate {
  readonly stable_id: string;
  readonly provider: string;
  readonly state: 'serving' | 'draining' | 'withdrawn';
  readonly selection_group: number;
  readonly weight: number;
  readonly breaker: BreakerState;
  readonly credential_problem: false;
  readonly served: number;
  readonly share: number | null;
  readonly error_rate: number | null;
  readonly card_read: boolean;
  /** Seconds since the card was last read well; null = never. */
  readonly card_age_s: number | null;
  readonly card_problem: string | null;
}

export interface PageAgent {
  readonly agent: string;
  readonly policy: string;
  readonly admits_new: boolean;
  readonly served: number;
  readonly candidates: readonly PageAgentCandidate[];
}

const STATE_OF = { new_and_existing: 'serving', existing_only: 'draining', none: 'withdrawn' } as const;

/** The status page's agents: each with its candidates' admission, breaker, card and recent traffic. */
export function pageAgents(svc: Services, gen: Generation, nowMs: number, windowMs: number): PageAgent[] {
  const recent = svc.a2a.recent.models(nowMs, windowMs);
  return gen.agents.names.map((name) => {
    const route = gen.agents.routes[name] as AgentRoute;
    const r = recent[name];
    const served = servedOf(r);
    const candidates = route.groups.flatMap((g) =>
      g.candidates.map((c): PageAgentCandidate => {
        const mine = r?.served[c.stableId]?.served ?? 0;
        const attempts = mine + (r?.failed[c.stableId] ?? 0);
        const failed = (r?.failed[c.stableId] ?? 0) + (r?.served[c.stableId]?.errors ?? 0);
        const card = svc.a2a.cards.stateOf(c.providerName);
        return {
          stable_id: c.stableId,
          provider: c.providerName,
          state: STATE_OF[c.admission],
          selection_group: c.group,
          weight: c.weight,
          breaker: svc.breakers.stateOf(c.identity) ?? 'closed',
          credential_problem: false,
          served: mine,
          share: served === 0 ? null : mine / served,
          error_rate: attempts === 0 ? null : failed / attempts,
          card_read: card.view !== null,
          card_age_s: card.readAt === null ? null : Math.max(0, Math.round((nowMs - card.readAt) / 1000)),
          card_problem: card.problem === null ? null : withoutAddresses(card.problem, c.server),
        };
      }),
    );
    return { agent: name, policy: route.policy, admits_new: route.admitsNew, served, candidates };
  });
}

/** The page's `a2a` facts besides the agents: the ids tracked. */
export async function pageA2a(svc: Services, gen: Generation): Promise<Record<string, unknown> | null> {
  if (gen.agents.names.length === 0 && Object.keys(gen.agents.servers).length === 0) return null;
  return { ...(await tasksTracked(svc)), store: gen.config.governance.store };
}

/** A card problem may name the agent's address: the page shows none. */
function withoutAddresses(problem: string, s: AgentServerRuntime): string {
  const { host } = new URL(s.baseUrl);
  return problem.replaceAll(s.cardUrl, 'the agent').replaceAll(s.baseUrl, 'the agent').replaceAll(host, 'the agent');
}
