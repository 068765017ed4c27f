import type { Redis } from 'ioredis';
import type { Database } from './engine.js';
import type { ReplicasTable } from './tables.js';

// Each replica's heartbeat: which generation it serves, that generation's topology digest,
// and its last refused reload. Kept where the replicas already meet: the database's
// `replicas` table, or without a database a hash in the governance store's Redis. Written by
// the heartbeat timer (never on the request path); read by /admin/v1/replicas and the status
// page. Every writer also drops the rows of replicas gone for long, so a fleet that scales
// down or restarts leaves no ghosts.

/** One replica's record, with the table's column names (what the admin API shows). */
export type ReplicaRecord = Readonly<ReplicasTable>;

export interface ReplicaRecords {
  /** Where the records are kept, for the views. */
  readonly kind: 'database' | 'redis';
  /** Writes this replica's record, and deletes the records whose heartbeat is older than `goneBefore` (ISO time). */
  beat(record: ReplicaRecord, goneBefore: string): Promise<void>;
  /** Every record kept, by instance. */
  list(): Promise<ReplicaRecord[]>;
  /** Deletes one replica's record (a replica that stops cleanly). */
  remove(instance: string): Promise<void>;
}

/** The `replicas` table (schema 6) of the database the replicas share. */
export class DatabaseReplicaRecords implements ReplicaRecords {
  readonly kind = 'database';
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async beat(record: ReplicaRecord, goneBefore: string): Promise<void> {
    const { db } = this.#database;
    const { instance, ...rest } = record;
    await db
      .insertInto('replicas')
      .values({ ...record })
      .onConflict((oc) => oc.column('instance').doUpdateSet({ ...rest }))
      .execute();
    await db.deleteFrom('replicas').where('heartbeat_at', '<', goneBefore).where('instance', '!=', instance).execute();
  }

  async list(): Promise<ReplicaRecord[]> {
    const rows = await this.#database.db.selectFrom('replicas').selectAll().orderBy('instance').execute();
    // Postgres hands an integer column back as a number, SQLite too; a bigint driver would not.
    return rows.map((r) => ({ ...r, generation: Number(r.generation) }));
  }

  async remove(instance: string): Promise<void> {
    await this.#database.db.deleteFrom('replicas').where('instance', '=', instance).execute();
  }
}

/**
 * A hash `<key_prefix>replicas` in Redis: a field per instance, its value the record as JSON.
 * The hash expires `expireMs` after the last heartbeat of any replica, so a fleet that is gone
 * leaves nothing behind either.
 */
export class RedisReplicaRecords implements ReplicaRecords {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #key: string;
  readonly #expireMs: number;

  constructor(options: { readonly redis: Redis; readonly keyPrefix: string; readonly expireMs: number }) {
    this.#redis = options.redis;
    this.#key = `${options.keyPrefix}replicas`;
    this.#expireMs = Math.max(1, Math.round(options.expireMs));
  }

  async beat(record: ReplicaRecord, goneBefore: string): Promise<void> {
    await this.#redis.multi().hset(this.#key, record.instance, JSON.stringify(record)).pexpire(this.#key, this.#expireMs).exec();
    const gone = (await this.list()).filter((r) => r.instance !== record.instance && r.heartbeat_at < goneBefore).map((r) => r.instance);
    if (gone.length > 0) await this.#redis.hdel(this.#key, ...gone);
  }

  async list(): Promise<ReplicaRecord[]> {
    const fields = await this.#redis.hgetall(this.#key);
    const out: ReplicaRecord[] = [];
    for (const instance of Object.keys(fields).sort()) {
      const record = parseRecord(instance, fields[instance] as string);
      if (record !== null) out.push(record);
    }
    return out;
  }

  async remove(instance: string): Promise<void> {
    await this.#redis.hdel(this.#key, instance);
  }
}

/** A field's JSON as a record, or null when it is not one (written by something else): it is then ignored. */
function parseRecord(instance: string, text: string): ReplicaRecord | null {
  let v: Partial<Record<keyof ReplicasTable, unknown>>;
  try {
    v = JSON.parse(text) as typeof v;
  } catch {
    return null;
  }
  if (v === null || typeof v !== 'object') return null;
  const str = (x: unknown): x is string => typeof x === 'string';
  if (typeof v.generation !== 'number' || !str(v.digest) || !str(v.built_at) || !str(v.heartbeat_at) || !str(v.digest_since)) return null;
  return {
    instance,
    generation: v.generation,
    digest: v.digest,
    built_at: v.built_at,
    heartbeat_at: v.heartbeat_at,
    digest_since: v.digest_since,
    last_reload_error: str(v.last_reload_error) ? v.last_reload_error : null,
  };
}
