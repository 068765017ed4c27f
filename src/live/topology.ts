import { type ConfigIssue, checkConfig, checkTopologyObject, type GatewayConfig, topologyObjectsOf } from '../config/index.js';
import type { TopologyKind, TopologySnapshot } from '../database/index.js';

// The config file's providers, routes, tool routes and prices joined to those written through
// the admin API, by `database.topology`: `merged` adds the database's to the file's (the file
// wins a name both hold: the API refuses to write over the file, and a name the file gains
// later is the file's), `database` serves the database's alone once the file's were seeded
// into it, and `file` the file's alone. The joined document is judged whole by the config
// file's own schema, so a generation built from the database accepts and refuses what one
// built from the file would. A row its own schema refuses (written by hand, or by a newer
// gateway) is skipped with a warning, so one bad row never stops every later reload.

export type TopologyMode = 'file' | 'database' | 'merged';

/** Where each part of a generation's topology came from. */
export interface GenerationTopology {
  /** `database.topology`; null without a database. */
  readonly mode: TopologyMode | null;
  /** The database's topology version the generation was built from; null without a database. */
  readonly version: number | null;
  /** When the file's topology was seeded into the database; null: never. */
  readonly seededAt: string | null;
  /** The names each kind took from the database (the rest are the file's). */
  readonly fromDatabase: Readonly<Record<TopologyKind, readonly string[]>>;
  /** The database's rows it was joined from: kept when a later reload cannot read the database. */
  readonly snapshot: TopologySnapshot | null;
}

export const FILE_TOPOLOGY: GenerationTopology = Object.freeze({
  mode: null,
  version: null,
  seededAt: null,
  fromDatabase: Object.freeze({ provider: [], route: [], tool_route: [], price: [] }),
  snapshot: null,
});

export type TopologyJoin =
  | { readonly ok: true; readonly config: GatewayConfig; readonly topology: GenerationTopology; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/** What the file calls each kind, for warnings and paths. */
export const KIND_PATHS: Readonly<Record<TopologyKind, string>> = {
  provider: 'providers',
  route: 'routing.routes',
  tool_route: 'routing.tools',
  price: 'pricing.models',
};

/**
 * The effective config: the file's with the database's topology joined by its mode. `env`
 * resolves references as the file's load does. Without a database (or a snapshot) the file's
 * config is returned as it is.
 */
export function joinTopology(file: GatewayConfig, snapshot: TopologySnapshot | null, env: NodeJS.ProcessEnv): TopologyJoin {
  const mode = file.database?.topology ?? null;
  if (mode === null || snapshot === null) return { ok: true, config: file, topology: FILE_TOPOLOGY, warnings: [] };
  const base = { mode, version: snapshot.version, seededAt: snapshot.seededAt, snapshot };
  const warnings: string[] = [];
  const unused = { ...base, fromDatabase: FILE_TOPOLOGY.fromDatabase };
  if (mode === 'file') {
    if (snapshot.objects.length > 0)
      warnings.push(
        `the database holds ${snapshot.objects.length} provider, route or price object(s) that are not served: database.topology is "file"`,
      );
    return { ok: true, config: file, topology: unused, warnings };
  }
  if (mode === 'database' && snapshot.seededAt === null) {
    warnings.push(
      'database.topology is "database", but the config file\'s providers, routes and prices were never seeded into the database: the file\'s are served until `switchyard db seed --config FILE` runs',
    );
    return { ok: true, config: file, topology: unused, warnings };
  }
  const overlay = file.routing.overlay !== undefined;
  const fromFile = mode === 'merged';
  const parts: Record<TopologyKind, Record<string, unknown>> = {
    provider: fromFile ? { ...file.providers } : {},
    route: fromFile ? { ...(file.routing.routes ?? {}) } : {},
    tool_route: fromFile ? { ...(file.routing.tools ?? {}) } : {},
    price: fromFile ? { ...file.pricing.models } : {},
  };
  const fromDatabase: Record<TopologyKind, string[]> = { provider: [], route: [], tool_route: [], price: [] };
  for (const o of snapshot.objects) {
    const where = `${KIND_PATHS[o.kind]}.${o.id}`;
    if (overlay && (o.kind === 'route' || o.kind === 'tool_route')) {
      warnings.push(`database ${where} is not served: routing.overlay gives the routes`);
      continue;
    }
    if (fromFile && Object.hasOwn(topologyObjectsOf(file, o.kind), o.id)) {
      warnings.push(`database ${where} is also in the config file: the file's is used`);
      continue;
    }
    const checked = checkTopologyObject(o.kind, o.spec);
    if (!checked.ok) {
      warnings.push(`database ${where} is skipped: ${checked.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
      continue;
    }
    parts[o.kind][o.id] = o.spec;
    fromDatabase[o.kind].push(o.id);
  }
  const noDatabase = Object.values(fromDatabase).every((names) => names.length === 0);
  if (fromFile && noDatabase) return { ok: true, config: file, topology: { ...base, fromDatabase }, warnings };
  const routing: Record<string, unknown> = { ...file.routing };
  if (!overlay) {
    // A section the file left out stays out when the database adds nothing to it.
    routing.routes = file.routing.routes === undefined && Object.keys(parts.route).length === 0 ? undefined : parts.route;
    routing.tools = file.routing.tools === undefined && Object.keys(parts.tool_route).length === 0 ? undefined : parts.tool_route;
  }
  const document = { ...file, providers: parts.provider, routing, pricing: { ...file.pricing, models: parts.price } };
  const checked = checkConfig(withoutUndefined(document), '', env);
  if (!checked.ok) return { ok: false, issues: checked.issues };
  return { ok: true, config: checked.config, topology: { ...base, fromDatabase }, warnings };
}

/** The document without keys whose value is undefined (the schema reads a present undefined as given). */
function withoutUndefined<T extends Record<string, unknown>>(document: T): T {
  const routing = document.routing as Record<string, unknown>;
  for (const key of Object.keys(routing)) if (routing[key] === undefined) delete routing[key];
  return document;
}
