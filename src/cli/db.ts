import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { formatIssue, loadConfigFile } from '../config/index.js';
import { TOPOLOGY_KINDS, type TopologyKind } from '../database/index.js';
import { DatabaseLink } from '../server/index.js';
import { type Command, help, UsageError } from './command.js';

// `switchyard db seed`: the config file's providers, model routes, tool routes and prices
// imported into its database once, for `database.topology: database`, where the admin API owns
// them from then on. The import and its marker are one transaction: a second seed (or one run
// on another machine against the same database) sees the marker, changes nothing and exits 0,
// so an object deleted through the API is never brought back from the file.

/** Where each kind sits in the file, as written (the rows keep the file's own fields, no defaults added). */
function rawObjects(raw: Record<string, unknown>, kind: TopologyKind): Record<string, Record<string, unknown>> {
  const obj = (v: unknown): Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  const routing = obj(raw.routing);
  const part =
    kind === 'provider'
      ? raw.providers
      : kind === 'route'
        ? routing.routes
        : kind === 'tool_route'
          ? routing.tools
          : obj(raw.pricing).models;
  return obj(part) as Record<string, Record<string, unknown>>;
}

export async function seedTopology(configPath: string): Promise<number> {
  const loaded = loadConfigFile(configPath, process.env);
  if (!loaded.ok) {
    for (const issue of loaded.issues) process.stderr.write(`${formatIssue(issue)}\n`);
    return 1;
  }
  const settings = loaded.config.database;
  if (settings === undefined) {
    process.stderr.write('database: not set; db seed imports into the database that database.url names\n');
    return 1;
  }
  const raw = parseDocument(readFileSync(configPath, 'utf8')).toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  const link = new DatabaseLink(process.env);
  try {
    const records = await link.open(settings);
    type Seeded = { readonly seededAt: string | null; readonly counts: Record<TopologyKind, number> | null };
    const { value } = await records.write<Seeded>(async (w) => {
      const state = await w.topology.state();
      if (state.seededAt !== null) return { commit: false, value: { seededAt: state.seededAt, counts: null } };
      const counts: Record<TopologyKind, number> = { provider: 0, route: 0, tool_route: 0, price: 0 };
      for (const kind of TOPOLOGY_KINDS) {
        for (const [id, spec] of Object.entries(rawObjects(raw, kind))) {
          // Written through the API before the seed (merged mode, say): the database's stays.
          if ((await w.topology.get(kind, id)) !== undefined) continue;
          await w.topology.insert(kind, id, spec);
          counts[kind] += 1;
        }
      }
      await w.topology.markSeeded(loaded.sourceHash);
      return { commit: true, value: { seededAt: null, counts } };
    });
    if (value.counts === null) {
      process.stdout.write(`already seeded at ${value.seededAt}: nothing changed (the database owns the topology)\n`);
      return 0;
    }
    const c = value.counts;
    process.stdout.write(
      `seeded from ${configPath}: ${c.provider} provider(s), ${c.route} route(s), ${c.tool_route} tool route(s), ${c.price} price(s)\n`,
    );
    if (settings.topology !== 'database')
      process.stdout.write(
        `note: database.topology is "${settings.topology}": the database's objects serve only with database.topology: database${settings.topology === 'merged' ? " (merged: beside the file's, which win a shared name)" : ''}\n`,
      );
    return 0;
  } catch (err) {
    process.stderr.write(`database: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await link.close();
  }
}

export const dbCommand: Command = {
  summary: "import the config file's providers, routes and prices into its database, once",
  usage: `switchyard db seed --config FILE

Imports FILE's providers, model routes (routing.routes), tool routes (routing.tools) and prices
(pricing.models) into the database that FILE's database.url names, and marks the database
seeded, in one transaction. With database.topology: database the gateway serves the database's
topology from then on, and the admin API owns it. Runs once: a second seed finds the marker,
changes nothing and exits 0, so an object deleted through the API never comes back. Secrets are
stored as the references the file writes, never as values.`,
  options: { config: { type: 'string', short: 'c' }, help },
  positionals: true,
  async run(values, positionals) {
    if (positionals.length !== 1 || positionals[0] !== 'seed') throw new UsageError('expected "db seed"');
    if (typeof values.config !== 'string') throw new UsageError('--config is required');
    return seedTopology(resolve(values.config));
  },
};
