import type { z } from 'zod';
import { formatPath } from '../contract/index.js';
import { configErrorMap } from './issue-text.js';
import type { ConfigIssue } from './load.js';
import { providerSchema } from './provider-types.js';
import type { GatewayConfig, KeyConfig, TeamConfig } from './schema.js';
import { keySchema, priceSchema, routeSchema, teamSchema, toolRouteSchema } from './schema.js';
import { toolName } from './schema-parts.js';

// Teams, keys, providers, routes and prices that live in the database are the config file's,
// judged by the very same schemas: an admin API body, a row read back for a generation, and an entry
// of the config file accept and refuse the same fields, with the same messages.

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/** Each problem with the path of its field (an unknown key names the key itself). */
function issuesOf(error: z.ZodError): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) issues.push({ path: formatPath([...issue.path, key]), message: 'unknown key' });
    } else {
      issues.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
  return issues;
}

/** A team's fields (rate_limit, quota, budget, allowed_models, allowed_tools, allowed_agents), as under `teams.<id>`. */
export function checkTeam(spec: unknown): Checked<TeamConfig> {
  const parsed = teamSchema.safeParse(spec);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: issuesOf(parsed.error) };
}

/** A key entry (id, team, sha256 and its limits), as under `keys[]`. */
export function checkKey(entry: unknown): Checked<KeyConfig> {
  const parsed = keySchema.safeParse(entry);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: issuesOf(parsed.error) };
}

/** The topology objects the admin API writes, by kind, with the schema the config file judges each by. */
const TOPOLOGY_SCHEMAS = {
  provider: providerSchema,
  route: routeSchema,
  tool_route: toolRouteSchema,
  price: priceSchema,
} as const;

/** A provider, model route, tool route or price, as under `providers.<n>`, `routing.routes.<m>`, `routing.tools.<t>` or `pricing.models.<m>`. */
export function checkTopologyObject(kind: keyof typeof TOPOLOGY_SCHEMAS, spec: unknown): Checked<unknown> {
  const parsed = TOPOLOGY_SCHEMAS[kind].safeParse(spec, { error: configErrorMap });
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: issuesOf(parsed.error) };
}

/** The kinds of topology the admin API writes: provider, route, tool_route, price. */
export type TopologyObjectKind = keyof typeof TOPOLOGY_SCHEMAS;

/** A config's objects of one kind, by name: `providers`, `routing.routes`, `routing.tools` or `pricing.models`. */
export function topologyObjectsOf(config: GatewayConfig, kind: TopologyObjectKind): Readonly<Record<string, unknown>> {
  if (kind === 'provider') return config.providers;
  if (kind === 'route') return config.routing.routes ?? {};
  if (kind === 'tool_route') return config.routing.tools ?? {};
  return config.pricing.models;
}

/** Whether `name` may name an object of `kind`: the config file's own rule for its keys. */
export function topologyNameIssue(kind: keyof typeof TOPOLOGY_SCHEMAS, name: string): string | null {
  if (kind === 'provider') return /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name) ? null : 'provider names are 1-64 of A-Z a-z 0-9 _ . -';
  if (kind === 'tool_route') return toolName.safeParse(name).success ? null : 'tool names are 1-128 of A-Z a-z 0-9 _ - .';
  return name.length > 0 && name.length <= 256 && !name.includes('\0') ? null : 'must be 1-256 characters';
}
