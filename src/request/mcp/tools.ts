import { createHash } from 'node:crypto';
import { TOOL_NAME } from '../../config/index.js';
import type { GovernancePolicy, Principal } from '../../governance/index.js';
import { mayUseTool } from '../../governance/index.js';
import type { Generation, McpServerRuntime, ToolCandidate, ToolRoute } from '../../live/index.js';
import type { McpToolDefinition, ToolCatalog } from '../../mcp/index.js';
import { type CandidateGroup, stableIdTable } from '../../routing/index.js';

// The tools a generation routes, as they are right now: its tool routes (routing.tools, or
// the overlay's mcp_tool candidates) and its tools_from sources, joined with what each MCP
// server last listed. A candidate whose server does not list its tool is left out (it
// would only fail), so a tool a server withdraws stops being listed and called at once. A
// view is immutable; a new generation or a changed catalog makes a new one, and a
// tools/call captures one view for its whole life.

export interface ExposedTool {
  /** The exposed name. */
  readonly name: string;
  /** The route with only the candidates whose server lists the tool; groups, policy and keys as the generation's. */
  readonly route: ToolRoute;
  /** What tools/list shows: the first candidate's definition (route order), under the exposed name. */
  readonly definition: McpToolDefinition;
  /** Each candidate's own definition as its server published it (its annotations decide retry-safety). */
  readonly definitions: ReadonlyMap<ToolCandidate, McpToolDefinition>;
}

export interface ToolView {
  readonly gen: Generation;
  /** The catalogs' version this view was built from. */
  readonly catalogVersion: number;
  /** Every routable tool, by exposed name. */
  readonly tools: ReadonlyMap<string, ExposedTool>;
  /** Exposed names in code-point order: the order tools/list answers in. */
  readonly names: readonly string[];
  /**
   * Tool names a server listed more than once (`duplicate_name`: the first definition serves), and tools_from
   * names a static route or another source already took, or that break the name rules: left out, reported.
   */
  readonly skipped: ReadonlyArray<{ readonly provider: string; readonly tool: string; readonly reason: string }>;
  /** Per key id (`''` = anonymous): the tools/list result's JSON and its digest, built when first asked. */
  readonly listings: Map<string, { readonly json: string; readonly digest: string }>;
}

/** Builds the view of `gen` over `catalogs` (provider name -> its last listing). */
export function buildToolView(gen: Generation, catalogs: ReadonlyMap<string, ToolCatalog>, catalogVersion: number): ToolView {
  const tools = new Map<string, ExposedTool>();
  const skipped: Array<{ provider: string; tool: string; reason: string }> = [];
  // A name a server lists twice is routed to its first definition; the others are reported.
  for (const provider of Object.keys(gen.tools.servers))
    for (const tool of catalogs.get(provider)?.duplicates ?? []) skipped.push({ provider, tool, reason: 'duplicate_name' });
  for (const name of Object.keys(gen.tools.routes)) {
    const exposed = exposedTool(name, gen.tools.routes[name] as ToolRoute, catalogs);
    if (exposed !== null) tools.set(name, exposed);
  }
  const fromSources = new Map<string, string>();
  for (const source of gen.tools.from) {
    const server = gen.tools.servers[source.provider];
    const catalog = catalogs.get(source.provider);
    if (server === undefined || catalog === undefined) continue;
    for (const upstream of catalog.tools.keys()) {
      const name = source.prefix + upstream;
      if (!TOOL_NAME.test(name)) {
        skipped.push({
          provider: source.provider,
          tool: upstream,
          reason: 'the exposed name breaks the tool name rules (1-128 of A-Z a-z 0-9 _ - .)',
        });
        continue;
      }
      if (gen.tools.routes[name] !== undefined) {
        skipped.push({ provider: source.provider, tool: upstream, reason: `routing.tools.${name} takes the name` });
        continue;
      }
      const other = fromSources.get(name);
      if (other !== undefined) {
        skipped.push({ provider: source.provider, tool: upstream, reason: `provider "${other}" already exposes ${name}` });
        continue;
      }
      fromSources.set(name, source.provider);
      const exposed = exposedTool(name, sourceRoute(name, server, upstream), catalogs);
      if (exposed !== null) tools.set(name, exposed);
    }
  }
  const names = [...tools.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { gen, catalogVersion, tools, names, skipped, listings: new Map() };
}

/** The tool with only the candidates whose server lists it; null when none does. */
function exposedTool(name: string, route: ToolRoute, catalogs: ReadonlyMap<string, ToolCatalog>): ExposedTool | null {
  const definitions = new Map<ToolCandidate, McpToolDefinition>();
  const groups: CandidateGroup<ToolCandidate>[] = [];
  const all: ToolCandidate[] = [];
  for (const group of route.groups) {
    const members = group.candidates.filter((c) => {
      const def = catalogs.get(c.server.name)?.tools.get(c.upstreamTool);
      if (def !== undefined) definitions.set(c, def);
      return def !== undefined;
    });
    if (members.length === 0) continue;
    all.push(...members);
    groups.push(
      members.length === group.candidates.length
        ? group
        : { ...group, candidates: members, totalWeight: members.reduce((s, c) => s + c.weight, 0) },
    );
  }
  const first = all[0];
  if (first === undefined) return null;
  const published = definitions.get(first) as McpToolDefinition;
  return {
    name,
    route: {
      ...route,
      groups,
      byStableId: stableIdTable(all),
      admitsNew: groups.some((g) => g.admission === 'new_and_existing'),
    },
    definition: { ...published, name },
    definitions,
  };
}

/** A tools_from tool's route: its one server, under the name the server lists it. */
function sourceRoute(name: string, server: McpServerRuntime, upstream: string): ToolRoute {
  const candidate: ToolCandidate = {
    stableId: `${server.name}/${upstream}`,
    providerName: server.name,
    identity: server.identity,
    weight: 1,
    admission: 'new_and_existing',
    group: 0,
    zones: server.zones,
    region: server.region,
    server,
    upstreamTool: upstream,
    credential: null,
    credentialProblem: null,
  };
  return {
    model: name,
    policy: 'ordered',
    groups: [{ index: 0, admission: 'new_and_existing', candidates: [candidate], totalWeight: 1, counterKey: '' }],
    byStableId: null,
    admitsNew: true,
    retrySafe: false,
  };
}

/**
 * What tools/list answers this caller: the tools it may use that admit new sessions (an
 * existing_only tool keeps serving the sessions bound to it, but is not offered), in name
 * order, with their digest, built once per view and key (each time for a signed-in principal).
 */
export function listingFor(
  view: ToolView,
  policy: GovernancePolicy,
  principal: Principal,
): { readonly json: string; readonly digest: string } {
  // A key's listing is the same on every call; a signed-in principal's follows the scopes of
  // the token it came with, which differ token to token under one principal id: not kept.
  const key = principal.grant === undefined ? (principal.keyId ?? '') : null;
  const known = key === null ? undefined : view.listings.get(key);
  if (known !== undefined) return known;
  const parts: string[] = [];
  for (const name of view.names) {
    const tool = view.tools.get(name) as ExposedTool;
    if (!tool.route.admitsNew || !mayUseTool(policy, principal, name)) continue;
    parts.push(JSON.stringify(tool.definition));
  }
  const json = `{"tools":[${parts.join(',')}]}`;
  const listing = { json, digest: createHash('sha256').update(json).digest('hex') };
  if (key !== null) view.listings.set(key, listing);
  return listing;
}

/**
 * Whether a call that failed after reaching its candidate may be sent to the next one:
 * the operator said so (retry_safe), or the server is trusted for its annotations and this
 * tool says it only reads or is idempotent.
 */
export function retrySafe(tool: ExposedTool, candidate: ToolCandidate): boolean {
  if (tool.route.retrySafe) return true;
  if (!candidate.server.trustAnnotations) return false;
  const a = tool.definitions.get(candidate)?.annotations;
  return a?.readOnlyHint === true || a?.idempotentHint === true;
}
