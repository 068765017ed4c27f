// What changed between two overlays, per model: the answer to "what will this publish do?".
// Candidates are matched by stable_id, the identity a session binds to.
import type { AdmissionState, OverlayCandidate, ParsedOverlay } from '../contract/index.js';

export interface CandidateRef {
  readonly stableId: string;
  readonly cluster: string;
  readonly site: string;
}

export interface ModelDiff {
  readonly model: string;
  readonly added: readonly CandidateRef[];
  readonly removed: readonly CandidateRef[];
  readonly admission: ReadonlyArray<CandidateRef & { readonly from: AdmissionState; readonly to: AdmissionState }>;
  readonly reweighted: ReadonlyArray<CandidateRef & { readonly from: number; readonly to: number }>;
}

export interface OverlayDiff {
  readonly from: string;
  readonly to: string;
  /** Models with at least one change, sorted by name. */
  readonly models: readonly ModelDiff[];
}

export function diffOverlays(before: ParsedOverlay, after: ParsedOverlay): OverlayDiff {
  const old = byModel(before.candidates);
  const now = byModel(after.candidates);
  const names = [...new Set([...old.keys(), ...now.keys()])].sort();
  const models: ModelDiff[] = [];
  for (const model of names) {
    const a = old.get(model) ?? new Map<string, OverlayCandidate>();
    const b = now.get(model) ?? new Map<string, OverlayCandidate>();
    const diff: ModelDiff = {
      model,
      added: [...b.values()].filter((c) => !a.has(c.stableId)).map(ref),
      removed: [...a.values()].filter((c) => !b.has(c.stableId)).map(ref),
      admission: [...b.values()].flatMap((c) => {
        const was = a.get(c.stableId);
        return was !== undefined && was.admissionState !== c.admissionState
          ? [{ ...ref(c), from: was.admissionState, to: c.admissionState }]
          : [];
      }),
      reweighted: [...b.values()].flatMap((c) => {
        const was = a.get(c.stableId);
        return was !== undefined && was.trafficWeight !== c.trafficWeight
          ? [{ ...ref(c), from: was.trafficWeight, to: c.trafficWeight }]
          : [];
      }),
    };
    if (diff.added.length + diff.removed.length + diff.admission.length + diff.reweighted.length > 0) models.push(diff);
  }
  return { from: before.revision, to: after.revision, models };
}

/** The diff as lines for a terminal: one per change, grouped by model. */
export function formatDiff(diff: OverlayDiff): string {
  const lines = [`revision ${diff.from} -> ${diff.to}`];
  if (diff.models.length === 0) lines.push(diff.from === diff.to ? 'no changes' : 'no candidate changes (order, groups or policy only)');
  for (const m of diff.models) {
    lines.push(`model ${m.model}:`);
    const name = (c: CandidateRef): string => `${c.cluster}@${c.site} (${c.stableId})`;
    for (const c of m.added) lines.push(`  + added      ${name(c)}`);
    for (const c of m.removed) lines.push(`  - removed    ${name(c)}`);
    for (const c of m.admission) lines.push(`  ~ admission  ${name(c)}: ${c.from} -> ${c.to}`);
    for (const c of m.reweighted) lines.push(`  ~ weight     ${name(c)}: ${c.from} -> ${c.to}`);
  }
  return `${lines.join('\n')}\n`;
}

function byModel(candidates: readonly OverlayCandidate[]): Map<string, Map<string, OverlayCandidate>> {
  const out = new Map<string, Map<string, OverlayCandidate>>();
  for (const c of candidates) {
    const m = out.get(c.name) ?? new Map<string, OverlayCandidate>();
    m.set(c.stableId, c);
    out.set(c.name, m);
  }
  return out;
}

function ref(c: OverlayCandidate): CandidateRef {
  return { stableId: c.stableId, cluster: c.cluster, site: c.site };
}
