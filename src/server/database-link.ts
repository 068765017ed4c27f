import { readFileSync } from 'node:fs';
import { type DatabaseConfig, resolveSecret } from '../config/index.js';
import {
  ChangeWatch,
  type Database,
  type DatabaseSettings,
  ManagedRecords,
  type ManagedSnapshot,
  type MigrationResult,
  migrate,
  openDatabase,
  type TopologySnapshot,
} from '../database/index.js';

// The gateway's one connection to its database, opened when the first generation is
// prepared (the config names it) and migrated then: a schema newer than this gateway knows
// stops the start. A reload that changes `database` keeps this connection (a restart
// changes it, as the reload's warnings say).

export class DatabaseLink {
  readonly #env: NodeJS.ProcessEnv;
  #opening: Promise<ManagedRecords> | null = null;
  #database: Database | null = null;
  #settings: DatabaseConfig | null = null;
  #records: ManagedRecords | null = null;
  #watch: ChangeWatch | null = null;
  /** What start-up's migration did, for the log once the logger exists. */
  migration: MigrationResult | null = null;

  constructor(env: NodeJS.ProcessEnv) {
    this.#env = env;
  }

  get records(): ManagedRecords | null {
    return this.#records;
  }

  get database(): Database | null {
    return this.#database;
  }

  /** The `database` settings the connection was opened with: a reload keeps them, as it keeps the connection. */
  get settings(): DatabaseConfig | null {
    return this.#settings;
  }

  get listening(): boolean {
    return this.#watch?.listening ?? false;
  }

  /** The teams and keys now: what prepareGeneration calls. */
  readonly snapshot = async (settings: DatabaseConfig): Promise<ManagedSnapshot> => (await this.open(settings)).snapshot();

  /** The providers, routes and prices written through the admin API now: what prepareGeneration calls. */
  readonly topology = async (settings: DatabaseConfig): Promise<TopologySnapshot> => (await this.open(settings)).topology.snapshot();

  /** Their version alone (one row): whether a database change touched them. */
  readonly topologyVersion = async (settings: DatabaseConfig): Promise<number> =>
    (await (await this.open(settings)).topology.state()).version;

  open(settings: DatabaseConfig): Promise<ManagedRecords> {
    this.#opening ??= this.#open(settings).catch((err: unknown) => {
      this.#opening = null;
      throw err;
    });
    return this.#opening;
  }

  async #open(settings: DatabaseConfig): Promise<ManagedRecords> {
    const database = openDatabase(this.#settingsOf(settings));
    let result: MigrationResult;
    try {
      result = await migrate(database.db, database.engine);
    } catch (err) {
      await database.close().catch(() => undefined);
      throw new Error(`the database's schema could not be brought up to date: ${(err as Error).message}`);
    }
    if (!result.ok) {
      await database.close().catch(() => undefined);
      throw new Error(result.message);
    }
    this.migration = result;
    this.#database = database;
    this.#settings = settings;
    this.#records = new ManagedRecords(database);
    return this.#records;
  }

  #settingsOf(settings: DatabaseConfig): DatabaseSettings {
    let password: string | undefined;
    if (settings.password !== undefined) {
      const secret = resolveSecret(settings.password, this.#env);
      if (!secret.ok) throw new Error(`database.password: ${secret.message}`);
      password = secret.value;
    }
    const tls = settings.tls;
    return {
      url: settings.url,
      ...(password === undefined ? {} : { password }),
      ...(tls === undefined
        ? {}
        : {
            tls: {
              ...(tls.ca === undefined ? {} : { ca: readFileSync(tls.ca.file, 'utf8') }),
              ...(tls.cert === undefined ? {} : { cert: readFileSync(tls.cert.file, 'utf8') }),
              ...(tls.key === undefined ? {} : { key: readFileSync(tls.key.file, 'utf8') }),
              ...(tls.server_name === undefined ? {} : { serverName: tls.server_name }),
            },
          }),
    };
  }

  /** Starts hearing of other replicas' writes (NOTIFY with Postgres, and the version check). */
  watch(options: { recheckMs: number; servingVersion: () => number | null; onChange: () => void; onProblem: (m: string) => void }): void {
    if (this.#database === null || this.#records === null || this.#watch !== null) return;
    this.#watch = new ChangeWatch({
      database: this.#database,
      records: this.#records,
      recheckMs: options.recheckMs,
      servingVersion: options.servingVersion,
      onChange: options.onChange,
      onProblem: options.onProblem,
    });
    this.#watch.start();
  }

  async close(): Promise<void> {
    await this.#watch?.stop();
    this.#watch = null;
    await this.#database?.close().catch(() => undefined);
    this.#database = null;
    this.#records = null;
  }
}
