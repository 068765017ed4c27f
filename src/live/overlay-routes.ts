import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { describeSecretRef, type OverlayConfig, resolveSecret, type SecretResult, TOOL_NAME } from '../config/index.js';
import type { AdmissionState, OverlayCandidate, ParsedOverlay, SelectionMode } from '../contract/index.js';
import { Credential } from '../providers/index.js';
import { type CandidateGroup, type RoutableCandidate, type Route, type SelectionPolicy, stableIdTable } from '../routing/index.js';
import type {
  GenerationCandidate,
  GenerationRoute,
  McpServerRuntime,
  OverlaySnapshot,
  ProviderRuntime,
  ToolCandidate,
  ToolRoute,
} from './generation.js';

const POLICY: Record<SelectionMode, SelectionPolicy> = {
  deterministic: 'ordered',
  roundRobin: 'round_robin',
  random: 'random',
  weightedRandom: 'weighted',
};

export interface OverlayRoutes {
  readonly routes: Record<string, GenerationRoute>;
  /** The mcp_tool candidates' routes, by exposed tool name. */
  readonly tools: Record<string, ToolRoute>;
  readonly snapshot: OverlaySnapshot;
}

/**
 * Turns a validated overlay into routes: inference_model candidates into model routes,
 * mcp_tool candidates into tool routes, by the same rules. Candidates are grouped per name,
 * by selection_group, or by admission state when they have none; `none` is dropped; a
 * candidate whose cluster names no configured provider of its kind (a model's: any but
 * mcp; a tool's: an mcp one) is kept out of routing and reported. A candidate's credential
 * is read from the mount now, once per build, never per request: if it cannot be read the
 * candidate stays, and fails over with a 503-class reason, so one missing secret cannot
 * take a whole revision down.
 */
export function overlayRoutes(
  overlay: ParsedOverlay,
  settings: OverlayConfig,
  providers: Readonly<Record<string, ProviderRuntime>>,
  servers: Readonly<Record<string, McpServerRuntime>> = {},
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
  const byTool = new Map<string, OverlayCandidate[]>();
  const unroutable: OverlaySnapshot['unroutable'][number][] = [];
  const candidatesPerModel: Record<string, number> = Object.create(null) as Record<string, number>;
  const candidatesPerTool: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const c of overlay.candidates) {
    const tool = c.kind === 'mcp_tool';
    const counts = tool ? candidatesPerTool : candidatesPerModel;
    counts[c.name] = (counts[c.name] ?? 0) + 1;
    if (c.admissionState === 'none') continue;
    // A tool's name is what MCP clients see and call: one outside the specification's characters is as unroutable as an unknown cluster.
    if ((tool ? servers[c.cluster] : providers[c.cluster]) === undefined || (tool && !TOOL_NAME.test(c.name))) {
      unroutable.push({ stable_id: c.stableId, kind: c.kind, model: c.name, cluster: c.cluster });
      continue;
    }
    const into = tool ? byTool : byModel;
    let list = into.get(c.name);
    if (list === undefined) into.set(c.name, (list = []));
    list.push(c);
  }

  const credentialOf = (c: OverlayCandidate) => candidateCredential(c, settings, readSecret);
  const routes: Record<string, GenerationRoute> = Object.create(null) as Record<string, GenerationRoute>;
  for (const [model, list] of byModel) {
    routes[model] = routeOf(model, policy, list, (c, group) =>
      toCandidate(c, group, providers[c.cluster] as ProviderRuntime, credentialOf(c)),
    );
  }
  const tools: Record<string, ToolRoute> = Object.create(null) as Record<string, ToolRoute>;
  for (const [name, list] of byTool) {
    const route = routeOf(`tool:${name}`, policy, list, (c, group) =>
      toToolCandidate(c, group, servers[c.cluster] as McpServerRuntime, credentialOf(c)),
    );
    // The overlay has no field for it: only trusted annotations make an overlay tool's call safe to repeat.
    tools[name] = { ...route, model: name, retrySafe: false };
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
    candidatesPerTool,
    unroutable,
    parsed: overlay,
  };
  return { routes, tools, snapshot };
}

/**
 * One route of one name's candidates, grouped. `key` names the route in its round-robin
 * keys (a tool's is `tool:<name>`, so that a tool and a model of one name never share a rotation).
 */
function routeOf<C extends RoutableCandidate>(
  key: string,
  policy: SelectionPolicy,
  list: readonly OverlayCandidate[],
  make: (c: OverlayCandidate, group: number) => C,
): Route<C> {
  const groups = new Map<string, { index: number; admission: AdmissionState; members: C[] }>();
  const all: C[] = [];
  for (const c of list) {
    const index = c.selectionGroup ?? 0;
    const candidate = make(c, index);
    // The contract gives a selection_group one admission state. Ungrouped candidates each
    // keep their own, so they are split by it: an existing_only candidate must never sit
    // in a group that admits new requests, and selection reads admission per group (O(1)).
    const slot = c.selectionGroup === undefined ? `ungrouped:${c.admissionState}` : `group:${index}`;
    let group = groups.get(slot);
    if (group === undefined) groups.set(slot, (group = { index, admission: c.admissionState, members: [] }));
    group.members.push(candidate);
    all.push(candidate);
  }
  const ordered: CandidateGroup<C>[] = [...groups.values()]
    .sort((a, b) => a.index - b.index || admissionOrder(a.admission) - admissionOrder(b.admission))
    .map(({ index, admission, members }) => ({
      index,
      admission,
      candidates: members,
      totalWeight: members.reduce((s, c) => s + c.weight, 0),
      counterKey: counterKey(key, index, policy, members),
    }));
  return {
    model: key,
    policy,
    groups: ordered,
    byStableId: stableIdTable(all),
    admitsNew: ordered.some((g) => g.admission === 'new_and_existing'),
  };
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
function counterKey(model: string, index: number, policy: SelectionPolicy, members: readonly RoutableCandidate[]): string {
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

/** A candidate's own credential, read from the mount, or the reason it could not be. */
function candidateCredential(
  c: OverlayCandidate,
  settings: OverlayConfig,
  readSecret: (file: string) => SecretResult,
): { credential: Credential | null; credentialProblem: string | null } {
  if (c.credential === undefined) return { credential: null, credentialProblem: null };
  const { namespace, name, key } = c.credential.secretRef;
  const base = resolve(settings.credential_mount_base);
  const ref = { file: resolve(base, namespace, name, key) };
  const secret = containedSecret(base, ref.file, readSecret);
  if (secret.ok) return { credential: new Credential(secret.value, describeSecretRef(ref)), credentialProblem: null };
  return { credential: null, credentialProblem: `credential for candidate ${c.stableId} is unavailable: ${secret.message}` };
}

function toCandidate(
  c: OverlayCandidate,
  group: number,
  provider: ProviderRuntime,
  { credential, credentialProblem }: { credential: Credential | null; credentialProblem: string | null },
): GenerationCandidate {
  const upstreamModel = provider.models[c.name] ?? c.name;
  return {
    stableId: c.stableId,
    providerName: provider.name,
    identity: provider.identity,
    weight: c.trafficWeight,
    admission: c.admissionState,
    group,
    zones: provider.zones,
    region: c.region ?? provider.region,
    provider,
    // An overlay candidate names only the route's model; the provider may serve it under another name.
    upstreamModel,
    // A publisher is told by the model's name (the overlay has no field for it).
    protocol: provider.wire.protocolOf(upstreamModel),
    credential,
    credentialProblem,
  };
}

function toToolCandidate(
  c: OverlayCandidate,
  group: number,
  server: McpServerRuntime,
  { credential, credentialProblem }: { credential: Credential | null; credentialProblem: string | null },
): ToolCandidate {
  return {
    stableId: c.stableId,
    providerName: server.name,
    identity: server.identity,
    weight: c.trafficWeight,
    admission: c.admissionState,
    group,
    zones: server.zones,
    region: c.region ?? server.region,
    server,
    // The candidate's name is the exposed tool; the server may list it under another.
    upstreamTool: server.tools[c.name] ?? c.name,
    credential,
    credentialProblem,
  };
}
