import { isDeepStrictEqual } from 'node:util';
import type { Generation } from './generation.js';

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
  if (!isDeepStrictEqual({ ...serving.governance, default_max_tokens: 0 }, { ...next.governance, default_max_tokens: 0 }))
    changed.push('governance (store settings)');
  if (!isDeepStrictEqual(serving.audit, next.audit)) changed.push('audit');
  if (!isDeepStrictEqual(serving.telemetry, next.telemetry)) changed.push('telemetry');
  const before = serving.routing.overlay;
  const after = next.routing.overlay;
  if (before !== undefined && after !== undefined) {
    if (before.file !== after.file) changed.push('routing.overlay.file');
    if (!isDeepStrictEqual(before.reload, after.reload)) changed.push('routing.overlay.reload');
  }
  return changed.map((path) => `${path}: changed, but takes effect only after a restart; the running value is kept`);
}

function stableIds(gen: Generation | null): Set<string> {
  const ids = new Set<string>();
  if (gen === null) return ids;
  for (const route of Object.values(gen.routes)) for (const id of Object.keys(route.byStableId)) ids.add(id);
  return ids;
}

export function diffGenerations(previous: Generation | null, next: Generation): GenerationChanges {
  const before = previous?.config;
  const after = next.config;
  const providersBefore = before?.providers ?? {};
  const routesBefore = before?.routing.routes ?? {};
  const routesAfter = after.routing.routes ?? {};
  const idsBefore = stableIds(previous);
  const idsAfter = stableIds(next);
  return {
    providersAdded: Object.keys(after.providers).filter((n) => providersBefore[n] === undefined),
    providersRemoved: Object.keys(providersBefore).filter((n) => after.providers[n] === undefined),
    providersChanged: Object.keys(after.providers).filter(
      (n) => providersBefore[n] !== undefined && !isDeepStrictEqual(providersBefore[n], after.providers[n]),
    ),
    routesAdded: Object.keys(routesAfter).filter((m) => routesBefore[m] === undefined),
    routesRemoved: Object.keys(routesBefore).filter((m) => routesAfter[m] === undefined),
    routesChanged: Object.keys(routesAfter).filter(
      (m) => routesBefore[m] !== undefined && !isDeepStrictEqual(routesBefore[m], routesAfter[m]),
    ),
    pricingChanged: before !== undefined && !isDeepStrictEqual(before.pricing, after.pricing),
    revisionChanged: (previous?.overlay?.revision ?? null) !== (next.overlay?.revision ?? null),
    candidatesAdded: [...idsAfter].filter((id) => !idsBefore.has(id)),
    candidatesRemoved: [...idsBefore].filter((id) => !idsAfter.has(id)),
  };
}
