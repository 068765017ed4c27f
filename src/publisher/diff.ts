// What changed between two overlays, per model and per tool: the answer to "what will this
// publish do?". Candidates are matched by stable_id, the identity a session binds to, within
// one (kind, name): a model and a tool may share a name and are still told apart.
import type { AdmissionState, CandidateKind, OverlayCandidate, ParsedOverlay } from '../contract/index.js';

export interface CandidateRef {
  readonly stableId: string;
  readonly cluster: string;
  readonly site: string;
}

/** The changes to one model's or one tool's candidates. */
export interface CandidateChanges {
  readonly added: readonly CandidateRef[];
  readonly removed: readonly CandidateRef[];
  readonly admission: ReadonlyArray<CandidateRef & { readonly from: AdmissionState; readonly to: AdmissionState }>;
  readonly reweighted: ReadonlyArray<CandidateRef & { readonly from: number; readonly to: number }>;
}

export interface ModelDiff extends CandidateChanges {
  readonly model: string;
}

export interface ToolDiff extends CandidateChanges {
  readonly tool: string;
}

export interface OverlayDiff {
  readonly from: string;
  readonly to: string;
  /** Models with at least one change, sorted by name. */
  readonly models: readonly ModelDiff[];
  /** Tools (mcp_tool candidates) with at least one change, sorted by name. */
  readonly tools: readonly ToolDiff[];
}

export function diffOverlays(before: ParsedOverlay, after: ParsedOverlay): OverlayDiff {
  const models = changesOf('inference_model', before, after).map(([model, changes]) => ({ model, ...changes }));
  const tools = changesOf('mcp_tool', before, after).map(([tool, changes]) => ({ tool, ...changes }));
  return { from: before.revision, to: after.revision, models, tools };
}

/** Per name of one kind, sorted by name, the names whose candidates changed. */
function changesOf(kind: CandidateKind, before: ParsedOverlay, after: ParsedOverlay): Array<[string, CandidateChanges]> {
  const old = byName(kind, before.candidates);
  const now = byName(kind, after.candidates);
  const names = [...new Set([...old.keys(), ...now.keys()])].sort();
  const out: Array<[string, CandidateChanges]> = [];
  for (const name of names) {
    const a = old.get(name) ?? new Map<string, OverlayCandidate>();
    const b = now.get(name) ?? new Map<string, OverlayCandidate>();
    const changes: CandidateChanges = {
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
    if (changes.added.length + changes.removed.length + changes.admission.length + changes.reweighted.length > 0) out.push([name, changes]);
  }
  return out;
}

/** The diff as lines for a terminal: one per change, grouped by model, then by tool. */
export function formatDiff(diff: OverlayDiff): string {
  const lines = [`revision ${diff.from} -> ${diff.to}`];
  if (diff.models.length + diff.tools.length === 0)
    lines.push(diff.from === diff.to ? 'no changes' : 'no candidate changes (order, groups or policy only)');
  for (const m of diff.models) formatChanges(lines, `model ${m.model}:`, m);
  for (const t of diff.tools) formatChanges(lines, `tool ${t.tool}:`, t);
  return `${lines.join('\n')}\n`;
}

function formatChanges(lines: string[], heading: string, changes: CandidateChanges): void {
  lines.push(heading);
  const name = (c: CandidateRef): string => `${c.cluster}@${c.site} (${c.stableId})`;
  for (const c of changes.added) lines.push(`  + added      ${name(c)}`);
  for (const c of changes.removed) lines.push(`  - removed    ${name(c)}`);
  for (const c of changes.admission) lines.push(`  ~ admission  ${name(c)}: ${c.from} -> ${c.to}`);
  for (const c of changes.reweighted) lines.push(`  ~ weight     ${name(c)}: ${c.from} -> ${c.to}`);
}

function byName(kind: CandidateKind, candidates: readonly OverlayCandidate[]): Map<string, Map<string, OverlayCandidate>> {
  const out = new Map<string, Map<string, OverlayCandidate>>();
  for (const c of candidates) {
    if (c.kind !== kind) continue;
    const m = out.get(c.name) ?? new Map<string, OverlayCandidate>();
    m.set(c.stableId, c);
    out.set(c.name, m);
  }
  return out;
}
function ref(c: OverlayCandidate): CandidateRef {
  return { stableId: c.stableId, cluster: c.cluster, site: c.site };
}
