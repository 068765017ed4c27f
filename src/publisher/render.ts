// Inventory -> overlay contract v1 envelope. Pure: the caller passes which providers are
// healthy and the provenance to stamp, so the same inputs always render the same bytes
// (rendered_at aside, which is outside the revision).
import { computeRevision, type OverlayProvenance, SCHEMA_VERSION, stableIdFor } from '../contract/index.js';
import type { Inventory, InventoryProvider } from './inventory.js';

export const PRODUCER = 'switchyard-publisher';
/** The name of the overlay key (the ConfigMap key, and the file name in both layouts). */
export const OVERLAY_KEY = 'routing-overlay.json';

export type SelectionTier = 'same_site' | 'same_region' | 'cross_region';
const TIER_ORDER: Record<SelectionTier, number> = { same_site: 0, same_region: 1, cross_region: 2 };
type Admission = 'new_and_existing' | 'existing_only';
const ADMISSION_ORDER: Record<Admission, number> = { new_and_existing: 0, existing_only: 1 };

export type RenderedKind = 'inference_model' | 'mcp_tool';

export interface RenderedCandidate {
  kind: RenderedKind;
  name: string;
  site: string;
  cluster: string;
  fresh: true;
  stable_id: string;
  admission_state: Admission;
  rank: number;
  selection_tier: SelectionTier;
  selection_group: number;
  traffic_weight: number;
  /** Its site's region from the inventory: the gateway shows it as the candidate's (an extension field, outside v1's list). */
  region: string;
  credential?: { strategy: 'bearer_token'; secretRef: { name: string; namespace: string; key: string } };
}

export interface Envelope {
  schema_version: string;
  revision: { kind: 'content_addressed'; algorithm: 'sha256'; value: string };
  content_digest: { algorithm: 'sha256'; value: string };
  scope: { network: string; gateway: string; namespace: string; local_site: string };
  provenance: OverlayProvenance;
  overlay: {
    network: string;
    local_site: string;
    selection_policy?: { mode: string };
    candidates: RenderedCandidate[];
    generated_at: string;
  };
}

/** The semantic part of an envelope: what the revision is computed over. */
export interface RenderedOverlay {
  readonly revision: string;
  readonly payload: OverlayPayload;
}

/** `overlay` without its timestamp: what a render decides, before it is stamped. */
export type OverlayPayload = Omit<Envelope['overlay'], 'generated_at'>;

type Unranked = Omit<RenderedCandidate, 'rank' | 'selection_group'>;

export function tierOf(inventory: Inventory, p: InventoryProvider): SelectionTier {
  if (p.site === inventory.local_site) return 'same_site';
  if (inventory.local_region !== undefined && p.region === inventory.local_region) return 'same_region';
  return 'cross_region';
}

/**
 * The candidates and their revision. `isHealthy(cluster)` says whether a provider's health
 * check currently passes (a provider without one is always healthy). `withdrawn` and
 * unhealthy providers are left out; `drain` serves only sessions already bound to it.
 * Models and tools are rendered alike, each (kind, name) ranked and grouped on its own, and
 * the candidates are ordered by (kind, name): every model, then every tool.
 */
export function renderOverlay(inventory: Inventory, isHealthy: (cluster: string) => boolean = () => true): RenderedOverlay {
  const byName = new Map<string, { kind: RenderedKind; name: string; list: Unranked[] }>();
  for (const p of inventory.providers) {
    if (p.state === 'withdrawn' || !isHealthy(p.cluster)) continue;
    const served: Array<[RenderedKind, readonly string[]]> = [
      ['inference_model', p.models],
      ['mcp_tool', p.tools],
    ];
    for (const [kind, names] of served) {
      for (const name of names) {
        const key = `${kind}\u0000${name}`;
        let entry = byName.get(key);
        if (entry === undefined) byName.set(key, (entry = { kind, name, list: [] }));
        entry.list.push(candidateOf(inventory, p, kind, name));
      }
    }
  }
  const candidates: RenderedCandidate[] = [];
  const entries = [...byName.values()].sort((a, b) => compareText(a.kind, b.kind) || compareText(a.name, b.name));
  for (const { list } of entries) {
    list.sort(
      (a, b) =>
        ADMISSION_ORDER[a.admission_state] - ADMISSION_ORDER[b.admission_state] ||
        TIER_ORDER[a.selection_tier] - TIER_ORDER[b.selection_tier] ||
        compareText(a.cluster, b.cluster) ||
        compareText(a.site, b.site),
    );
    // A group holds one admission state and one tier: the gateway serves new sessions from
    // the lowest group that admits them, so tiers fail over in order (docs/overlay-format.md).
    let group = -1;
    let previous: Unranked | undefined;
    list.forEach((c, rank) => {
      if (previous === undefined || previous.admission_state !== c.admission_state || previous.selection_tier !== c.selection_tier)
        group += 1;
      previous = c;
      candidates.push({ ...c, rank, selection_group: group });
    });
  }
  const payload: OverlayPayload = { network: inventory.network, local_site: inventory.local_site, candidates };
  if (inventory.selection_policy !== undefined) payload.selection_policy = { mode: inventory.selection_policy.mode };
  const revision = computeRevision(payload);
  return { revision, payload };
}

function candidateOf(inventory: Inventory, p: InventoryProvider, kind: RenderedKind, name: string): Unranked {
  const c: Unranked = {
    kind,
    name,
    site: p.site,
    cluster: p.cluster,
    fresh: true,
    stable_id: stableIdFor(kind, name, p.site, p.cluster),
    admission_state: p.state === 'drain' ? 'existing_only' : 'new_and_existing',
    selection_tier: tierOf(inventory, p),
    traffic_weight: p.weight,
    region: p.region,
  };
  if (p.credential !== undefined) c.credential = { strategy: 'bearer_token', secretRef: { ...p.credential } };
  return c;
}

/** Wraps a rendered overlay in the v1 envelope, stamped with its provenance. */
export function envelopeFor(
  inventory: Inventory,
  rendered: RenderedOverlay,
  provenance: { sourceUid: string; sourceGeneration: number; producerVersion: string; renderedAt: Date },
): Envelope {
  const at = provenance.renderedAt.toISOString();
  return {
    schema_version: SCHEMA_VERSION,
    revision: { kind: 'content_addressed', algorithm: 'sha256', value: rendered.revision },
    content_digest: { algorithm: 'sha256', value: rendered.revision },
    scope: { network: inventory.network, gateway: inventory.gateway, namespace: inventory.namespace, local_site: inventory.local_site },
    provenance: {
      producer: PRODUCER,
      producer_version: provenance.producerVersion,
      source_name: inventory.network,
      source_uid: provenance.sourceUid,
      source_generation: provenance.sourceGeneration,
      rendered_at: at,
    },
    overlay: { ...rendered.payload, generated_at: at },
  };
}

/** Code-point order, never locale order: the same inventory renders the same everywhere. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Candidates per model (inference_model only), for status and metrics. */
export function candidatesPerModel(payload: OverlayPayload): Record<string, number> {
  return countByName(payload, 'inference_model');
}

/** Candidates per tool (mcp_tool), for status and metrics. */
export function candidatesPerTool(payload: OverlayPayload): Record<string, number> {
  return countByName(payload, 'mcp_tool');
}

function countByName(payload: OverlayPayload, kind: RenderedKind): Record<string, number> {
  // No prototype: a name such as "constructor" is a count like any other.
  const counts = Object.create(null) as Record<string, number>;
  for (const c of payload.candidates) if (c.kind === kind) counts[c.name] = (counts[c.name] ?? 0) + 1;
  return counts;
}
