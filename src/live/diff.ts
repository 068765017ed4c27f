import { isDeepStrictEqual } from 'node:util';
import { candidatesOf } from '../routing/index.js';
import type { Generation, GenerationRoute } from './generation.js';
import { RELOAD_SLICE_MS, runSteps, runStepsInSlices, type Steps } from './steps.js';

export interface GenerationChanges {
  readonly providersAdded: readonly string[];
  readonly providersRemoved: readonly string[];
  /** Re-pointed, re-keyed or re-tuned providers. */
  readonly providersChanged: readonly string[];
  readonly routesAdded: readonly string[];
  readonly routesRemoved: readonly string[];
  readonly routesChanged: readonly string[];
  readonly pricingChanged: boolean;
  /** Overlay mode: whether the revision changed, and candidates (by stable_id) that came and went. */
  readonly revisionChanged: boolean;
  readonly candidatesAdded: readonly string[];
  readonly candidatesRemoved: readonly string[];
  /** Tool routes of /mcp by exposed name: `routing.tools`, or the overlay's mcp_tool candidates. */
  readonly toolsAdded: readonly string[];
  readonly toolsRemoved: readonly string[];
  readonly toolsChanged: readonly string[];
  /** Agents of /a2a by exposed name (routing.agents). */
  readonly agentsAdded: readonly string[];
  readonly agentsRemoved: readonly string[];
  readonly agentsChanged: readonly string[];
  /** Teams and keys (by id, never a secret), the config file's and the database's together. */
  readonly teamsAdded: readonly string[];
  readonly teamsRemoved: readonly string[];
  readonly teamsChanged: readonly string[];
  readonly keysAdded: readonly string[];
  readonly keysRemoved: readonly string[];
  /** Limits, models, expiry or secret changed (a rotation, a revoke that keeps the record). */
  readonly keysChanged: readonly string[];
}

/** Keys whose new value takes a restart; a reload reports them and applies the rest. */
const RESTART_ONLY: readonly (keyof Generation['config']['server'])[] = [
  'listen',
  'admin_listen',
  'max_body_bytes',
  'drain_timeout_ms',
  'drain_delay_ms',
  'max_connections',
  'headers_timeout_ms',
  'body_timeout_ms',
  'keep_alive_timeout_ms',
  'watch_config',
  'watch_debounce_ms',
];

export function restartOnlyWarnings(serving: Generation['config'], next: Generation['config']): string[] {
  const changed = RESTART_ONLY.filter((key) => !isDeepStrictEqual(serving.server[key], next.server[key])).map((key) => `server.${key}`);
  if (
    !isDeepStrictEqual(
      { ...serving.governance, default_max_tokens: 0, cap_output: true },
      { ...next.governance, default_max_tokens: 0, cap_output: true },
    )
  )
    changed.push('governance (store settings)');
  if (!isDeepStrictEqual(serving.audit, next.audit)) changed.push('audit');
  // The connection, its change watch and the ledger are made once, at start.
  if (!isDeepStrictEqual(serving.database, next.database)) changed.push('database');
  if (!isDeepStrictEqual(serving.telemetry, next.telemetry)) changed.push('telemetry');
  // One replica's store of task owners is sized once, at start.
  if (serving.a2a.tasks.max_entries !== next.a2a.tasks.max_entries) changed.push('a2a.tasks.max_entries');
  // The response store is built once, at start: its bounds follow a reload, its backend does not.
  if ((serving.routing.responses?.store ?? 'memory') !== (next.routing.responses?.store ?? 'memory'))
    changed.push('routing.responses.store');
  // The response cache's store is built once, at start: what a request reads of `cache` follows a reload, the store does not.
  const cacheStore = (c: Generation['config']['cache']) => [
    c.store,
    c.redis_url,
    c.redis_username,
    c.redis_password,
    c.redis_tls,
    c.max_bytes,
  ];
  if (!isDeepStrictEqual(cacheStore(serving.cache), cacheStore(next.cache))) changed.push('cache (store settings)');
  const before = serving.routing.overlay;
  const after = next.routing.overlay;
  if (before !== undefined && after !== undefined) {
    if (before.file !== after.file) changed.push('routing.overlay.file');
    if (!isDeepStrictEqual(before.reload, after.reload)) changed.push('routing.overlay.reload');
  }
  return changed.map((path) => `${path}: changed, but takes effect only after a restart; the running value is kept`);
}

/** Adds every candidate's stable id in `gen` to `ids`, pausing after each route. */
function* collectStableIds(gen: Generation | null, ids: Set<string>): Steps<void> {
  if (gen === null) return;
  // By the generation's list of names: the keys of a map of 60k routes take 10-15 ms in one piece.
  for (const model of gen.models) {
    for (const c of candidatesOf(gen.routes[model] as GenerationRoute)) ids.add(c.stableId);
    yield;
  }
}

/** What changed from `previous` to `next`, for the reload's log line and admin answer. */
export function diffGenerations(previous: Generation | null, next: Generation): GenerationChanges {
  return runSteps(diffSteps(previous, next));
}

/** diffGenerations in slices of about `sliceMs`: a diff of tens of thousands of routes takes a while. */
export function diffGenerationsInSlices(
  previous: Generation | null,
  next: Generation,
  sliceMs = RELOAD_SLICE_MS,
): Promise<GenerationChanges> {
  return runStepsInSlices(diffSteps(previous, next), sliceMs);
}

function* diffSteps(previous: Generation | null, next: Generation): Steps<GenerationChanges> {
  const before = previous?.config;
  const after = next.config;
  const providersBefore = before?.providers ?? {};
  const routesBefore = before?.routing.routes ?? {};
  const routesAfter = after.routing.routes ?? {};
  const idsBefore = new Set<string>();
  const idsAfter = new Set<string>();
  yield* collectStableIds(previous, idsBefore);
  yield* collectStableIds(next, idsAfter);
  const routesAdded: string[] = [];
  const routesChanged: string[] = [];
  // A static config's routes are its generation's, in the same order (live/build.ts).
  const staticModels = (gen: Generation | null): readonly string[] => (gen === null || gen.overlay !== null ? [] : gen.models);
  for (const model of staticModels(next)) {
    const was = routesBefore[model];
    if (was === undefined) routesAdded.push(model);
    else if (!isDeepStrictEqual(was, routesAfter[model])) routesChanged.push(model);
    yield;
  }
  const routesRemoved: string[] = [];
  for (const model of staticModels(previous)) {
    if (routesAfter[model] === undefined) routesRemoved.push(model);
    yield;
  }
  const candidatesAdded: string[] = [];
  for (const id of idsAfter) {
    if (!idsBefore.has(id)) candidatesAdded.push(id);
    yield;
  }
  const candidatesRemoved: string[] = [];
  for (const id of idsBefore) {
    if (!idsAfter.has(id)) candidatesRemoved.push(id);
    yield;
  }
  const tools = named(previous === null ? {} : toolViews(previous), toolViews(next));
  const agents = named(previous === null ? {} : agentViews(previous), agentViews(next));
  const teams = named(before?.teams ?? {}, after.teams ?? {});
  const keys = named(byId(before?.keys ?? []), byId(after.keys ?? []));
  return {
    providersAdded: Object.keys(after.providers).filter((n) => providersBefore[n] === undefined),
    ...capped({
      routesAdded,
      routesRemoved,
      routesChanged,
      candidatesAdded,
      candidatesRemoved,
      toolsAdded: tools.added,
      toolsRemoved: tools.removed,
      toolsChanged: tools.changed,
      agentsAdded: agents.added,
      agentsRemoved: agents.removed,
      agentsChanged: agents.changed,
      teamsAdded: teams.added,
      teamsRemoved: teams.removed,
      teamsChanged: teams.changed,
      keysAdded: keys.added,
      keysRemoved: keys.removed,
      keysChanged: keys.changed,
    }),
    providersRemoved: Object.keys(providersBefore).filter((n) => after.providers[n] === undefined),
    providersChanged: Object.keys(after.providers).filter(
      (n) => providersBefore[n] !== undefined && !isDeepStrictEqual(providersBefore[n], after.providers[n]),
    ),
    pricingChanged: before !== undefined && !isDeepStrictEqual(before.pricing, after.pricing),
    revisionChanged: (previous?.overlay?.revision ?? null) !== (next.overlay?.revision ?? null),
  };
}

/** The names only in `after`, only in `before`, and in both with another value. */
function named(before: Readonly<Record<string, unknown>>, after: Readonly<Record<string, unknown>>) {
  const added: string[] = [];
  const changed: string[] = [];
  for (const [name, value] of Object.entries(after)) {
    if (!Object.hasOwn(before, name)) added.push(name);
    else if (!isDeepStrictEqual(before[name], value)) changed.push(name);
  }
  const removed = Object.keys(before).filter((name) => !Object.hasOwn(after, name));
  return { added, removed, changed };
}

function byId(keys: ReadonlyArray<{ readonly id: string }>): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k.id, k]));
}

/** A tool route as a reload compares it: its candidates (server and tool) and whether calls may be repeated. */
function toolViews(gen: Generation): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, route] of Object.entries(gen.tools.routes)) {
    out[name] = {
      retrySafe: route.retrySafe,
      candidates: [...candidatesOf(route)].map((c) => `${c.stableId}:${c.server.name}:${c.upstreamTool}`),
    };
  }
  return out;
}

/** An agent as a reload compares it: its policy and its candidates (provider, address, weight). */
function agentViews(gen: Generation): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, route] of Object.entries(gen.agents.routes)) {
    out[name] = {
      policy: route.policy,
      candidates: [...candidatesOf(route)].map((c) => `${c.stableId}:${c.server.cardUrl}:${c.weight}`),
    };
  }
  return out;
}

/**
 * At most this many names per list: the rest is one more entry, `… and N more`. A reload
 * of tens of thousands of routes would otherwise log, answer and keep in its history a line
 * of megabytes (and serialise it while traffic waits).
 */
export const CHANGES_LISTED = 50;

function capped<T extends Record<string, string[]>>(lists: T): T {
  const out: Record<string, string[]> = {};
  for (const [name, list] of Object.entries(lists)) {
    out[name] = list.length <= CHANGES_LISTED ? list : [...list.slice(0, CHANGES_LISTED), `… and ${list.length - CHANGES_LISTED} more`];
  }
  return out as T;
}
