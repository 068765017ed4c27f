import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { describeSecretRef, type OverlayConfig, resolveSecret, type SecretResult } from '../config/index.js';
import type { AdmissionState, OverlayCandidate, ParsedOverlay, SelectionMode } from '../contract/index.js';
import { Credential, candidateProtocol } from '../providers/index.js';
import { type SelectionPolicy, stableIdTable } from '../routing/index.js';
import type { GenerationCandidate, GenerationGroup, GenerationRoute, OverlaySnapshot, ProviderRuntime } from './generation.js';

const POLICY: Record<SelectionMode, SelectionPolicy> = {
  deterministic: 'ordered',
  roundRobin: 'round_robin',
  random: 'random',
  weightedRandom: 'weighted',
};

export interface OverlayRoutes {
  readonly routes: Record<string, GenerationRoute>;
  readonly snapshot: OverlaySnapshot;
}

/**
 * Turns a validated overlay into routes. Candidates are grouped per model, by
 * selection_group, or by admission state when they have none; `none` is dropped; a
 * candidate whose cluster names no configured provider is kept out of routing and
 * reported. A candidate's credential is read from the mount now, once per build, never
 * per request: if it cannot be read the candidate stays, and fails over with a 503-class
 * reason, so one missing secret cannot take a whole revision down.
 */
export function overlayRoutes(
  overlay: ParsedOverlay,
  settings: OverlayConfig,
  providers: Readonly<Record<string, ProviderRuntime>>,
): OverlayRoutes {
  const policy = POLICY[overlay.selectionMode];
  // Many candidates share one secret; read each file once per build.
  const secrets = new Map<string, SecretResult>();
  const readSecret = (file: string): SecretResult => {
    let secret = secrets.get(file);
    if (secret === undefined) secrets.set(file, (secret = resolveSecret({ file }, {})));
    return secret;
  };
  const byModel = new Map<string, OverlayCandidate[]>();
  const unroutable: Array<{ stable_id: string; model: string; cluster: string }> = [];
  const candidatesPerModel: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const c of overlay.candidates) {
    if (c.kind !== 'inference_model') continue;
    candidatesPerModel[c.name] = (candidatesPerModel[c.name] ?? 0) + 1;
    if (c.admissionState === 'none') continue;
    if (providers[c.cluster] === undefined) {
      unroutable.push({ stable_id: c.stableId, model: c.name, cluster: c.cluster });
      continue;
    }
    let list = byModel.get(c.name);
    if (list === undefined) byModel.set(c.name, (list = []));
    list.push(c);
  }

  const routes: Record<string, GenerationRoute> = Object.create(null) as Record<string, GenerationRoute>;
  for (const [model, list] of byModel) {
    const groups = new Map<string, { index: number; admission: AdmissionState; members: GenerationCandidate[] }>();
    const all: GenerationCandidate[] = [];
    for (const c of list) {
      const index = c.selectionGroup ?? 0;
      const candidate = toCandidate(c, index, providers[c.cluster] as ProviderRuntime, settings, readSecret);
      // The contract gives a selection_group one admission state. Ungrouped candidates each
      // keep their own, so they are split by it: an existing_only candidate must never sit
      // in a group that admits new requests, and selection reads admission per group (O(1)).
      const slot = c.selectionGroup === undefined ? `ungrouped:${c.admissionState}` : `group:${index}`;
      let group = groups.get(slot);
      if (group === undefined) groups.set(slot, (group = { index, admission: c.admissionState, members: [] }));
      group.members.push(candidate);
      all.push(candidate);
    }
    const ordered: GenerationGroup[] = [...groups.values()]
      .sort((a, b) => a.index - b.index || admissionOrder(a.admission) - admissionOrder(b.admission))
      .map(({ index, admission, members }) => ({
        index,
        admission,
        candidates: members,
        totalWeight: members.reduce((s, c) => s + c.weight, 0),
        counterKey: counterKey(model, index, policy, members),
      }));
    routes[model] = {
      model,
      policy,
      groups: ordered,
      byStableId: stableIdTable(all),
      admitsNew: ordered.some((g) => g.admission === 'new_and_existing'),
    };
  }

  const snapshot: OverlaySnapshot = {
    revision: overlay.revision,
    format: overlay.format,
    rawSha256: overlay.rawSha256,
    network: overlay.network ?? null,
    localSite: overlay.localSite,
    selectionMode: overlay.selectionMode,
    sourceUid: overlay.provenance?.source_uid ?? null,
    sourceGeneration: overlay.provenance?.source_generation ?? null,
    renderedAt: overlay.provenance?.rendered_at ?? null,
    candidateCount: overlay.candidates.length,
    candidatesPerModel,
    unroutable,
    parsed: overlay,
  };
  return { routes, snapshot };
}

/** Within one group index (ungrouped candidates), the group that admits new requests comes first. */
function admissionOrder(admission: AdmissionState): number {
  return admission === 'new_and_existing' ? 0 : 1;
}

/**
 * The round-robin key of one group: its model, index, policy and members (stable_ids in
 * order), never the revision. A revision that leaves this group as it was keeps its
 * rotation, whatever else it changed; a group whose members change starts a new one.
 * See docs/decisions/0006-overlay-rotation-by-group-content.md.
 */
function counterKey(model: string, index: number, policy: SelectionPolicy, members: readonly GenerationCandidate[]): string {
  const content = JSON.stringify([policy, members.map((c) => c.stableId)]);
  return `overlay:${model}:${index}:${createHash('sha256').update(content).digest('hex').slice(0, 16)}`;
}

/**
 * Reads a candidate credential only if it really lives under the mount. The contract admits
 * plain names only, and the path is checked as text; then, since a link inside the mount can
 * point anywhere, the file's real path must be under the mount's real path (ADR 0013: a link
 * out of the mount was followed and its target sent upstream). The kubelet's own links
 * (`key -> ..data/key`, `..data -> ..<timestamp>`) stay inside the mount, so they resolve.
 * The resolved path is what is read, so a link swapped after the check is not followed.
 */
function containedSecret(base: string, file: string, readSecret: (file: string) => SecretResult): SecretResult {
  if (!file.startsWith(base + sep)) return { ok: false, message: 'the credential reference points outside credential_mount_base' };
  let realBase: string;
  let real: string;
  try {
    realBase = realpathSync(base);
    real = realpathSync(file);
  } catch {
    // Missing or unreadable: the bounded reader names the reason.
    return readSecret(file);
  }
  if (!real.startsWith(realBase + sep)) {
    return { ok: false, message: 'the credential file resolves, through a link, outside credential_mount_base' };
  }
  return readSecret(real);
}

function toCandidate(
  c: OverlayCandidate,
  group: number,
  provider: ProviderRuntime,
  settings: OverlayConfig,
  readSecret: (file: string) => SecretResult,
): GenerationCandidate {
  let credential: Credential | null = null;
  let credentialProblem: string | null = null;
  if (c.credential !== undefined) {
    const { namespace, name, key } = c.credential.secretRef;
    const base = resolve(settings.credential_mount_base);
    const ref = { file: resolve(base, namespace, name, key) };
    const secret = containedSecret(base, ref.file, readSecret);
    if (secret.ok) credential = new Credential(secret.value, describeSecretRef(ref));
    else credentialProblem = `credential for candidate ${c.stableId} is unavailable: ${secret.message}`;
  }
  const upstreamModel = provider.models[c.name] ?? c.name;
  return {
    stableId: c.stableId,
    providerName: provider.name,
    identity: provider.identity,
    weight: c.trafficWeight,
    admission: c.admissionState,
    group,
    provider,
    // An overlay candidate names only the route's model; the provider may serve it under another name.
    upstreamModel,
    // A vertex candidate's publisher is told by its model's name (the overlay has no field for it).
    protocol: candidateProtocol(provider, upstreamModel),
    credential,
    credentialProblem,
  };
}
