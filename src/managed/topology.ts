import { type ConfigIssue, checkProvider, checkTopologyObject, topologyNameIssue, topologyObjectsOf } from '../config/index.js';
import {
  type TopologyKind,
  TopologyMovedError,
  type TopologyObject,
  type TopologySnapshot,
  type TopologyState,
} from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import type { Generation } from '../live/index.js';
import { mayWrite } from './caller.js';
import { applied, type LostCommitCheck, managedByConfig, type WriteContext, writeSettled } from './commit.js';
import { fieldsError, merged } from './fields.js';
import { type Asked, tagOf, type Written } from './written.js';

// The topology's writes: providers, model routes, tool routes and prices, created, changed
// and deleted through the admin API. Only an admin token writes them. A body is the object as
// the config file writes it under its name, judged by the file's own schema; then the whole
// generation the write would produce is built (nothing swapped) from the database's rows with
// the write applied, so a route naming a missing provider, a provider a route still uses or a
// reference that does not resolve is refused with its path and nothing is committed. The
// commit is conditional on the topology version that build read: a write committed meanwhile
// (on any replica) sends this one back to be checked again. What the config file holds is
// read-only here (409 managed_by_config), and so is everything under `database.topology: file`.

/** The admin API's collections of topology, by their path segment. */
export const TOPOLOGY_COLLECTIONS: Readonly<Record<string, TopologyKind>> = {
  providers: 'provider',
  routes: 'route',
  'tool-routes': 'tool_route',
  pricing: 'price',
};

/** The body field that names the object: a price's model, everything else's id. */
export const nameField = (kind: TopologyKind): 'id' | 'model' => (kind === 'price' ? 'model' : 'id');

const NOUNS: Readonly<Record<TopologyKind, string>> = { provider: 'provider', route: 'route', tool_route: 'tool route', price: 'price' };

/** How many times a write is checked again when another committed while it was being checked. */
const MOVED_RETRIES = 4;

export interface TopologyWriteContext extends WriteContext {
  /** The serving generation: its config file, mode and which objects are the file's. */
  readonly generation: Generation;
  /**
   * Builds the generation these rows would give (nothing swapped, nothing kept): its issues,
   * each with its path; none when it builds.
   */
  readonly check: (snapshot: TopologySnapshot) => Promise<readonly ConfigIssue[]>;
}

export function topologyView(o: TopologyObject): Record<string, unknown> {
  return {
    [nameField(o.kind)]: o.id,
    ...o.spec,
    managed_by: 'database',
    version: o.version,
    created_at: o.createdAt,
    updated_at: o.updatedAt,
  };
}

export function configTopologyView(kind: TopologyKind, id: string, spec: unknown): Record<string, unknown> {
  return { [nameField(kind)]: id, ...(spec as Record<string, unknown>), managed_by: 'config' };
}

/** Whether the file holds this object in a way the API must not write over. */
function fileHolds(gen: Generation, kind: TopologyKind, id: string): boolean {
  return gen.topology.mode === 'merged' && Object.hasOwn(topologyObjectsOf(gen.fileConfig, kind), id);
}

/** Refuses a topology write the mode does not take. */
function writable(ctx: TopologyWriteContext, kind: TopologyKind, id: string | null, state: TopologyState): void {
  mayWrite(ctx.caller, null);
  const gen = ctx.generation;
  const mode = gen.fileConfig.database?.topology ?? 'merged';
  if (mode === 'file')
    throw new SwitchyardError(
      'managed_by_config',
      'database.topology is "file": providers, routes and prices are the config file\'s, read-only here; change them there',
    );
  if (mode === 'database' && state.seededAt === null)
    throw new SwitchyardError(
      'conflict',
      'database.topology is "database", but the config file\'s providers, routes and prices were never seeded: run `switchyard db seed --config FILE` first',
    );
  if ((kind === 'route' || kind === 'tool_route') && gen.fileConfig.routing.overlay !== undefined)
    throw new SwitchyardError('conflict', `${NOUNS[kind]}s come from routing.overlay in this config: they cannot be written here`);
  if (id !== null && fileHolds(gen, kind, id)) throw managedByConfig(NOUNS[kind], id);
}

function nameOf(kind: TopologyKind, body: Record<string, unknown>): string {
  const field = nameField(kind);
  const name = body[field];
  const problem = typeof name === 'string' ? topologyNameIssue(kind, name) : 'is required, a string';
  if (problem !== null) throw fieldsError([{ path: field, message: problem }]);
  return name as string;
}

/** The object's spec as its schema judges it: each field at fault, by path (a provider's with the file's hints per type). */
function judged(kind: TopologyKind, spec: Record<string, unknown>): void {
  const checked = kind === 'provider' ? checkProvider(spec) : checkTopologyObject(kind, spec);
  if (!checked.ok) throw fieldsError(checked.issues);
}

/** The snapshot with one object set (a spec) or removed (null). */
function withObject(s: TopologySnapshot, kind: TopologyKind, id: string, spec: Record<string, unknown> | null): TopologySnapshot {
  const objects = s.objects.filter((o) => !(o.kind === kind && o.id === id));
  if (spec !== null) objects.push({ kind, id, spec, version: 0, createdAt: '', updatedAt: '' });
  return { ...s, objects };
}

/** Refuses, with every path at fault, a write whose generation would not build. */
async function buildsOrRefuse(ctx: TopologyWriteContext, next: TopologySnapshot, what: string): Promise<void> {
  const issues = await ctx.check(next);
  if (issues.length === 0) return;
  const error = fieldsError(issues, 'conflict');
  throw Object.assign(error, { message: `${what} would leave a generation that does not build: ${error.message}` });
}

/**
 * Reads the rows, checks the change against them, and commits it only from the version it
 * was checked against; again (a bounded number of times) when another write got there first.
 */
async function checkedWrite(
  ctx: TopologyWriteContext,
  settle: LostCommitCheck<null>,
  attempt: (snapshot: TopologySnapshot) => Promise<{ next: TopologySnapshot; write: Parameters<WriteContext['records']['write']>[0] }>,
): Promise<number | null> {
  for (let i = 0; ; i++) {
    const snapshot = await ctx.records.topology.snapshot();
    const { next, write } = await attempt(snapshot);
    await buildsOrRefuse(
      ctx,
      next,
      `${settle.target.action === 'delete' ? 'deleting' : 'writing'} ${settle.target.object} "${settle.target.objectId}"`,
    );
    try {
      const { version } = await writeSettled(ctx.records, settle, write as never, { topologyBasedOn: snapshot.version });
      return version;
    } catch (err) {
      if (!(err instanceof TopologyMovedError) || i >= MOVED_RETRIES) {
        if (err instanceof TopologyMovedError)
          throw new SwitchyardError('conflict', 'the topology kept changing while this write was checked: send it again');
        throw err;
      }
    }
  }
}

export async function createTopology(ctx: TopologyWriteContext, asked: Asked, kind: TopologyKind): Promise<Written> {
  mayWrite(ctx.caller, null);
  const body = await asked.body();
  const id = nameOf(kind, body);
  const spec = { ...body };
  delete spec[nameField(kind)];
  writable(ctx, kind, id, await ctx.records.topology.state());
  judged(kind, spec);
  const settle: LostCommitCheck<null> = {
    target: { action: 'create', object: kind, objectId: id },
    change: spec,
    read: () => ctx.records.topology.get(kind, id),
    appliedValue: null,
  };
  const version = await checkedWrite(ctx, settle, async (snapshot) => {
    if (snapshot.objects.some((o) => o.kind === kind && o.id === id))
      throw new SwitchyardError('conflict', `${NOUNS[kind]} "${id}" already exists`);
    return {
      next: withObject(snapshot, kind, id, spec),
      write: async (w) => {
        if ((await w.topology.get(kind, id)) !== undefined) throw new SwitchyardError('conflict', `${NOUNS[kind]} "${id}" already exists`);
        await w.topology.insert(kind, id, spec);
        return { commit: true, value: null };
      },
    };
  });
  return answered(ctx, settle, version, kind, id, 201);
}

export async function patchTopology(ctx: TopologyWriteContext, asked: Asked, kind: TopologyKind, id: string): Promise<Written> {
  mayWrite(ctx.caller, null);
  writable(ctx, kind, id, await ctx.records.topology.state());
  const expected = asked.expected();
  const body = await asked.body();
  const field = nameField(kind);
  if (body[field] !== undefined && body[field] !== id) throw fieldsError([{ path: field, message: 'cannot be changed' }]);
  const patch = { ...body };
  delete patch[field];
  const settle: LostCommitCheck<null> = {
    target: { action: 'update', object: kind, objectId: id },
    change: patch,
    read: () => ctx.records.topology.get(kind, id),
    appliedValue: null,
  };
  const version = await checkedWrite(ctx, settle, async (snapshot) => {
    const current = currentOf(snapshot, kind, id, expected);
    const spec = merged(current.spec, patch);
    judged(kind, spec);
    return {
      next: withObject(snapshot, kind, id, spec),
      write: async (w) => {
        if (!(await w.topology.update(kind, id, current.version, spec))) throw stale(kind, id);
        return { commit: true, value: null };
      },
    };
  });
  return answered(ctx, settle, version, kind, id, 200);
}

export async function deleteTopology(ctx: TopologyWriteContext, asked: Asked, kind: TopologyKind, id: string): Promise<Written> {
  mayWrite(ctx.caller, null);
  writable(ctx, kind, id, await ctx.records.topology.state());
  const expected = asked.expected();
  await asked.drain();
  const settle: LostCommitCheck<null> = {
    target: { action: 'delete', object: kind, objectId: id },
    change: null,
    read: () => ctx.records.topology.get(kind, id),
    appliedValue: null,
  };
  const version = await checkedWrite(ctx, settle, async (snapshot) => {
    const current = currentOf(snapshot, kind, id, expected);
    return {
      next: withObject(snapshot, kind, id, null),
      write: async (w) => {
        if (!(await w.topology.delete(kind, id, current.version))) throw stale(kind, id);
        return { commit: true, value: null };
      },
    };
  });
  const reload = await applied(ctx, settle, version);
  return { status: 204, view: null, etag: null, applied: reload };
}

/** The object a change or delete starts from, if it exists and `If-Match` (when given) names its version. */
function currentOf(snapshot: TopologySnapshot, kind: TopologyKind, id: string, expected: number | null): TopologyObject {
  const current = snapshot.objects.find((o) => o.kind === kind && o.id === id);
  if (current === undefined) throw new SwitchyardError('not_found', `no ${NOUNS[kind]} "${id}"`);
  if (expected !== null && current.version !== expected) throw stale(kind, id);
  return current;
}

const stale = (kind: TopologyKind, id: string): SwitchyardError =>
  new SwitchyardError('precondition_failed', `${NOUNS[kind]} "${id}" has changed since that ETag: read it again, then write`);

async function answered(
  ctx: TopologyWriteContext,
  settle: LostCommitCheck<null>,
  version: number | null,
  kind: TopologyKind,
  id: string,
  status: 200 | 201,
): Promise<Written> {
  const reload = await applied(ctx, settle, version);
  const object = await ctx.records.topology.get(kind, id);
  if (object === undefined) throw new SwitchyardError('not_found', `no ${NOUNS[kind]} "${id}"`);
  return { status, view: topologyView(object), etag: tagOf(object.version), applied: reload };
}
