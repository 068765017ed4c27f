import { readFileSync } from 'node:fs';
import { type Document, isCollection, parseDocument, visit } from 'yaml';
import { formatIssue, type GatewayConfig, loadConfigFile, topologyObjectsOf } from '../config/index.js';
import { type ManagedSnapshot, TOPOLOGY_KINDS, type TopologyKind } from '../database/index.js';
import { type GenerationTopology, joinTopology, mergeManaged } from '../live/index.js';
import { DatabaseLink } from './database-link.js';

// The export (`switchyard config export`, `GET /admin/v1/config/export`): the config file as
// written (its comments kept), with the database's providers, routes, prices, teams and keys
// joined in, in block style throughout, for review in Git. It prints what `switchyard validate` accepts, whatever the file holds or lacks, and never a
// secret: keys are SHA-256, references stay references, and no URL's query is printed.

export type Exported =
  | { readonly ok: true; readonly text: string; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly errors: readonly string[]; readonly warnings: readonly string[] };

/**
 * The effective config of `configPath` as YAML: the file as written (comments kept), with the
 * database's providers, routes, prices, teams and keys joined as `database.topology` serves
 * them. What `switchyard config export` prints and `GET /admin/v1/config/export` answers. A
 * `link` already open (the gateway's own) is used and left open; else one is opened and closed.
 */
export async function exportText(configPath: string, env: NodeJS.ProcessEnv, link?: DatabaseLink): Promise<Exported> {
  const warnings: string[] = [];
  const loaded = loadConfigFile(configPath, env);
  if (!loaded.ok) return { ok: false, errors: loaded.issues.map(formatIssue), warnings };
  const document = parseDocument(readFileSync(configPath, 'utf8'));
  const config = loaded.config;
  let header = '';
  if (config.database !== undefined) {
    const own = link ?? new DatabaseLink(env);
    try {
      const snapshot = await own.snapshot(config.database);
      const topology = await own.topology(config.database);
      const joined = joinTopology(config, topology, env);
      if (!joined.ok) return { ok: false, errors: joined.issues.map(formatIssue), warnings };
      warnings.push(...joined.warnings);
      joinTopologyRows(document, joined.config, joined.topology);
      warnings.push(...joinManaged(document, config, snapshot));
      header =
        `# The effective config of ${configPath}: its database's providers, routes and prices (topology version ${topology.version}, database.topology ${config.database.topology}) and teams and keys (version ${snapshot.version}) joined in, keys as SHA-256.\n` +
        '# Served against the same database, the entries from it become read-only there (the file wins).\n';
    } catch (err) {
      return { ok: false, errors: [`database: ${(err as Error).message}`], warnings };
    } finally {
      if (link === undefined) await own.close();
    }
  }
  withoutUrlQueries(document);
  inBlockStyle(document);
  return { ok: true, text: header + document.toString(), warnings };
}

/** Where each kind of topology sits in the config file. */
const KIND_AT: Readonly<Record<TopologyKind, readonly string[]>> = {
  provider: ['providers'],
  route: ['routing', 'routes'],
  tool_route: ['routing', 'tools'],
  price: ['pricing', 'models'],
};

/**
 * Writes the served topology into the document: the database's objects beside the file's
 * (merged), or in their place (a seeded `database` topology, whose file objects do not serve).
 */
function joinTopologyRows(document: Document, effective: GatewayConfig, topology: GenerationTopology): void {
  const replace = topology.mode === 'database' && topology.seededAt !== null;
  for (const kind of TOPOLOGY_KINDS) {
    const at = KIND_AT[kind];
    const names = topology.fromDatabase[kind];
    if (replace) {
      const served = topologyObjectsOf(effective, kind);
      if (Object.keys(served).length === 0 && !document.hasIn(at)) continue;
      document.setIn(at, document.createNode({}));
      for (const [id, spec] of Object.entries(served)) document.setIn([...at, id], document.createNode(spec));
      continue;
    }
    if (names.length === 0) continue;
    if (!isCollection(document.getIn(at, true))) document.setIn(at, document.createNode({}));
    const served = topologyObjectsOf(effective, kind);
    for (const id of names) document.setIn([...at, id], document.createNode(served[id]));
  }
}

/** Adds the database's teams and keys that the file does not have, creating `teams:` and `keys:` when it has none; its warnings. */
function joinManaged(document: Document, config: GatewayConfig, snapshot: ManagedSnapshot): readonly string[] {
  const merged = mergeManaged(config, snapshot, Date.now());
  const fileTeams = new Set(Object.keys(config.teams ?? {}));
  const fileKeys = new Set((config.keys ?? []).map((k) => k.id));
  const teams = Object.entries(merged.teams).filter(([id]) => !fileTeams.has(id));
  const keys = merged.keys.filter((k) => !fileKeys.has(k.id));
  // A node the document made, not a plain value: the yaml library adds into collections only.
  if (teams.length > 0 && !isCollection(document.get('teams', true))) document.set('teams', document.createNode({}));
  for (const [id, team] of teams) document.setIn(['teams', id], document.createNode(team));
  if (keys.length > 0 && !isCollection(document.get('keys', true))) document.set('keys', document.createNode([]));
  for (const k of keys) document.addIn(['keys'], document.createNode(k));
  return merged.warnings;
}

const URL_WITH_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * A URL's query and userinfo password are left out (with a comment saying so): a driver may
 * take a secret from either, and validation refuses the ones it knows, but an export is
 * read by people and kept in Git, so it prints neither for any URL.
 */
function withoutUrlQueries(document: Document): void {
  visit(document, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || !URL_WITH_SCHEME.test(node.value) || !URL.canParse(node.value)) return;
      const url = new URL(node.value);
      if (url.search === '' && url.password === '') return;
      const left: string[] = [];
      if (url.password !== '') left.push('password');
      if (url.search !== '') left.push('query');
      url.password = '';
      url.search = '';
      node.value = url.toString();
      node.comment = ` its ${left.join(' and ')} ${left.length > 1 ? 'are' : 'is'} not printed by config export`;
    },
  });
}

/** Every collection in block style, whatever the file used (JSON is flow-style YAML). */
function inBlockStyle(document: Document): void {
  visit(document, {
    Map(_key, node) {
      node.flow = false;
    },
    Seq(_key, node) {
      node.flow = false;
    },
  });
}
