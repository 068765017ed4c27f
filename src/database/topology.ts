import type { Kysely, Transaction } from 'kysely';
import type { Tables, TopologyTable } from './tables.js';

// Providers, model routes, tool routes and prices written through the admin API. Each row is
// the object as the config file writes it under its name (JSON; secrets only as references),
// so a generation is built from them exactly as from the file. A topology write bumps the
// shared version (every replica hears of it as of a key's write) and the topology's own, which
// tells a replica whether its routes must be rebuilt or only its keyring. The seed's marker
// lives beside that version: once set, the file's topology is never imported again, so an
// object deleted through the API is never brought back by a later seed.

/** What a row holds: the kinds of topology the admin API writes. */
export const TOPOLOGY_KINDS = ['provider', 'route', 'tool_route', 'price'] as const;
export type TopologyKind = (typeof TOPOLOGY_KINDS)[number];

export interface TopologyObject {
  readonly kind: TopologyKind;
  readonly id: string;
  /** As the config file writes it under `providers.<id>`, `routing.routes.<id>`, `routing.tools.<id>` or `pricing.models.<id>`. */
  readonly spec: Record<string, unknown>;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** Every topology row at one topology version, and whether the file's topology was seeded. */
export interface TopologySnapshot {
  readonly version: number;
  /** When `switchyard db seed` imported the file's topology; null: never. */
  readonly seededAt: string | null;
  readonly objects: readonly TopologyObject[];
}

export interface TopologyState {
  readonly version: number;
  readonly seededAt: string | null;
  readonly seededFrom: string | null;
}

export const EMPTY_TOPOLOGY: TopologySnapshot = Object.freeze({ version: 0, seededAt: null, objects: Object.freeze([]) });

function objectOf(row: TopologyTable): TopologyObject {
  return {
    kind: row.kind as TopologyKind,
    id: row.id,
    spec: JSON.parse(row.spec) as Record<string, unknown>,
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A topology write found the topology moved on since the generation it was checked against: check again, then write. */
export class TopologyMovedError extends Error {
  constructor() {
    super('the topology changed while this write was being checked');
  }
}

/** The topology writes of one transaction (ManagedWrites.topology). */
export class TopologyWrites {
  readonly #tx: Transaction<Tables>;
  readonly #now: string;
  /** Set once the transaction wrote a topology row: the commit then bumps the topology's version too. */
  touched = false;

  constructor(tx: Transaction<Tables>, now: string) {
    this.#tx = tx;
    this.#now = now;
  }

  async get(kind: TopologyKind, id: string): Promise<TopologyObject | undefined> {
    const row = await this.#tx.selectFrom('topology').selectAll().where('kind', '=', kind).where('id', '=', id).executeTakeFirst();
    return row === undefined ? undefined : objectOf(row);
  }

  async state(): Promise<TopologyState> {
    return stateOf(this.#tx);
  }

  async insert(kind: TopologyKind, id: string, spec: Record<string, unknown>): Promise<void> {
    this.touched = true;
    await this.#tx
      .insertInto('topology')
      .values({ kind, id, spec: JSON.stringify(spec), version: 1, created_at: this.#now, updated_at: this.#now })
      .execute();
  }

  /** Replaces the object's spec when its version is still `ifVersion`; false when it is not (or is gone). */
  async update(kind: TopologyKind, id: string, ifVersion: number, spec: Record<string, unknown>): Promise<boolean> {
    const r = await this.#tx
      .updateTable('topology')
      .set((eb) => ({ spec: JSON.stringify(spec), version: eb('version', '+', 1), updated_at: this.#now }))
      .where('kind', '=', kind)
      .where('id', '=', id)
      .where('version', '=', ifVersion)
      .executeTakeFirst();
    const done = Number(r.numUpdatedRows) > 0;
    if (done) this.touched = true;
    return done;
  }

  async delete(kind: TopologyKind, id: string, ifVersion: number): Promise<boolean> {
    const r = await this.#tx
      .deleteFrom('topology')
      .where('kind', '=', kind)
      .where('id', '=', id)
      .where('version', '=', ifVersion)
      .executeTakeFirst();
    const done = Number(r.numDeletedRows) > 0;
    if (done) this.touched = true;
    return done;
  }

  /** Sets the seed's marker (in the transaction that imports the file's topology). */
  async markSeeded(sourceHash: string): Promise<void> {
    this.touched = true;
    await this.#tx.updateTable('topology_state').set({ seeded_at: this.#now, seeded_from: sourceHash }).where('id', '=', 1).execute();
  }

  /**
   * Bumps the topology's version, only from `basedOn` when given (the version the write was
   * checked against): another write committed meanwhile throws TopologyMovedError, and the
   * transaction rolls back.
   */
  async bump(basedOn: number | null): Promise<number> {
    let q = this.#tx
      .updateTable('topology_state')
      .set((eb) => ({ version: eb('version', '+', 1) }))
      .where('id', '=', 1);
    if (basedOn !== null) q = q.where('version', '=', basedOn);
    const row = await q.returning('version').executeTakeFirst();
    if (row === undefined) throw new TopologyMovedError();
    return Number(row.version);
  }
}

async function stateOf(db: Kysely<Tables> | Transaction<Tables>): Promise<TopologyState> {
  const row = await db.selectFrom('topology_state').selectAll().where('id', '=', 1).executeTakeFirst();
  return { version: Number(row?.version ?? 0), seededAt: row?.seeded_at ?? null, seededFrom: row?.seeded_from ?? null };
}

/** The reads of the topology rows, outside any write. */
export class TopologyRecords {
  readonly #db: Kysely<Tables>;

  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  state(): Promise<TopologyState> {
    return stateOf(this.#db);
  }

  /** Every row, read in one transaction with the version they belong to. */
  snapshot(): Promise<TopologySnapshot> {
    return this.#db.transaction().execute(async (tx) => {
      const state = await stateOf(tx);
      const rows = await tx.selectFrom('topology').selectAll().orderBy('kind').orderBy('id').execute();
      return { version: state.version, seededAt: state.seededAt, objects: rows.map(objectOf) };
    });
  }

  async get(kind: TopologyKind, id: string): Promise<TopologyObject | undefined> {
    const row = await this.#db.selectFrom('topology').selectAll().where('kind', '=', kind).where('id', '=', id).executeTakeFirst();
    return row === undefined ? undefined : objectOf(row);
  }
}
