// Candidate rules of contract v1: credential values, shape, uniqueness, selection groups.
// Every pass is linear in the number of candidates (maps, never nested loops): the reload
// path validates a 1024-candidate overlay while the gateway serves.
import { findCredentialValue } from './credential-value.js';
import type { CandidateWire } from './schema.js';
import { candidateSchema, describeIssue } from './schema.js';
import type { AdmissionState, OverlayCandidate, Rejection } from './types.js';
import { reject } from './types.js';

type CandidatesResult = { ok: true; candidates: readonly OverlayCandidate[] } | Rejection;

/**
 * Validates raw candidates (as parsed from JSON) and returns them normalized and frozen.
 * `at` is the path of the array in the file: `overlay.candidates` or `candidates`.
 */
export function validateCandidates(raw: readonly unknown[], at: string): CandidatesResult {
  // Credential values first: a leaked secret is the finding that matters most, whatever
  // else is wrong with the candidate.
  for (let i = 0; i < raw.length; i++) {
    const finding = findCredentialValue(raw[i]);
    if (finding) {
      return reject(
        'credential_value',
        `${at}[${i}]${finding.path}: ${finding.what}; overlays may carry credential references (credential.secretRef) only`,
      );
    }
  }

  const candidates: OverlayCandidate[] = [];
  const byTuple = new Map<string, number>();
  const byStableId = new Map<string, number>();
  for (let i = 0; i < raw.length; i++) {
    const parsed = candidateSchema.safeParse(raw[i]);
    if (!parsed.success) return reject('invalid_candidate', describeIssue(`${at}[${i}]`, parsed.error));
    const candidate = toCandidate(parsed.data);

    // NUL cannot occur in a bounded string, so it separates the tuple unambiguously.
    const tuple = `${candidate.kind}\0${candidate.name}\0${candidate.site}\0${candidate.cluster}`;
    const sameTuple = byTuple.get(tuple);
    if (sameTuple !== undefined) {
      return reject('duplicate_candidate', `${at}[${i}]: same (kind, name, site, cluster) as ${at}[${sameTuple}]`);
    }
    byTuple.set(tuple, i);

    const sameId = byStableId.get(candidate.stableId);
    if (sameId !== undefined) {
      const defaulted = parsed.data.stable_id === undefined ? ' (defaulted to kind/name/site/cluster)' : '';
      return reject(
        'duplicate_stable_id',
        `${at}[${i}].stable_id${defaulted}: ${JSON.stringify(candidate.stableId)} is already used by ${at}[${sameId}]`,
      );
    }
    byStableId.set(candidate.stableId, i);
    candidates.push(Object.freeze(candidate));
  }

  const groupProblem = checkSelectionGroups(candidates, at);
  if (groupProblem) return groupProblem;
  return { ok: true, candidates: Object.freeze(candidates) };
}

function toCandidate(wire: CandidateWire): OverlayCandidate {
  const candidate: OverlayCandidate = {
    kind: wire.kind,
    name: wire.name,
    site: wire.site,
    cluster: wire.cluster,
    fresh: wire.fresh,
    stableId: wire.stable_id ?? `${wire.kind}/${wire.name}/${wire.site}/${wire.cluster}`,
    admissionState: wire.admission_state ?? 'new_and_existing',
    trafficWeight: wire.traffic_weight ?? 1,
  };
  if (wire.rank !== undefined) candidate.rank = wire.rank;
  if (wire.selection_tier !== undefined) candidate.selectionTier = wire.selection_tier;
  if (wire.selection_group !== undefined) candidate.selectionGroup = wire.selection_group;
  if (typeof wire.region === 'string' && wire.region !== '' && Buffer.byteLength(wire.region) <= 256) candidate.region = wire.region;
  if (wire.credential !== undefined) {
    const { strategy, secretRef } = wire.credential;
    candidate.credential = Object.freeze({
      strategy,
      secretRef: Object.freeze({ name: secretRef.name, namespace: secretRef.namespace, key: secretRef.key }),
    });
  }
  return candidate;
}

interface ModelGroups {
  name: string;
  firstWithGroup: number;
  firstWithoutGroup: number;
  /** selection_group -> the admission state of its first member, and that member's index. */
  groups: Map<number, { state: AdmissionState; index: number }>;
  highestGroupIndex: number;
}

/**
 * Per model (kind + name): either every candidate has a selection_group or none has; the
 * groups are 0, 1, 2 … with no gap; all members of a group share one admission state.
 */
function checkSelectionGroups(candidates: readonly OverlayCandidate[], at: string): Rejection<'invalid_selection_group'> | undefined {
  const models = new Map<string, ModelGroups>();
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!;
    const key = `${c.kind}\0${c.name}`;
    let model = models.get(key);
    if (!model) {
      model = { name: c.name, firstWithGroup: -1, firstWithoutGroup: -1, groups: new Map(), highestGroupIndex: -1 };
      models.set(key, model);
    }
    if (c.selectionGroup === undefined) {
      if (model.firstWithGroup >= 0) return mixed(at, i, model.firstWithGroup, model.name);
      if (model.firstWithoutGroup < 0) model.firstWithoutGroup = i;
      continue;
    }
    if (model.firstWithoutGroup >= 0) return mixed(at, i, model.firstWithoutGroup, model.name);
    if (model.firstWithGroup < 0) model.firstWithGroup = i;
    const group = model.groups.get(c.selectionGroup);
    if (group === undefined) {
      model.groups.set(c.selectionGroup, { state: c.admissionState, index: i });
    } else if (group.state !== c.admissionState) {
      return reject(
        'invalid_selection_group',
        `${at}[${i}].admission_state: "${c.admissionState}" differs from "${group.state}" of ${at}[${group.index}] ` +
          `in selection_group ${c.selectionGroup} of model ${JSON.stringify(model.name)}; a group has one admission state`,
      );
    }
    const highest = model.highestGroupIndex < 0 ? -1 : candidates[model.highestGroupIndex]!.selectionGroup!;
    if (c.selectionGroup > highest) model.highestGroupIndex = i;
  }

  for (const model of models.values()) {
    const { groups } = model;
    if (groups.size === 0) continue;
    const highest = candidates[model.highestGroupIndex]!.selectionGroup!;
    if (highest === groups.size - 1) continue;
    // Groups are distinct integers >= 0, so the smallest missing one is at most groups.size.
    let missing = 0;
    while (groups.has(missing)) missing++;
    return reject(
      'invalid_selection_group',
      `${at}[${model.highestGroupIndex}].selection_group: model ${JSON.stringify(model.name)} uses group ${highest} ` +
        `but has no group ${missing}; groups start at 0 and are contiguous`,
    );
  }
  return undefined;
}

function mixed(at: string, index: number, other: number, name: string): Rejection<'invalid_selection_group'> {
  return reject(
    'invalid_selection_group',
    `${at}[${index}].selection_group: model ${JSON.stringify(name)} mixes candidates with and without selection_group ` +
      `(see ${at}[${other}]); give every candidate of a model a group, or none`,
  );
}
