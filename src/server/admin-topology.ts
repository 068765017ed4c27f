import { type ConfigIssue, topologyObjectsOf } from '../config/index.js';
import type { ManagedRecords, TopologyKind, TopologySnapshot } from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import { buildGenerationInSlices, type Generation, joinTopology } from '../live/index.js';
import {
  type Asked,
  configTopologyView,
  createTopology,
  deleteTopology,
  patchTopology,
  type TopologyWriteContext,
  teamOfRole,
  topologyView,
  type Written,
} from '../managed/index.js';
import { PoolRegistry } from '../providers/index.js';
import type { V1Context, V1Request } from './admin-caller.js';
import { configTag, pageOf, sendObject, sendPage, tagOf } from './admin-http.js';

// Providers, model routes, tool routes and prices under /admin/v1/{providers, routes,
// tool-routes, pricing}: the reads here, the writes managed/'s (this file gives them the
// serving generation and the dry build they are checked with). A list shows what the mode
// serves: the file's objects (read-only, `managed_by: "config"`) beside the database's.

/** Whether the file's objects of the serving generation are served (and listed): all but a seeded `database` topology. */
function fileServed(gen: Generation): boolean {
  const t = gen.topology;
  return t.mode !== 'database' || t.seededAt === null;
}

/** Whether the database's objects are served (and listed). */
const databaseServed = (gen: Generation): boolean =>
  gen.topology.mode === 'merged' || (gen.topology.mode === 'database' && gen.topology.seededAt !== null);

/** A team token manages its own team's keys: the gateway's providers and routes are not its to read. */
function mayReadTopology(a: V1Request): void {
  if (teamOfRole(a.caller) !== null)
    throw new SwitchyardError('forbidden', `admin token "${a.caller.id}" (role ${a.caller.role}) may not read providers, routes or prices`);
}

export async function listTopology(a: V1Request, records: ManagedRecords, gen: Generation, kind: TopologyKind): Promise<void> {
  mayReadTopology(a);
  const { limit, after } = pageOf(a.req);
  const items: Array<{ id: string; view: Record<string, unknown> }> = [];
  const file = fileServed(gen) ? topologyObjectsOf(gen.fileConfig, kind) : {};
  for (const [id, spec] of Object.entries(file))
    if (after === undefined || id > after) items.push({ id, view: configTopologyView(kind, id, spec) });
  if (databaseServed(gen)) {
    for (const o of (await records.topology.snapshot()).objects)
      if (o.kind === kind && !Object.hasOwn(file, o.id) && (after === undefined || o.id > after))
        items.push({ id: o.id, view: topologyView(o) });
  }
  sendPage(a.res, items, limit);
}

export async function getTopology(
  ctx: V1Context,
  a: V1Request,
  records: ManagedRecords,
  gen: Generation,
  kind: TopologyKind,
  id: string,
): Promise<void> {
  mayReadTopology(a);
  const file = fileServed(gen) ? topologyObjectsOf(gen.fileConfig, kind) : {};
  if (Object.hasOwn(file, id)) return sendObject(a.res, 200, configTopologyView(kind, id, file[id]), configTag(ctx.svc.keyring.current()));
  const object = databaseServed(gen) ? await records.topology.get(kind, id) : undefined;
  if (object === undefined) throw new SwitchyardError('not_found', `no ${kind.replace('_', ' ')} "${id}"`);
  sendObject(a.res, 200, topologyView(object), tagOf(object.version));
}

/** Runs one topology write with the serving generation and the dry build it is checked against. */
export function writeTopology(
  ctx: V1Context,
  base: Omit<TopologyWriteContext, 'generation' | 'check'>,
  asked: Asked,
  method: string,
  kind: TopologyKind,
  id: string | undefined,
): Promise<Written> {
  const generation = ctx.svc.holder.current();
  const w: TopologyWriteContext = { ...base, generation, check: (snapshot) => dryBuild(generation, snapshot, ctx.env) };
  if (id === undefined) return createTopology(w, asked, kind);
  return method === 'PATCH' ? patchTopology(w, asked, kind, id) : deleteTopology(w, asked, kind, id);
}

/**
 * The generation these rows would give, built beside the serving one and thrown away: its
 * providers get pools of their own (never the serving ones) that are closed at once.
 */
async function dryBuild(serving: Generation, snapshot: TopologySnapshot, env: NodeJS.ProcessEnv): Promise<readonly ConfigIssue[]> {
  const joined = joinTopology(serving.fileConfig, snapshot, env);
  if (!joined.ok) return joined.issues;
  const pools = new PoolRegistry();
  try {
    const built = await buildGenerationInSlices({
      config: joined.config,
      fileConfig: serving.fileConfig,
      topology: joined.topology,
      sourceHash: serving.sourceHash,
      number: serving.number + 1,
      env,
      overlay: serving.overlay?.parsed ?? null,
      poolFor: (spec) => pools.acquire(spec),
    });
    return built.ok ? [] : built.issues;
  } finally {
    await pools.destroyAll();
  }
}
