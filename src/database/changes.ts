import pg from 'pg';
import type { Database } from './engine.js';
import { CHANGES_CHANNEL, type ManagedRecords } from './managed.js';

// How a replica learns that another one committed a write: Postgres NOTIFY on a connection
// of its own, held open and re-opened with backoff, and, for a notification missed while it
// was down (or with SQLite, which has no NOTIFY), a version check every `recheckMs`.

export interface ChangeWatchOptions {
  readonly database: Database;
  readonly records: ManagedRecords;
  readonly recheckMs: number;
  /** The version the serving generation was built from. */
  readonly servingVersion: () => number | null;
  /** A newer version exists (or may: a notification); the caller reloads. */
  readonly onChange: (why: 'notify' | 'recheck') => void;
  readonly onProblem?: (message: string) => void;
}

const MAX_BACKOFF_MS = 30_000;

export class ChangeWatch {
  readonly #options: ChangeWatchOptions;
  #client: pg.Client | null = null;
  #timer: NodeJS.Timeout | null = null;
  #retry: NodeJS.Timeout | null = null;
  #failures = 0;
  #stopped = false;
  #checking = false;

  constructor(options: ChangeWatchOptions) {
    this.#options = options;
  }

  /** Whether the NOTIFY connection is open (always false with SQLite). */
  get listening(): boolean {
    return this.#client !== null;
  }

  start(): void {
    if (this.#options.database.pgConfig !== null) void this.#listen();
    if (this.#options.recheckMs > 0) {
      this.#timer = setInterval(() => void this.#recheck(), this.#options.recheckMs);
      this.#timer.unref();
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    if (this.#retry !== null) clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => undefined);
  }

  async #listen(): Promise<void> {
    const config = this.#options.database.pgConfig;
    if (config === null || this.#stopped) return;
    const client = new pg.Client(config);
    const lost = (err?: Error): void => {
      if (this.#client !== client) return;
      this.#client = null;
      client.end().catch(() => undefined);
      if (err !== undefined) this.#options.onProblem?.(`the database's change notifications stopped: ${err.message}`);
      this.#again();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (n) => {
      if (n.channel !== CHANGES_CHANNEL) return;
      // This replica's own write, which it applies itself before answering: reloading for
      // its notification too would leave the write's own reload finding nothing new.
      if (this.#options.records.ownCommit(Number(n.payload))) return;
      this.#options.onChange('notify');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      client.end().catch(() => undefined);
      this.#options.onProblem?.(`cannot listen for the database's changes: ${(err as Error).message}`);
      this.#again();
      return;
    }
    if (this.#stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#failures = 0;
    // What was committed while no connection listened is caught by this look.
    void this.#recheck();
  }

  #again(): void {
    if (this.#stopped) return;
    const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(this.#failures, 6));
    this.#failures += 1;
    this.#retry = setTimeout(() => void this.#listen(), delay);
    this.#retry.unref();
  }

  async #recheck(): Promise<void> {
    if (this.#checking || this.#stopped) return;
    this.#checking = true;
    try {
      const version = await this.#options.records.version();
      if (version !== this.#options.servingVersion()) this.#options.onChange('recheck');
    } catch (err) {
      this.#options.onProblem?.(`the database's version could not be read: ${(err as Error).message}`);
    } finally {
      this.#checking = false;
    }
  }
}
