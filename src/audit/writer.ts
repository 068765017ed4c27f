import { type FileHandle, open } from 'node:fs/promises';
import { readFileSlice } from '../contract/index.js';
import { GENESIS_HASH, MAX_RECORD_BYTES, recordHash } from './chain.js';
import type { AuditEvent } from './records.js';
import { UlidGenerator } from './ulid.js';

export interface AuditFailure {
  /** `write`: records are kept and retried; `dropped`: records lost (queue full, or unwritten at close). */
  readonly kind: 'write' | 'dropped';
  readonly records: number;
  readonly message: string;
}

export interface AuditWriterOptions {
  readonly path: string;
  /** This process's name in every record (e.g. host name + pid). */
  readonly instance: string;
  /** Every failed append, for the log and `switchyard_audit_failures_total`. */
  readonly onFailure?: (f: AuditFailure) => void;
  readonly clock?: () => number;
  /** Records waiting while the disk refuses; beyond this the oldest are dropped (and reported). */
  readonly maxPending?: number;
  readonly retryMs?: number;
}

/** The existing file cannot be continued (its last record is torn or too long). */
export class AuditFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditFileError';
  }
}

/** Where records go: an append-only file handle (a stand-in in tests that make the disk fail). */
export interface AuditSink {
  write(bytes: Buffer, offset: number, length: number): Promise<{ bytesWritten: number }>;
  close(): Promise<void>;
}

interface Pending {
  readonly fields: Record<string, unknown>;
}

/**
 * The one appender of an audit file. `append` stamps a record (ULID id, ts, instance) at
 * once, in call order; a single drain loop then chains and writes them. A record's
 * prev_hash is computed when it is written, from the bytes actually written before it, so
 * a failed write keeps the chain whole: the records stay queued and are retried. Nothing
 * is dropped silently: a failure is counted and reported, a drop too.
 */
export class AuditWriter {
  readonly #handle: AuditSink;
  readonly #instance: string;
  readonly #onFailure: (f: AuditFailure) => void;
  readonly #clock: () => number;
  readonly #ids: UlidGenerator;
  readonly #maxPending: number;
  readonly #retryMs: number;
  #lastHash: string;
  #queue: Pending[] = [];
  #draining: Promise<void> | null = null;
  #retryTimer: NodeJS.Timeout | null = null;
  #closed = false;
  #written = 0;
  #failedWrites = 0;
  #dropped = 0;

  private constructor(handle: AuditSink, lastHash: string, options: AuditWriterOptions) {
    this.#handle = handle;
    this.#lastHash = lastHash;
    this.#instance = options.instance;
    this.#onFailure = options.onFailure ?? (() => undefined);
    this.#clock = options.clock ?? Date.now;
    this.#ids = new UlidGenerator(this.#clock);
    this.#maxPending = options.maxPending ?? 10_000;
    this.#retryMs = options.retryMs ?? 1000;
  }

  /** Opens (or creates) the file and continues its chain from its last record. */
  static async open(options: AuditWriterOptions): Promise<AuditWriter> {
    const lastHash = await lastRecordHash(options.path);
    let handle: FileHandle;
    try {
      handle = await open(options.path, 'a', 0o600);
    } catch (err) {
      throw new AuditFileError(
        `audit file ${JSON.stringify(options.path)}: cannot open for appending (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    return new AuditWriter(handle, lastHash, options);
  }

  /** A writer over another sink, continuing from `lastHash` (tests inject failing disks this way). */
  static overSink(sink: AuditSink, lastHash: string, options: AuditWriterOptions): AuditWriter {
    return new AuditWriter(sink, lastHash, options);
  }

  get written(): number {
    return this.#written;
  }

  /** Write attempts that failed (their records were kept for a retry). */
  get failedWrites(): number {
    return this.#failedWrites;
  }

  get dropped(): number {
    return this.#dropped;
  }

  append(event: AuditEvent): void {
    if (this.#closed) {
      this.#drop(1, 'the audit writer is closed');
      return;
    }
    const fields = { id: this.#ids.next(), ts: new Date(this.#clock()).toISOString(), instance: this.#instance, ...event };
    this.#queue.push({ fields });
    if (this.#queue.length > this.#maxPending) {
      const excess = this.#queue.length - this.#maxPending;
      this.#queue.splice(0, excess);
      this.#drop(excess, `more than ${this.#maxPending} records waiting for the disk`);
    }
    // While a retry is scheduled the disk is failing: wait for it rather than fail per record.
    if (this.#retryTimer === null) void this.#drain();
  }

  /** Resolves when every record appended so far is written, or has failed (and been reported). */
  async flush(): Promise<void> {
    for (let round = 0; round < 3 && this.#queue.length > 0; round += 1) await this.#drain();
    await this.#draining;
  }

  /** Flushes (a few tries), reports what could not be written, and closes the file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
    await this.flush();
    if (this.#queue.length > 0) {
      this.#drop(this.#queue.length, 'unwritten when the audit writer closed');
      this.#queue = [];
    }
    await this.#handle.close();
  }

  #drop(records: number, message: string): void {
    this.#dropped += records;
    this.#onFailure({ kind: 'dropped', records, message });
  }

  #drain(): Promise<void> {
    if (this.#draining === null) {
      this.#draining = this.#writeQueued().finally(() => {
        this.#draining = null;
      });
    }
    return this.#draining;
  }

  async #writeQueued(): Promise<void> {
    // Bounded: each round writes at least one record or stops.
    while (this.#queue.length > 0) {
      const batch = this.#queue.slice(0, 512);
      let hash = this.#lastHash;
      const lines: string[] = [];
      for (const p of batch) {
        const line = JSON.stringify({ ...p.fields, prev_hash: hash });
        hash = recordHash(Buffer.from(line, 'utf8'));
        lines.push(line);
      }
      const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
      try {
        let offset = 0;
        for (let i = 0; i < 1000 && offset < bytes.length; i += 1) {
          const { bytesWritten } = await this.#handle.write(bytes, offset, bytes.length - offset);
          offset += bytesWritten;
        }
        if (offset < bytes.length) throw new Error('short write');
      } catch (err) {
        this.#failedWrites += 1;
        this.#onFailure({ kind: 'write', records: batch.length, message: `audit append failed: ${(err as Error).message}` });
        this.#scheduleRetry();
        return;
      }
      this.#lastHash = hash;
      this.#written += batch.length;
      this.#queue.splice(0, batch.length);
    }
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer !== null) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      void this.#drain();
    }, this.#retryMs);
    this.#retryTimer.unref();
  }
}

/** The hash the next record chains to: of the file's last record, or the genesis value. */
async function lastRecordHash(path: string): Promise<string> {
  const probe = await readFileSlice(path, 0, 0, 'audit file');
  if (!probe.ok) {
    if (probe.reason === 'missing') return GENESIS_HASH;
    throw new AuditFileError(probe.message);
  }
  if (probe.size === 0) return GENESIS_HASH;
  const start = Math.max(0, probe.size - (MAX_RECORD_BYTES + 1));
  const tail = await readFileSlice(path, start, probe.size - start, 'audit file');
  if (!tail.ok) throw new AuditFileError(tail.message);
  const bytes = tail.bytes;
  if (bytes[bytes.length - 1] !== 0x0a) {
    throw new AuditFileError(
      `audit file ${JSON.stringify(path)}: its last record is incomplete (no final newline); run "switchyard audit verify" and repair or move the file`,
    );
  }
  const from = bytes.lastIndexOf(0x0a, bytes.length - 2);
  if (from === -1 && start > 0)
    throw new AuditFileError(`audit file ${JSON.stringify(path)}: its last record is longer than ${MAX_RECORD_BYTES} bytes`);
  return recordHash(bytes.subarray(from + 1, bytes.length - 1));
}
