import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, type SqliteDatabase, SqliteDialect, type SqliteStatement } from 'kysely';
import pg from 'pg';
import { ReadWorker } from './read-worker.js';
import type { Tables } from './tables.js';

// One query layer over two engines: SQLite (embedded, one replica) and Postgres (shared by
// replicas). Kysely speaks both; what differs (LISTEN/NOTIFY, partitions) is asked of
// `engine` where it is used.

export type Engine = 'sqlite' | 'postgres';

export interface DatabaseSettings {
  /** `sqlite:<path>` or `postgres://user@host:port/db` (no password in it). */
  readonly url: string;
  /** Resolved from its secret reference; never logged. */
  readonly password?: string;
  /** Postgres TLS: a private CA, a client certificate, the name to verify (file contents, already read). */
  readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly serverName?: string };
}

export interface Database {
  readonly engine: Engine;
  readonly db: Kysely<Tables>;
  /** Postgres only: the connection settings, for a LISTEN connection of its own. */
  readonly pgConfig: pg.ClientConfig | null;
  /** Postgres only: the pool Kysely runs on, for what Kysely does not speak (COPY). */
  readonly pgPool: pg.Pool | null;
  /** SQLite on a file only: the thread the usage API's reads run on, off the event loop. */
  readonly readWorker: ReadWorker | null;
  close(): Promise<void>;
}

/** The engine a database URL names, or null when it names neither. */
export function engineOf(url: string): Engine | null {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return 'postgres';
  return null;
}

/** The file a `sqlite:` URL names (`sqlite:path`, `sqlite://path`, or `sqlite::memory:`). */
export function sqlitePath(url: string): string {
  const rest = url.slice('sqlite:'.length);
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

export function openDatabase(settings: DatabaseSettings): Database {
  const engine = engineOf(settings.url);
  if (engine === null) throw new Error('database.url must start with sqlite: or postgres://');
  if (engine === 'sqlite') {
    const path = sqlitePath(settings.url);
    const file = new BetterSqlite3(path);
    // WAL: the ledger's batches and the admin API's writes do not block readers.
    file.pragma('journal_mode = WAL');
    file.pragma('foreign_keys = ON');
    // better-sqlite3 waits for a lock on the event loop: another process writing the file
    // (an operator's sqlite3 shell) must cost requests at most this, not seconds. A write that
    // finds the file locked fails: the ledger retries it, an admin write answers 503.
    file.pragma('busy_timeout = 200');
    const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(file) }) });
    const readWorker = path === '' || path === ':memory:' ? null : new ReadWorker(path);
    const close = async (): Promise<void> => {
      await readWorker?.close();
      await db.destroy();
    };
    return { engine, db, pgConfig: null, pgPool: null, readWorker, close };
  }
  const pgConfig: pg.ClientConfig = { connectionString: settings.url };
  if (settings.password !== undefined) pgConfig.password = settings.password;
  if (settings.tls !== undefined) {
    const { ca, cert, key, serverName } = settings.tls;
    pgConfig.ssl = {
      rejectUnauthorized: true,
      ...(ca === undefined ? {} : { ca }),
      ...(cert === undefined ? {} : { cert }),
      ...(key === undefined ? {} : { key }),
      ...(serverName === undefined ? {} : { servername: serverName }),
    };
  }
  // Bounded waits: a connection that cannot be made, or a statement the network swallowed,
  // fails and is retried by its caller (the ledger keeps its queue, a write answers 503)
  // rather than holding a pool slot, and the ledger writer behind it, for ever.
  const pool = new pg.Pool({
    ...pgConfig,
    max: 4,
    connectionTimeoutMillis: 5_000,
    query_timeout: 30_000,
    statement_timeout: 30_000,
    keepAlive: true,
  });
  // An idle connection the server closed must not become an uncaught error: the next query reconnects.
  pool.on('error', () => undefined);
  // A client checked out but between queries (a Kysely transaction awaiting its next
  // statement) that loses its server emits 'error' with no query to hand it to, and pg-pool
  // listens only on idle clients: without a listener of its own that event ends the
  // process. The next query on that client fails instead, and the pool drops it.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
  return { engine, db, pgConfig, pgPool: pool, readWorker: null, close: () => db.destroy() };
}

/** Prepared statements kept at most; past it the oldest is dropped (SQLite finalizes it when collected). */
const STATEMENT_CACHE = 256;

/**
 * Kysely prepares every statement it runs; better-sqlite3 statements can be reused, and
 * preparing is much of a small query's cost (and of each ledger batch's: its statement
 * text does not change). Statements are cached by their SQL text.
 */
function withStatementCache(file: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => file.close(),
    prepare(text) {
      const hit = cache.get(text);
      if (hit !== undefined) return hit;
      const statement = file.prepare(text);
      if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value as string);
      cache.set(text, statement);
      return statement;
    },
  };
}
