import type { ScopeStatus } from '../governance/index.js';
import type { Generation, GenerationChanges, GenerationRoute, Keyring } from '../live/index.js';
import { type ExposedTool, policyOf, type Services } from '../request/index.js';
import type { BreakerState } from '../resilience/index.js';
import type { RoutableCandidate } from '../routing/index.js';
import { type RecentModel, SLOT_MS, type TrafficPoint } from '../telemetry/index.js';
import { pageAgents } from './a2a-view.js';
import { cacheView } from './cache-view.js';
import { guardrailsView } from './guardrail-view.js';
import type { ReplicasView } from './heartbeat.js';
import type { ReloadResult } from './reload.js';

// GET /admin/status/page-data: what the status page shows, shaped for it (docs/status-page.md).
// /admin/status stays the complete machine-readable view; this one adds what a person needs
// at a glance (ages, recent traffic per candidate of each model and each /mcp tool, the
// 15-minute series, withdrawn overlay candidates) and leaves out what they do not
// (credential references, base URLs, config hashes). Nothing in it is a secret.

/** "Recent" for the per-candidate share and error rate. */
export const RECENT_MS = 5 * 60_000;

export type CandidateState = 'serving' | 'draining' | 'withdrawn' | 'unroutable';

/** What a model's candidate and a tool's share on the page. */
export interface PageCandidateRow {
  readonly stable_id: string;
  readonly provider: string;
  /** serving = new_and_existing; draining = existing_only; withdrawn = none; unroutable = its cluster names no provider. */
  readonly state: CandidateState;
  readonly selection_group: number | null;
  readonly weight: number | null;
  /** null when the candidate has no provider to break. */
  readonly breaker: BreakerState | null;
  readonly credential_problem: boolean;
  /** Requests it served in the last 5 minutes, and their share of the model's (or tool's). */
  readonly served: number;
  readonly share: number | null;
  /**
   * Its failed attempts plus its served requests that then failed, over its attempts, in the
   * last 5 minutes; null when nothing was attempted.
   */
  readonly error_rate: number | null;
}

export interface PageCandidate extends PageCandidateRow {
  readonly upstream_model: string | null;
}

export interface PageToolCandidate extends PageCandidateRow {
  /** The tool's name on its server; null for an overlay candidate routing dropped. */
  readonly upstream_tool: string | null;
  /** Whether its server lists the tool now: one that does not is neither offered nor called. */
  readonly listed: boolean;
}

export interface PageModel {
  readonly model: string;
  readonly policy: string | null;
  /** Whether a new request for it is served (false: every group drains, or no route). */
  readonly admits_new: boolean;
  readonly routed: boolean;
  readonly served: number;
  readonly candidates: readonly PageCandidate[];
}

export interface PageTool {
  /** The exposed name, as tools/list shows it. */
  readonly tool: string;
  readonly policy: string | null;
  /** Whether tools/list offers it to a new session (false: every group drains, no server lists it, or no route). */
  readonly admits_new: boolean;
  /** A static route, an overlay route or a tools_from source names it. */
  readonly routed: boolean;
  /** Some candidate's server lists it now. */
  readonly listed: boolean;
  /** tools/call it served in the last 5 minutes. */
  readonly served: number;
  readonly candidates: readonly PageToolCandidate[];
}

export interface PageContext {
  readonly svc: Services;
  readonly history: readonly ReloadResult[];
  readonly acceptedRevision: string | null;
  readonly revisionServingSince: string | null;
  readonly lastRejection: ReloadResult | null;
  readonly lastOverlayRejection: { at: string; reason: string; message: string } | null;
  readonly startedAt: number;
  readonly governance: Record<string, unknown> | null;
  /** The /a2a endpoints' ids tracked (read before, since the store may be Redis); null without agents. */
  readonly a2a: Record<string, unknown> | null;
  /** Every replica's heartbeat (read before: the records are in the database or Redis). */
  readonly replicas: (ReplicasView & { readonly error: string | null }) | null;
}

export function pageData(ctx: PageContext, nowMs: number): Record<string, unknown> {
  const { svc } = ctx;
  const gen = svc.holder.ready ? svc.holder.current() : null;
  const keyring = svc.keyring.ready ? svc.keyring.current() : null;
  const ageS = (iso: string | null | undefined): number | null =>
    iso == null ? null : Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000));
  return {
    now: new Date(nowMs).toISOString(),
    uptime_s: Math.round((nowMs - ctx.startedAt) / 1000),
    generation: gen === null ? null : { number: gen.number, built_at: gen.builtAt, age_s: ageS(gen.builtAt) },
    // With no key (from the file or the database) the gateway is open: every caller is anonymous.
    access: keyring === null ? null : accessOf(svc, keyring),
    overlay:
      gen === null || gen.config.routing.overlay === undefined
        ? null
        : {
            serving_revision: gen.overlay?.revision ?? null,
            serving_since: ctx.revisionServingSince,
            serving_age_s: ageS(ctx.revisionServingSince),
            rendered_at: gen.overlay?.renderedAt ?? null,
            rendered_age_s: ageS(gen.overlay?.renderedAt),
            source_generation: gen.overlay?.sourceGeneration ?? null,
            accepted_revision: ctx.acceptedRevision,
            selection_mode: gen.overlay?.selectionMode ?? null,
            candidate_count: gen.overlay?.candidateCount ?? 0,
            unroutable_count: gen.overlay?.unroutable.length ?? 0,
            last_rejection:
              ctx.lastOverlayRejection === null ? null : { ...ctx.lastOverlayRejection, age_s: ageS(ctx.lastOverlayRejection.at) },
          },
    last_rejection: ctx.lastRejection === null ? null : rejectionView(ctx.lastRejection, ageS(ctx.lastRejection.at)),
    reloads: [...ctx.history].reverse().map((r) => reloadView(r, ageS(r.at))),
    providers:
      gen === null
        ? []
        : [
            ...Object.values(gen.providers).map((p) => providerView(svc, p.name, p.type, p.identity, p.pool.inflight, nowMs)),
            ...Object.values(gen.tools.servers).map((s) => providerView(svc, s.name, 'mcp', s.identity, s.pool.inflight, nowMs)),
            ...Object.values(gen.agents.servers).map((s) => providerView(svc, s.name, 'a2a', s.identity, s.pool.inflight, nowMs)),
          ],
    models: gen === null ? [] : modelsView(gen, svc, svc.recent.models(nowMs, RECENT_MS)),
    tools: gen === null ? [] : toolsView(gen, svc, svc.mcp.recent.models(nowMs, RECENT_MS)),
    agents: gen === null ? [] : pageAgents(svc, gen, nowMs, RECENT_MS),
    a2a: ctx.a2a,
    replicas:
      ctx.replicas === null
        ? null
        : {
            ...ctx.replicas,
            data: ctx.replicas.data.map((r) => ({
              ...r,
              self: r.instance === ctx.replicas?.instance,
              built_age_s: ageS(r.built_at),
              heartbeat_age_s: ageS(r.heartbeat_at),
            })),
          },
    guardrails: gen === null ? [] : guardrailsView(gen.config, keyring, svc.guardrailStats),
    cache: gen === null ? null : cacheView(gen.config, svc.cacheStats),
    mcp:
      gen === null
        ? null
        : {
            sessions: svc.mcp.sessions.size,
            servers: svc.mcp.status().map((m) => ({
              provider: m.provider,
              tools: m.tools?.length ?? null,
              refreshed_at: m.refreshed_at,
              refreshed_age_s: ageS(m.refreshed_at),
              problem: m.problem === null ? null : withoutAddress(m.problem, m.url),
              stream_open: m.stream_open,
            })),
          },
    recent_window_s: RECENT_MS / 1000,
    teams: teamsView(ctx.governance),
    // The "Teams and keys" and "Providers and routes" views read /admin/v1/ themselves; this says
    // whether there is a database, at which version, and which topology writes it takes.
    database:
      gen?.config.database === undefined
        ? null
        : {
            engine: gen.config.database.url.startsWith('sqlite:') ? 'sqlite' : 'postgres',
            version: keyring?.managed?.version ?? null,
            topology: gen.config.database.topology,
            topology_seeded: gen.topology.seededAt !== null,
          },
    traffic: { slot_s: SLOT_MS / 1000, points: svc.recent.series(nowMs).map((p) => pointView(p, nowMs)) },
  };
}

/** `seconds`: how much of the slot has passed (less than 10 for the slot still filling), for rates. */
function pointView(p: TrafficPoint, nowMs: number): Record<string, unknown> {
  const seconds = Math.max(1, Math.min(SLOT_MS, nowMs - p.at) / 1000);
  return { at: new Date(p.at).toISOString(), seconds, requests: p.requests, errors: p.errors, p50_ms: p.p50Ms, p99_ms: p.p99Ms };
}

function rejectionView(r: ReloadResult, ageS: number | null): Record<string, unknown> {
  return { at: r.at, age_s: ageS, trigger: r.trigger, reason: r.reason ?? null, errors: errorsOf(r) };
}

function errorsOf(r: ReloadResult): string[] {
  return r.errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`));
}

function reloadView(r: ReloadResult, ageS: number | null): Record<string, unknown> {
  return {
    at: r.at,
    age_s: ageS,
    trigger: r.trigger,
    result: r.result,
    duration_ms: r.duration_ms,
    generation: r.generation,
    previous_generation: r.previous_generation,
    revision: r.revision ?? null,
    reason: r.reason ?? null,
    changes: r.changes === null ? [] : describeChanges(r.changes),
    errors: errorsOf(r),
    warnings: r.warnings,
  };
}

/** A reload's changes as short sentences, for the timeline, in this order. */
const CHANGE_SENTENCES: ReadonlyArray<readonly [label: string, key: keyof GenerationChanges]> = [
  ['providers added', 'providersAdded'],
  ['providers removed', 'providersRemoved'],
  ['providers changed', 'providersChanged'],
  ['routes added', 'routesAdded'],
  ['routes removed', 'routesRemoved'],
  ['routes changed', 'routesChanged'],
  ['pricing changed', 'pricingChanged'],
  ['overlay revision changed', 'revisionChanged'],
  ['candidates added', 'candidatesAdded'],
  ['candidates removed', 'candidatesRemoved'],
  ['tools added', 'toolsAdded'],
  ['tools removed', 'toolsRemoved'],
  ['tools changed', 'toolsChanged'],
  ['agents added', 'agentsAdded'],
  ['agents removed', 'agentsRemoved'],
  ['agents changed', 'agentsChanged'],
  ['teams added', 'teamsAdded'],
  ['teams removed', 'teamsRemoved'],
  ['teams changed', 'teamsChanged'],
  ['keys added', 'keysAdded'],
  ['keys removed', 'keysRemoved'],
  ['keys changed', 'keysChanged'],
];

export function describeChanges(c: GenerationChanges): string[] {
  const out: string[] = [];
  for (const [label, key] of CHANGE_SENTENCES) {
    const value = c[key];
    if (value === true) out.push(label);
    else if (Array.isArray(value) && value.length > 0) {
      out.push(`${label}: ${value.slice(0, 5).join(', ')}${value.length > 5 ? ` and ${value.length - 5} more` : ''}`);
    }
  }
  return out;
}

function providerView(svc: Services, name: string, type: string, identity: string, inflight: number, nowMs: number) {
  const b = svc.breakers.view(identity);
  return {
    name,
    type,
    breaker: b?.state ?? 'closed',
    consecutive_failures: b?.consecutiveFailures ?? 0,
    open_for_ms: b?.openUntilMs == null ? null : Math.max(0, b.openUntilMs - nowMs),
    inflight,
  };
}

/** A server's problem names its address when it could not be reached: the page shows no base URL. */
function withoutAddress(problem: string, url: string): string {
  const { host } = new URL(url);
  return problem.replaceAll(url, 'the server').replaceAll(host, 'the server');
}

const STATE_OF = { new_and_existing: 'serving', existing_only: 'draining', none: 'withdrawn' } as const;

/** A model's or a tool's candidates as routing holds them (GenerationRoute, ToolRoute). */
interface RoutedCandidate extends RoutableCandidate {
  readonly credentialProblem: string | null;
}

/** Requests the model (or tool) served recently, whichever candidate served them. */
function servedOf(recent: RecentModel | undefined): number {
  return recent === undefined ? 0 : Object.values(recent.served).reduce((n, c) => n + c.served, 0);
}

function candidateRow(c: RoutedCandidate, svc: Services, recent: RecentModel | undefined, served: number): PageCandidateRow {
  const mine = recent?.served[c.stableId]?.served ?? 0;
  const errors = recent?.served[c.stableId]?.errors ?? 0;
  const failed = recent?.failed[c.stableId] ?? 0;
  const attempts = mine + failed;
  return {
    stable_id: c.stableId,
    provider: c.providerName,
    state: STATE_OF[c.admission],
    selection_group: c.group,
    weight: c.weight,
    breaker: svc.breakers.stateOf(c.identity) ?? 'closed',
    credential_problem: c.credentialProblem !== null,
    served: mine,
    share: served === 0 ? null : mine / served,
    error_rate: attempts === 0 ? null : (failed + errors) / attempts,
  };
}

/**
 * The overlay's candidates of one kind that routing dropped (withdrawn, or unroutable), by
 * model or tool name: listed after the routed ones so that they stay visible.
 */
function droppedRows(gen: Generation, svc: Services, kind: 'inference_model' | 'mcp_tool'): Map<string, PageCandidateRow[]> {
  const out = new Map<string, PageCandidateRow[]>();
  const overlay = gen.overlay;
  if (overlay === null) return out;
  const unroutable = new Set(overlay.unroutable.filter((u) => u.kind === kind).map((u) => u.stable_id));
  for (const c of overlay.parsed.candidates) {
    if (c.kind !== kind) continue;
    if (c.admissionState !== 'none' && !unroutable.has(c.stableId)) continue;
    const identity = kind === 'mcp_tool' ? gen.tools.servers[c.cluster]?.identity : gen.providers[c.cluster]?.identity;
    const list = out.get(c.name) ?? [];
    list.push({
      stable_id: c.stableId,
      provider: c.cluster,
      state: unroutable.has(c.stableId) ? 'unroutable' : 'withdrawn',
      selection_group: c.selectionGroup ?? null,
      weight: c.trafficWeight,
      breaker: identity === undefined ? null : (svc.breakers.stateOf(identity) ?? 'closed'),
      credential_problem: false,
      served: 0,
      share: null,
      error_rate: null,
    });
    out.set(c.name, list);
  }
  return out;
}

/** Adds the dropped candidates to their entry, or as an entry of their own when nothing routes the name. */
function withDropped<C, T extends { readonly candidates: readonly C[] }>(
  byName: Map<string, T>,
  dropped: Map<string, readonly C[]>,
  unrouted: (name: string, candidates: readonly C[]) => T,
): T[] {
  for (const [name, list] of dropped) {
    const entry = byName.get(name);
    byName.set(name, entry === undefined ? unrouted(name, list) : { ...entry, candidates: [...entry.candidates, ...list] });
  }
  return [...byName.values()];
}

/**
 * Every model the generation routes, then overlay models with no route (every candidate
 * withdrawn or unroutable). Candidates in route order, the overlay's dropped ones after them.
 */
function modelsView(gen: Generation, svc: Services, recent: Record<string, RecentModel>): PageModel[] {
  const models = new Map<string, PageModel>();
  for (const route of Object.values(gen.routes)) models.set(route.model, routeView(route, svc, recent[route.model]));
  const dropped = new Map<string, PageCandidate[]>();
  for (const [name, rows] of droppedRows(gen, svc, 'inference_model'))
    dropped.set(
      name,
      rows.map((row) => ({ ...row, upstream_model: null })),
    );
  return withDropped(models, dropped, (model, candidates) => ({
    model,
    policy: null,
    admits_new: false,
    routed: false,
    served: 0,
    candidates,
  }));
}

function routeView(route: GenerationRoute, svc: Services, recent: RecentModel | undefined): PageModel {
  const served = servedOf(recent);
  const candidates = route.groups.flatMap((g) =>
    g.candidates.map((c): PageCandidate => ({ ...candidateRow(c, svc, recent, served), upstream_model: c.upstreamModel })),
  );
  return { model: route.model, policy: route.policy, admits_new: route.admitsNew, routed: true, served, candidates };
}

/**
 * Every tool the /mcp endpoint exposes now (name order, as tools/list), then the tool routes
 * no server lists (not offered, not called), then overlay tools with no route. An exposed
 * tool shows its route's every candidate, each saying whether its server lists the tool.
 */
function toolsView(gen: Generation, svc: Services, recent: Record<string, RecentModel>): PageTool[] {
  const view = svc.mcp.view(gen);
  const tools = new Map<string, PageTool>();
  const names = [...view.names, ...Object.keys(gen.tools.routes).filter((name) => !view.tools.has(name))];
  for (const name of names) {
    const exposed = view.tools.get(name);
    // A tools_from tool has no route of the generation's: its view route is its whole route.
    const route = gen.tools.routes[name] ?? (exposed as ExposedTool).route;
    const served = servedOf(recent[name]);
    const candidates = route.groups.flatMap((g) =>
      g.candidates.map(
        (c): PageToolCandidate => ({
          ...candidateRow(c, svc, recent[name], served),
          upstream_tool: c.upstreamTool,
          listed: exposed?.definitions.has(c) ?? false,
        }),
      ),
    );
    tools.set(name, {
      tool: name,
      policy: route.policy,
      admits_new: exposed?.route.admitsNew ?? false,
      routed: true,
      listed: exposed !== undefined,
      served,
      candidates,
    });
  }
  const dropped = new Map<string, PageToolCandidate[]>();
  for (const [name, rows] of droppedRows(gen, svc, 'mcp_tool'))
    dropped.set(
      name,
      rows.map((row) => ({ ...row, upstream_tool: null, listed: false })),
    );
  return withDropped(tools, dropped, (tool, candidates) => ({
    tool,
    policy: null,
    admits_new: false,
    routed: false,
    listed: false,
    served: 0,
    candidates,
  }));
}

/** Per team: spend this month against the budget, requests this minute against the limit, tokens today against the quota. */
function teamsView(governance: Record<string, unknown> | null): Record<string, unknown> | null {
  if (governance === null) return null;
  // The store's health, as /admin/status reports it: which store, up or not, the last error.
  const store = {
    kind: governance.store ?? null,
    up: governance.store_up ?? null,
    errors: governance.store_errors ?? 0,
    last_error: governance.last_store_error ?? null,
  };
  if (typeof governance.error === 'string') return { error: governance.error, store, teams: [] };
  const teams = (governance.teams ?? {}) as Record<string, ScopeStatus>;
  return {
    error: null,
    store,
    teams: Object.entries(teams).map(([team, s]) => ({
      team,
      spend_usd: s.spendThisMonthMicroUsd.used / 1e6,
      budget_usd: s.spendThisMonthMicroUsd.limit === null ? null : s.spendThisMonthMicroUsd.limit / 1e6,
      requests_this_minute: s.requestsThisMinute.used,
      rpm_limit: s.requestsThisMinute.limit,
      tokens_today: s.tokensToday.used,
      tokens_per_day_limit: s.tokensToday.limit,
    })),
  };
}

/** Who may call: keys, signed-in callers (their issuers and mode), or anyone. */
function accessOf(svc: Services, keyring: Keyring): { open: boolean; keys: number; issuers: string[]; mode: string | null } {
  const keys = policyOf(keyring).keys;
  const jwt = svc.auth.config;
  return {
    open: keys.open && (jwt === null || jwt.mode === 'optional'),
    keys: keys.byId.size,
    issuers: jwt === null ? [] : jwt.issuers.map((i) => i.id),
    mode: jwt?.mode ?? null,
  };
}
