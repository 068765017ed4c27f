import { readFileSync } from 'node:fs';
import { type Document, isCollection, parseDocument, visit } from 'yaml';
import { formatIssue, type GatewayConfig, loadConfigFile } from '../config/index.js';
import type { ManagedSnapshot } from '../database/index.js';
import { mergeManaged } from '../live/index.js';
import { DatabaseLink } from '../server/index.js';

// `switchyard config export`: the config file as written (its comments kept), with the
// database's teams and keys joined in, in block style throughout, for review in Git. It
// prints what `switchyard validate` accepts, whatever the file holds or lacks, and never a
// secret: keys are SHA-256, references stay references, and no URL's query is printed.

/** Prints the effective config of `configPath`; 1 when it is invalid or its database cannot be read. */
export async function exportConfig(configPath: string): Promise<number> {
  const loaded = loadConfigFile(configPath, process.env);
  if (!loaded.ok) {
    for (const issue of loaded.issues) process.stderr.write(`${formatIssue(issue)}\n`);
    return 1;
  }
  const document = parseDocument(readFileSync(configPath, 'utf8'));
  const config = loaded.config;
  let header = '';
  if (config.database !== undefined) {
    const link = new DatabaseLink(process.env);
    try {
      const snapshot = await link.snapshot(config.database);
      joinManaged(document, config, snapshot);
      header =
        `# The effective config of ${configPath}: its database's teams and keys (version ${snapshot.version}) joined in, keys as SHA-256.\n` +
        '# Served against the same database, the entries from it become read-only there (the file wins).\n';
    } catch (err) {
      process.stderr.write(`database: ${(err as Error).message}\n`);
      return 1;
    } finally {
      await link.close();
    }
  }
  withoutUrlQueries(document);
  inBlockStyle(document);
  process.stdout.write(header + document.toString());
  return 0;
}

/** Adds the database's teams and keys that the file does not have, creating `teams:` and `keys:` when it has none. */
function joinManaged(document: Document, config: GatewayConfig, snapshot: ManagedSnapshot): void {
  const merged = mergeManaged(config, snapshot, Date.now());
  for (const warning of merged.warnings) process.stderr.write(`warning: ${warning}\n`);
  const fileTeams = new Set(Object.keys(config.teams ?? {}));
  const fileKeys = new Set((config.keys ?? []).map((k) => k.id));
  const teams = Object.entries(merged.teams).filter(([id]) => !fileTeams.has(id));
  const keys = merged.keys.filter((k) => !fileKeys.has(k.id));
  // A node the document made, not a plain value: the yaml library adds into collections only.
  if (teams.length > 0 && !isCollection(document.get('teams', true))) document.set('teams', document.createNode({}));
  for (const [id, team] of teams) document.setIn(['teams', id], document.createNode(team));
  if (keys.length > 0 && !isCollection(document.get('keys', true))) document.set('keys', document.createNode([]));
  for (const k of keys) document.addIn(['keys'], document.createNode(k));
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
