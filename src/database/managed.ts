import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, Engine } from './engine.js';
import type { KeysTable, Tables, TeamsTable } from './tables.js';
import { TopologyRecords, TopologyWrites } from './topology.js';

// Teams and keys written through the admin API. The database holds them; a generation is
// built from a snapshot of them (never read on the request path). Every write bumps one
// version, in the same transaction, so a replica compares one number to know whether it is
// behind, and with Postgres every replica hears of the commit through NOTIFY.

/** The NOTIFY channel a commit is announced on; the payload is the new version. */
export const CHANGES_CHANNEL = 'switchyard_managed';

export interface ManagedTeam {
  readonly id: string;
  /** As the config file writes a team (rate_limit, quota, budget, allowed_models, allowed_tools, allowed_agents). */
  readonly spec: Record<string, unknown>;
  readonly metadata: Record<string, unknown>;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ManagedKey {
  readonly id: string;
  readonly team: string;
  readonly sha256: string;
  readonly prefix: string;
  /** The secret a rotation replaced, and until when it still works. */
  readonly previous: { readonly sha256: string; readonly until: string } | null;
  /** As the config file writes a key's limits (rpm, tpm, tokens_per_day, budget_usd_per_month, allowed_models, …). */
  readonly spec: Record<string, unknown>;
  readonly metadata: Record<string, unknown>;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly lastUsedAt: string | null;
}

/** What a generation is built from: every team and every key not revoked, at one version. */
export interface ManagedSnapshot {
  readonly version: number;
  readonly teams: readonly ManagedTeam[];
  readonly keys: readonly ManagedKey[];
}

export type WriteResult = 'ok' | 'missing' | 'stale';

/** A write the database refused for a constraint: an id or secret taken, a team that still has keys or does not exist. */
export class ConstraintError extends Error {
  readonly constraint: 'unique' | 'reference';
  constructor(constraint: 'unique' | 'reference', message: string) {
    super(message);
    this.constraint = constraint;
  }
}

/**
 * A write whose COMMIT was sent but whose answer never came (the connection died under it):
 * the database may or may not have committed it. `at` is the write's time, which the rows it
 * wrote carry in updated_at; `version` is the shared version it would have committed.
 */
export class CommitUnknownError extends Error {
  readonly at: string;
  readonly version: number;
  constructor(at: string, version: number, cause: unknown) {
    super(`the database did not answer the commit (${(cause as Error)?.message ?? String(cause)})`, { cause });
    this.at = at;
    this.version = version;
  }
}

export interface Page {
  readonly limit: number;
  /** Ids after this one (the previous page's last). */
  readonly after?: string;
}

const json = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;

function teamOf(row: TeamsTable): ManagedTeam {
  return {
    id: row.id,
    spec: json(row.spec),
    metadata: json(row.metadata),
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function keyOf(row: KeysTable): ManagedKey {
  return {
    id: row.id,
    team: row.team,
    sha256: row.sha256,
    prefix: row.prefix,
    previous:
      row.previous_sha256 !== null && row.previous_until !== null ? { sha256: row.previous_sha256, until: row.previous_until } : null,
    spec: json(row.spec),
    metadata: json(row.metadata),
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastUsedAt: row.last_used_at,
  };
}

export interface NewTeam {
  readonly id: string;
  readonly spec: Record<string, unknown>;
  readonly metadata: Record<string, unknown>;
}

export interface NewKey {
  readonly id: string;
  readonly team: string;
  readonly sha256: string;
  readonly prefix: string;
  readonly spec: Record<string, unknown>;
  readonly metadata: Record<string, unknown>;
  readonly expiresAt: string | null;
}

/** The writes of one transaction; each bumps the shared version once the transaction commits. */
export class ManagedWrites {
  readonly #tx: Transaction<Tables>;
  readonly #now: string;
  /** Providers, routes, tool routes and prices, written in the same transaction. */
  readonly topology: TopologyWrites;

  constructor(tx: Transaction<Tables>, now: string) {
    this.#tx = tx;
    this.#now = now;
    this.topology = new TopologyWrites(tx, now);
  }

  team(id: string): Promise<ManagedTeam | undefined> {
    return this.#tx
      .selectFrom('teams')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
      .then((r) => (r === undefined ? undefined : teamOf(r)));
  }

  key(id: string): Promise<ManagedKey | undefined> {
    return this.#tx
      .selectFrom('keys')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
      .then((r) => (r === undefined ? undefined : keyOf(r)));
  }

  async keyCount(team: string): Promise<number> {
    const row = await this.#tx
      .selectFrom('keys')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('team', '=', team)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async insertTeam(t: NewTeam): Promise<void> {
    await this.#tx
      .insertInto('teams')
      .values({
        id: t.id,
        spec: JSON.stringify(t.spec),
        metadata: JSON.stringify(t.metadata),
        version: 1,
        created_at: this.#now,
        updated_at: this.#now,
      })
      .execute();
  }

  async updateTeam(
    id: string,
    ifVersion: number | null,
    spec: Record<string, unknown>,
    metadata: Record<string, unknown>,
  ): Promise<WriteResult> {
    let q = this.#tx
      .updateTable('teams')
      .set((eb) => ({
        spec: JSON.stringify(spec),
        metadata: JSON.stringify(metadata),
        version: eb('version', '+', 1),
        updated_at: this.#now,
      }))
      .where('id', '=', id);
    if (ifVersion !== null) q = q.where('version', '=', ifVersion);
    return this.#judged(await q.executeTakeFirst(), () => this.team(id));
  }

  async deleteTeam(id: string, ifVersion: number | null): Promise<WriteResult> {
    let q = this.#tx.deleteFrom('teams').where('id', '=', id);
    if (ifVersion !== null) q = q.where('version', '=', ifVersion);
    const r = await q.executeTakeFirst();
    return Number(r.numDeletedRows) > 0 ? 'ok' : (await this.team(id)) === undefined ? 'missing' : 'stale';
  }

  async insertKey(k: NewKey): Promise<void> {
    await this.#tx
      .insertInto('keys')
      .values({
        id: k.id,
        team: k.team,
        sha256: k.sha256,
        prefix: k.prefix,
        previous_sha256: null,
        previous_until: null,
        spec: JSON.stringify(k.spec),
        metadata: JSON.stringify(k.metadata),
        expires_at: k.expiresAt,
        revoked_at: null,
        version: 1,
        created_at: this.#now,
        updated_at: this.#now,
        last_used_at: null,
      })
      .execute();
  }

  async updateKey(
    id: string,
    ifVersion: number | null,
    change: {
      readonly spec?: Record<string, unknown>;
      readonly metadata?: Record<string, unknown>;
      readonly expiresAt?: string | null;
      readonly revokedAt?: string;
      readonly secret?: { readonly sha256: string; readonly prefix: string; readonly previous: { sha256: string; until: string } | null };
    },
  ): Promise<WriteResult> {
    let q = this.#tx
      .updateTable('keys')
      .set((eb) => ({
        version: eb('version', '+', 1),
        updated_at: this.#now,
        ...(change.spec === undefined ? {} : { spec: JSON.stringify(change.spec) }),
        ...(change.metadata === undefined ? {} : { metadata: JSON.stringify(change.metadata) }),
        ...(change.expiresAt === undefined ? {} : { expires_at: change.expiresAt }),
        ...(change.revokedAt === undefined ? {} : { revoked_at: change.revokedAt }),
        ...(change.secret === undefined
          ? {}
          : {
              sha256: change.secret.sha256,
              prefix: change.secret.prefix,
              previous_sha256: change.secret.previous?.sha256 ?? null,
              previous_until: change.secret.previous?.until ?? null,
            }),
      }))
      .where('id', '=', id);
    if (ifVersion !== null) q = q.where('version', '=', ifVersion);
    return this.#judged(await q.executeTakeFirst(), () => this.key(id));
  }

  async #judged(r: { numUpdatedRows: bigint }, find: () => Promise<unknown>): Promise<WriteResult> {
    if (Number(r.numUpdatedRows) > 0) return 'ok';
    return (await find()) === undefined ? 'missing' : 'stale';
  }
}

export class ManagedRecords {
  readonly #db: Kysely<Tables>;
  readonly #engine: Engine;
  /** The topology rows' reads (their writes are ManagedWrites.topology, in `write`). */
  readonly topology: TopologyRecords;
  /**
   * Versions this process committed and applies itself (the admin write's own reload): their
   * NOTIFY, which reaches this replica too, is not another change to reload for. Bounded: a
   * notification that never comes (no LISTEN) leaves its version here until pushed out.
   */
  readonly #own = new Set<number>();

  constructor(database: Database) {
    this.#db = database.db;
    this.#engine = database.engine;
    this.topology = new TopologyRecords(database.db);
  }

  async version(): Promise<number> {
    const row = await this.#db.selectFrom('managed_state').select('version').where('id', '=', 1).executeTakeFirst();
    return Number(row?.version ?? 0);
  }

  /** Every team and every key not revoked, read in one transaction, so they belong to one version. */
  snapshot(): Promise<ManagedSnapshot> {
    return this.#db.transaction().execute(async (tx) => {
      const state = await tx.selectFrom('managed_state').select('version').where('id', '=', 1).executeTakeFirst();
      const teams = await tx.selectFrom('teams').selectAll().orderBy('id').execute();
      const keys = await tx.selectFrom('keys').selectAll().where('revoked_at', 'is', null).orderBy('id').execute();
      return { version: Number(state?.version ?? 0), teams: teams.map(teamOf), keys: keys.map(keyOf) };
    });
  }

  async listTeams(page: Page): Promise<ManagedTeam[]> {
    let q = this.#db.selectFrom('teams').selectAll().orderBy('id').limit(page.limit);
    if (page.after !== undefined) q = q.where('id', '>', page.after);
    return (await q.execute()).map(teamOf);
  }

  async team(id: string): Promise<ManagedTeam | undefined> {
    const row = await this.#db.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
    return row === undefined ? undefined : teamOf(row);
  }

  async listKeys(page: Page & { readonly team?: string; readonly revoked?: boolean }): Promise<ManagedKey[]> {
    let q = this.#db.selectFrom('keys').selectAll().orderBy('id').limit(page.limit);
    if (page.after !== undefined) q = q.where('id', '>', page.after);
    if (page.team !== undefined) q = q.where('team', '=', page.team);
    if (page.revoked === false) q = q.where('revoked_at', 'is', null);
    return (await q.execute()).map(keyOf);
  }

  async key(id: string): Promise<ManagedKey | undefined> {
    const row = await this.#db.selectFrom('keys').selectAll().where('id', '=', id).executeTakeFirst();
    return row === undefined ? undefined : keyOf(row);
  }

  /**
   * Runs `change` in one transaction; when it returns `commit: true` the shared version is
   * bumped (and, with Postgres, announced) in that transaction, else it is rolled back. A
   * change that wrote topology bumps the topology's version too, only from `topologyBasedOn`
   * when given (else TopologyMovedError, and nothing is written).
   */
  async write<T>(
    change: (w: ManagedWrites) => Promise<{ readonly commit: boolean; readonly value: T }>,
    options: { readonly topologyBasedOn?: number } = {},
  ): Promise<{ value: T; version: number | null }> {
    const at = new Date().toISOString();
    // Set when the callback is done: Kysely sends COMMIT next, so a failure after it is the commit's.
    let committing: number | null = null;
    try {
      return await this.#db.transaction().execute(async (tx) => {
        const writes = new ManagedWrites(tx, at);
        const outcome = await change(writes);
        if (!outcome.commit) throw new Rollback(outcome.value);
        if (writes.topology.touched) await writes.topology.bump(options.topologyBasedOn ?? null);
        const state = await tx
          .updateTable('managed_state')
          .set((eb) => ({ version: eb('version', '+', 1) }))
          .where('id', '=', 1)
          .returning('version')
          .executeTakeFirstOrThrow();
        const version = Number(state.version);
        if (this.#engine === 'postgres') await sql`select pg_notify(${CHANGES_CHANNEL}, ${String(version)})`.execute(tx);
        committing = version;
        if (this.#engine === 'postgres') this.#own.add(version);
        if (this.#own.size > MAX_OWN_VERSIONS) this.#own.delete(this.#own.values().next().value as number);
        return { value: outcome.value, version };
      });
    } catch (err) {
      if (err instanceof Rollback) return { value: err.value as T, version: null };
      // Rolled back for certain: another replica may commit this version, and must be heard.
      if (committing !== null && (err as { severity?: unknown })?.severity !== undefined) this.#own.delete(committing);
      // A server that answered the COMMIT with an error (it has a severity) rolled back; a
      // connection that died under it leaves the outcome with the server. SQLite's commit
      // is in process: its answer is never lost.
      if (committing !== null && this.#engine === 'postgres' && (err as { severity?: unknown })?.severity === undefined) {
        throw new CommitUnknownError(at, committing, err);
      }
      throw constraintOf(err) ?? err;
    }
  }

  /** Whether this process committed `version` itself (once: the answer is forgotten). */
  ownCommit(version: number): boolean {
    return this.#own.delete(version);
  }

  /** Records when keys were last used (at most one write per key, batched, off the request path). */
  async touchKeys(lastUsed: ReadonlyMap<string, string>): Promise<void> {
    if (lastUsed.size === 0) return;
    await this.#db.transaction().execute(async (tx) => {
      for (const [id, at] of lastUsed) {
        await tx
          .updateTable('keys')
          .set({ last_used_at: at })
          .where('id', '=', id)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
          .execute();
      }
    });
  }
}

/** Own versions remembered at most (see ManagedRecords.#own). */
const MAX_OWN_VERSIONS = 1000;

class Rollback {
  readonly value: unknown;
  constructor(value: unknown) {
    this.value = value;
  }
}

/** A unique or foreign-key violation of either engine, as a ConstraintError; null for anything else. */
function constraintOf(err: unknown): ConstraintError | null {
  const code = (err as { code?: unknown })?.code;
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    return new ConstraintError('unique', 'already exists');
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY')
    return new ConstraintError('reference', 'is referenced, or references nothing');
  return null;
}
