import { createHash } from 'node:crypto';
import { type FileHandle, open, rename, stat } from 'node:fs/promises';
import { readFileSlice } from '../contract/index.js';
import { GENESIS_HASH, MAX_RECORD_BYTES, recordHash } from './chain.js';
import { type AnchorReason, type AuditEvent, anchor, gap } from './records.js';
import { UlidGenerator } from './ulid.js';

export interface AuditFailure {
  /** `write`: records are kept and retried; `dropped`: records lost (queue full, or unwritten at close). */
  readonly kind: 'write' | 'dropped';
  readonly records: number;
  readonly message: string;
}

/**
 * Something the operator should know that is not a failed append: `repaired`, a torn tail
 * cut at start-up or a torn write cut back; `reopened`, the file was deleted, replaced or
 * cut under the writer, which went on in a new file anchored to the old one; `rotated`, the
 * writer moved a file that reached `maxBytes` aside itself.
 */
export interface AuditNotice {
  readonly kind: 'repaired' | 'reopened' | 'rotated';
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
}

export interface AuditWriterOptions {
  readonly path: string;
  /** This process's name in every record (e.g. host name + pid). */
  readonly instance: string;
  /** Every failed append, for the log and `switchyard_audit_failures_total`; `dropped` also for `switchyard_audit_records_lost_total`. */
  readonly onFailure?: (f: AuditFailure) => void;
  /** Repairs the writer made to the file, and files it had to reopen, for the log. */
  readonly onNotice?: (n: AuditNotice) => void;
  readonly clock?: () => number;
  /** Records waiting while the disk refuses; beyond this the oldest are dropped (and reported). */
  readonly maxPending?: number;
  readonly retryMs?: number;
  /** Past this many bytes the writer renames the file to `<path>.<UTC time>` and goes on in a new one, anchored to it. */
  readonly maxBytes?: number;
}

/** The last record written: its seq (counted from 1 at the genesis record, across rotated files) and its hash. */
export interface AuditHead {
  readonly seq: number;
  readonly hash: string;
}

/** What a reopen found: the file now open, whether it is a new one (anchored to the last), and the head. */
export interface AuditReopen {
  readonly file: string | null;
  readonly reopened: boolean;
  readonly head: AuditHead;
}

/** The existing file cannot be continued (its last record is too long to find, or it cannot be opened or cut). */
export class AuditFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditFileError';
  }
}

/** Where records go: an append-only file handle (a stand-in in tests that make the disk fail). */
export interface AuditSink {
  write(bytes: Buffer, offset: number, length: number): Promise<{ bytesWritten: number }>;
  /** Cuts the file back to `length` bytes, undoing a write that failed part-way. */
  truncate?(length: number): Promise<void>;
  close(): Promise<void>;
}

/** Where a writer over a sink starts: the file's length and the seq of its last record. */
export interface AuditPosition {
  readonly size: number;
  readonly seq: number;
}

interface Pending {
  readonly id: string;
  readonly ts: string;
  readonly event: AuditEvent;
}

/** Records per write. */
const BATCH = 512;

/**
 * The one appender of an audit file. `append` stamps a record (ULID id, ts, instance) at
 * once, in call order; a single drain loop then chains, numbers (`seq`) and writes them. A
 * record's prev_hash is computed when it is written, from the bytes actually written before
 * it, so a failed write keeps the chain whole: the records stay queued and are retried.
 * A write that failed part-way (a full disk takes what fits) is cut back to the length
 * before it, so the file only ever holds whole records. Nothing is dropped silently: a drop
 * is counted and reported, and once writing works again one `gap` record says how many
 * records were lost after which seq.
 */
export class AuditWriter {
  #handle: AuditSink;
  /** The path, when the writer opened the file itself (not over a given sink): checked before each write. */
  readonly #path: string | null;
  #file: FileHandle | null;
  readonly #instance: string;
  readonly #onFailure: (f: AuditFailure) => void;
  readonly #onNotice: (n: AuditNotice) => void;
  readonly #clock: () => number;
  readonly #ids: UlidGenerator;
  readonly #maxPending: number;
  readonly #retryMs: number;
  #lastHash: string;
  /** The seq of the last record written (0: none yet). */
  #seq: number;
  /** The file's length after the last whole write; null when a sink was given without one. */
  #size: number | null;
  /** A write failed part-way: cut the file back to #size before writing again. */
  #torn = false;
  /** Records the writer itself writes before the next batch (an anchor, a torn-tail gap), in order. */
  #preamble: AuditEvent[] = [];
  /** Records dropped since the last write, for the next gap record. */
  #lost = 0;
  /** Records written to the open file after it was deleted (its last write raced the deletion), for the gap in the next file. */
  #orphaned = { records: 0, afterSeq: Number.MAX_SAFE_INTEGER };
  /** Records at the head of the queue that the write in flight holds (a drop never takes them). */
  #inFlight = 0;
  #queue: Pending[] = [];
  #draining: Promise<void> | null = null;
  #retryTimer: NodeJS.Timeout | null = null;
  #closed = false;
  #written = 0;
  #failedWrites = 0;
  #dropped = 0;
  readonly #maxBytes: number | null;
  /** An explicit reopen (SIGUSR1, the admin API) waits for the drain loop to look at the path. */
  #reopenWanted = false;
  /** Files the writer went on in after the first; a reopen compares it before and after. */
  #switches = 0;
  /** After a rotation that could not rename the file, not before this time (the records go on in the file meanwhile). */
  #rotateNotBefore = 0;

  private constructor(
    handle: AuditSink,
    lastHash: string,
    position: Partial<AuditPosition>,
    options: AuditWriterOptions,
    file: FileHandle | null = null,
  ) {
    this.#handle = handle;
    this.#file = file;
    this.#path = file === null ? null : options.path;
    this.#lastHash = lastHash;
    this.#seq = position.seq ?? 0;
    this.#size = position.size ?? null;
    this.#instance = options.instance;
    this.#onFailure = options.onFailure ?? (() => undefined);
    this.#onNotice = options.onNotice ?? (() => undefined);
    this.#clock = options.clock ?? Date.now;
    this.#ids = new UlidGenerator(this.#clock);
    this.#maxPending = options.maxPending ?? 10_000;
    this.#retryMs = options.retryMs ?? 1000;
    this.#maxBytes = options.maxBytes ?? null;
  }

  /**
   * Opens (or creates) the file and continues its chain from its last whole record. A torn
   * last line (a write the process did not finish: no final newline) is cut off, and the
   * chain continues with a `gap` record naming the bytes cut, so a crash never stops the
   * next start.
   */
  static async open(options: AuditWriterOptions): Promise<AuditWriter> {
    const { handle, continued } = await openContinuing(options.path);
    const writer = new AuditWriter(handle, continued.lastHash, { size: continued.whole, seq: continued.seq }, options, handle);
    writer.#continueWith(continued);
    return writer;
  }

  /** Queues the torn-tail gap record of a file just opened, and says so. */
  #continueWith(c: Continued): void {
    if (c.cut === null) return;
    this.#onNotice({
      kind: 'repaired',
      level: 'warn',
      message: `audit file ${JSON.stringify(this.#path)}: cut ${c.cut.length} byte(s) of an incomplete last record after seq ${c.seq}; a gap record follows`,
    });
    this.#preamble.push(
      gap({ reason: 'torn_tail', cutBytes: c.cut.length, cutSha256: createHash('sha256').update(c.cut).digest('hex'), afterSeq: c.seq }),
    );
    if (this.#retryTimer === null) void this.#drain();
  }

  /**
   * A writer over another sink, continuing from `lastHash` (tests inject failing disks this
   * way). With `position.size`, and a sink that can truncate, a write that fails part-way is cut back.
   */
  static overSink(sink: AuditSink, lastHash: string, options: AuditWriterOptions, position: Partial<AuditPosition> = {}): AuditWriter {
    return new AuditWriter(sink, lastHash, position, options);
  }

  /** Records written (gap records not counted). */
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

  /** The seq of the last record written. */
  get seq(): number {
    return this.#seq;
  }

  /** The last record written (seq 0 and the genesis hash before the first). */
  get head(): AuditHead {
    return { seq: this.#seq, hash: this.#lastHash };
  }

  /** The configured path (null for a writer over a given sink). */
  get path(): string | null {
    return this.#path;
  }

  /**
   * Looks at the path now, as logrotate's postrotate asks (SIGUSR1, POST /admin/audit/reopen):
   * a new or missing file there is opened (created) and gets its anchor record at once, so the
   * new file starts tied to the old one's last hash even before more traffic; the same file
   * as the one open changes nothing. Runs in the drain loop, so never beside a write.
   */
  async reopen(): Promise<AuditReopen> {
    const before = this.#switches;
    if (!this.#closed && this.#path !== null) {
      this.#reopenWanted = true;
      await this.flush();
    }
    return { file: this.#path, reopened: this.#switches !== before, head: this.head };
  }

  append(event: AuditEvent): void {
    if (this.#closed) {
      this.#drop(1, 'the audit writer is closed');
      return;
    }
    this.#queue.push({ id: this.#ids.next(), ts: new Date(this.#clock()).toISOString(), event });
    if (this.#queue.length > this.#maxPending) {
      // The oldest records not held by the write in flight go; that write may still succeed.
      const from = Math.min(this.#inFlight, this.#queue.length - 1);
      const excess = Math.min(this.#queue.length - this.#maxPending, this.#queue.length - from);
      this.#queue.splice(from, excess);
      this.#lost += excess;
      this.#drop(excess, `more than ${this.#maxPending} records waiting for the disk`);
    }
    // While a retry is scheduled the disk is failing: wait for it rather than fail per record.
    if (this.#retryTimer === null) void this.#drain();
  }

  /** Resolves when every record appended so far is written, or has failed (and been reported). */
  async flush(): Promise<void> {
    for (let round = 0; round < 3 && this.#hasWork(); round += 1) await this.#drain();
    await this.#draining;
  }

  /**
   * Flushes (a few tries), reports what could not be written, and closes the file. Records
   * dropped here have no gap record (nothing more can be written); they are reported and counted.
   */
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

  #hasWork(): boolean {
    return this.#queue.length > 0 || this.#lost > 0 || this.#preamble.length > 0 || this.#reopenWanted;
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
    while (this.#hasWork()) {
      if (this.#torn && !(await this.#cutBack())) {
        this.#scheduleRetry();
        return;
      }
      const checked = await this.#checkFile();
      // Asked for and done, or failed and reported: either way not asked again (records still queued retry it).
      this.#reopenWanted = false;
      if (!checked) {
        this.#scheduleRetry();
        return;
      }
      if (!this.#hasWork()) return;
      const queued = this.#queue.slice(0, BATCH);
      const lost = this.#lost;
      const preamble = this.#preamble;
      const entries = [
        ...preamble.map((e) => this.#stamp(e)),
        ...(lost > 0 ? [this.#stamp(gap({ reason: 'records_lost', records: lost, afterSeq: this.#seq }))] : []),
        ...queued,
      ];
      let hash = this.#lastHash;
      let seq = this.#seq;
      const lines: string[] = [];
      const hashes: string[] = [];
      for (const p of entries) {
        seq += 1;
        // The writer's fields go first (the line's shape) and again after the event's, so no
        // event field can replace the record's id, ts, instance, seq or prev_hash.
        const own = { id: p.id, ts: p.ts, instance: this.#instance, seq };
        const line = JSON.stringify({ ...own, ...p.event, ...own, prev_hash: hash });
        hash = recordHash(Buffer.from(line, 'utf8'));
        lines.push(line);
        hashes.push(hash);
      }
      const fit = this.#fitting(lines, entries.length - queued.length);
      if (fit === 'rotate') {
        if (!(await this.#rotate())) {
          this.#scheduleRetry();
          return;
        }
        continue;
      }
      // What the file has room for; the rest goes in the next round (after a rotation).
      const batch = queued.slice(0, fit - (entries.length - queued.length));
      lines.length = fit;
      hash = hashes[fit - 1] as string;
      seq = this.#seq + fit;
      const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
      let offset = 0;
      this.#inFlight = batch.length;
      try {
        for (let i = 0; i < 1000 && offset < bytes.length; i += 1) {
          const { bytesWritten } = await this.#handle.write(bytes, offset, bytes.length - offset);
          offset += bytesWritten;
        }
        if (offset < bytes.length) throw new Error(`short write (${offset} of ${bytes.length} bytes)`);
      } catch (err) {
        this.#inFlight = 0;
        this.#failedWrites += 1;
        this.#onFailure({ kind: 'write', records: batch.length, message: `audit append failed: ${(err as Error).message}` });
        // Part of the batch reached the file: cut it back now, so no torn record stays even if nothing is ever written again.
        if (offset > 0) {
          this.#torn = true;
          await this.#cutBack();
        }
        this.#scheduleRetry();
        return;
      }
      this.#inFlight = 0;
      const afterSeq = this.#seq;
      this.#lastHash = hash;
      this.#seq = seq;
      if (this.#size !== null) this.#size += bytes.length;
      this.#written += batch.length;
      this.#lost -= lost;
      this.#preamble = this.#preamble.slice(preamble.length);
      this.#queue.splice(0, batch.length);
      if (await this.#unlinked()) {
        // Deleted between the check before this write and the write: these records went to an
        // inode nobody can read. Say so in the next file, at once (not at the next append).
        this.#orphaned = { records: this.#orphaned.records + fit, afterSeq: Math.min(this.#orphaned.afterSeq, afterSeq) };
        this.#reopenWanted = true;
      }
    }
  }

  /** The open file has no name left (deleted, not renamed): what was written to it is gone. False when it cannot tell. */
  async #unlinked(): Promise<boolean> {
    if (this.#path === null || this.#file === null) return false;
    try {
      return (await this.#file.stat()).nlink === 0;
    } catch {
      return false;
    }
  }

  /**
   * How many of the lines to write go in this file under `maxBytes`: all of them without a
   * limit; `rotate` when the file already holds records and not even the writer's own
   * records (anchor, gap) and one more fit. A new file takes at least those, even past the
   * limit (a record is never split), so every round writes something.
   */
  #fitting(lines: readonly string[], fixed: number): number | 'rotate' {
    const max = this.#maxBytes;
    const size = this.#size;
    if (max === null || size === null || this.#path === null) return lines.length;
    let used = size;
    let fit = 0;
    for (const line of lines) {
      used += Buffer.byteLength(line, 'utf8') + 1;
      if (used > max) break;
      fit += 1;
    }
    if (fit === lines.length) return fit;
    const least = Math.min(lines.length, fixed + 1);
    if (size === 0) return Math.max(fit, least);
    // A rotation failed a moment ago: write on in this file rather than one record per round.
    if (this.#clock() < this.#rotateNotBefore) return lines.length;
    return fit >= least ? fit : 'rotate';
  }

  /**
   * Renames the full file to `<path>.<UTC time>` (a counter added when that name is taken)
   * and goes on in a new file at the path, whose first record anchors it to the renamed
   * file's last. A rename that fails is reported, and the records go on in the file for a
   * minute before the writer tries again: no record waits on a rotation.
   */
  async #rotate(): Promise<boolean> {
    const path = this.#path as string;
    let target: string;
    try {
      target = await rotatedName(path, this.#clock());
      await rename(path, target);
    } catch (err) {
      this.#rotateNotBefore = this.#clock() + 60_000;
      this.#onFailure({
        kind: 'write',
        records: 0,
        message: `audit file ${JSON.stringify(path)} reached audit.max_bytes (${this.#maxBytes}) and cannot be rotated: ${(err as Error).message}; writing on in it`,
      });
      return true;
    }
    this.#onNotice({
      kind: 'rotated',
      level: 'info',
      message: `audit file ${JSON.stringify(path)} reached audit.max_bytes (${this.#maxBytes}): renamed it to ${JSON.stringify(target)} (last seq ${this.#seq}) and started a new file anchored to it`,
    });
    return this.#switchFile('file_rotated', true);
  }

  /** Cuts the file back to its length before the failed write; false while that fails (the retry tries again). */
  async #cutBack(): Promise<boolean> {
    if (this.#size === null || this.#handle.truncate === undefined) {
      // Not known how long the file was: nothing to cut back to. Carry on, as before the repair existed.
      this.#torn = false;
      this.#onNotice({
        kind: 'repaired',
        level: 'error',
        message: 'audit append failed part-way and the file cannot be cut back: its last record is torn',
      });
      return true;
    }
    try {
      await this.#handle.truncate(this.#size);
    } catch (err) {
      this.#onFailure({
        kind: 'write',
        records: 0,
        message: `audit file: cannot cut a failed write back to ${this.#size} bytes: ${(err as Error).message}`,
      });
      return false;
    }
    this.#torn = false;
    this.#onNotice({
      kind: 'repaired',
      level: 'warn',
      message: `audit append failed part-way; the file was cut back to its last whole record (${this.#size} bytes)`,
    });
    return true;
  }

  /**
   * Before each write: is the open file still the one at the path, and as long as the
   * writer made it? Log rotation that renames or deletes the file (its inode leaves the
   * path), or copies and truncates it (it gets shorter), must not leave the writer appending
   * to a file nobody reads, or onto a cut one. The writer goes on in a file at the path,
   * whose first record anchors it to the old file's last record. False: not now (retry).
   */
  async #checkFile(): Promise<boolean> {
    const path = this.#path;
    const file = this.#file;
    if (path === null || file === null) return true;
    let own: { ino: number; dev: number; size: number };
    try {
      own = await file.stat();
    } catch {
      return true; // Cannot tell; the write itself fails or not.
    }
    let atPath: { ino: number; dev: number } | null;
    try {
      atPath = await stat(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return true;
      atPath = null;
    }
    if (atPath === null || atPath.ino !== own.ino || atPath.dev !== own.dev)
      return this.#switchFile(atPath === null ? 'file_deleted' : 'file_replaced');
    if (this.#size === null || own.size >= this.#size) return true;
    if (own.size > 0) {
      // Cut part-way: keep what is left, aside, and start a file of the writer's own.
      const aside = `${path}.cut-${new Date(this.#clock()).toISOString().replace(/[:.]/g, '-')}`;
      try {
        await rename(path, aside);
      } catch (err) {
        this.#onFailure({ kind: 'write', records: 0, message: `audit file was cut and cannot be moved aside: ${(err as Error).message}` });
        return false;
      }
      this.#onNotice({
        kind: 'reopened',
        level: 'error',
        message: `audit file ${JSON.stringify(path)} was cut to ${own.size} of ${this.#size} bytes under the writer; moved it to ${JSON.stringify(aside)} and started a new file anchored to the last record written`,
      });
      return this.#switchFile('file_truncated', true);
    }
    // Emptied in place (copytruncate): the same file, now empty, starts with the anchor.
    this.#onNotice({
      kind: 'reopened',
      level: 'error',
      message: `audit file ${JSON.stringify(path)} was truncated under the writer (${this.#size} bytes to 0: copytruncate?); it goes on with a record anchored to the last record written (seq ${this.#seq})`,
    });
    this.#size = 0;
    this.#switches += 1;
    this.#preamble = [anchor({ reason: 'file_truncated', previousSeq: this.#seq, previousHash: this.#lastHash }), ...this.#preamble];
    return true;
  }

  /** Opens the file now at the path (creating it) and queues the anchor to the last record written. */
  async #switchFile(reason: AnchorReason, noticed = false): Promise<boolean> {
    const path = this.#path as string;
    let next: { handle: FileHandle; continued: Continued };
    try {
      next = await openContinuing(path);
    } catch (err) {
      this.#onFailure({ kind: 'write', records: 0, message: `audit file ${reason.slice(5)}; cannot reopen it: ${(err as Error).message}` });
      return false;
    }
    await this.#file?.close().catch(() => undefined);
    this.#switches += 1;
    this.#file = next.handle;
    this.#handle = next.handle;
    this.#size = next.continued.whole;
    this.#torn = false;
    const previous = { previousSeq: this.#seq, previousHash: this.#lastHash };
    // An empty file continues this writer's chain; one that already holds records continues its own.
    if (next.continued.whole > 0) {
      this.#lastHash = next.continued.lastHash;
      this.#seq = next.continued.seq;
    }
    if (!noticed)
      this.#onNotice({
        kind: 'reopened',
        level: 'warn',
        message: `audit file ${JSON.stringify(path)} was ${reason === 'file_deleted' ? 'deleted' : 'replaced'} under the writer; reopened the path and anchored it to the last record written (seq ${previous.previousSeq})`,
      });
    // A torn-tail gap not yet written belonged to the old file: it says what was cut there, so it stays, after the anchor.
    this.#preamble = [anchor({ reason, ...previous }), ...this.#orphanedGap(), ...this.#preamble.filter((e) => e.event !== 'anchor')];
    this.#continueWith(next.continued);
    return true;
  }

  /**
   * The gap for records the old file took after it was deleted: they have seqs (the anchor
   * names the last of them) but no file holds them. Reported as dropped, like a queue overflow.
   */
  #orphanedGap(): AuditEvent[] {
    const { records, afterSeq } = this.#orphaned;
    if (records === 0) return [];
    this.#orphaned = { records: 0, afterSeq: Number.MAX_SAFE_INTEGER };
    this.#drop(records, `audit file was deleted under the writer: ${records} record(s) after seq ${afterSeq} went to the deleted file`);
    return [gap({ reason: 'records_lost', records, afterSeq })];
  }

  #stamp(event: AuditEvent): Pending {
    return { id: this.#ids.next(), ts: new Date(this.#clock()).toISOString(), event };
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

/** `<path>.20261202T011500Z`, or with `.1`, `.2`… when a file of that name exists (two rotations in one second). */
async function rotatedName(path: string, now: number): Promise<string> {
  const stamp = new Date(now)
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/[-:]/g, '');
  const base = `${path}.${stamp}`;
  for (let n = 0; n < 1000; n += 1) {
    const name = n === 0 ? base : `${base}.${n}`;
    try {
      await stat(name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return name;
      throw err;
    }
  }
  throw new Error(`every name from ${JSON.stringify(base)} to .999 is taken`);
}

interface Continued extends Tail {
  readonly seq: number;
}

/** Opens the file for appending where its chain goes on: cuts a torn last line, counts the lines of a file from before seq. */
async function openContinuing(path: string): Promise<{ handle: FileHandle; continued: Continued }> {
  const tail = await readTail(path);
  let handle: FileHandle;
  try {
    handle = await open(path, 'a', 0o600);
  } catch (err) {
    throw new AuditFileError(
      `audit file ${JSON.stringify(path)}: cannot open for appending (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  try {
    if (tail.cut !== null) {
      try {
        await handle.truncate(tail.whole);
      } catch (err) {
        throw new AuditFileError(
          `audit file ${JSON.stringify(path)}: cannot cut its incomplete last record (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
      }
    }
    const seq = tail.seq ?? (await countLines(path, tail.whole));
    return { handle, continued: { ...tail, seq } };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}

interface Tail {
  /** The hash the next record chains to: of the last whole record, or the genesis value. */
  readonly lastHash: string;
  /** The last whole record's seq; undefined when it has none (a file from before seq) or there is none. */
  readonly seq: number | undefined;
  /** The file's length up to and including its last whole record's newline. */
  readonly whole: number;
  /** The bytes after it (a torn last line), or null when the file ends with a newline. */
  readonly cut: Buffer | null;
}

async function readTail(path: string): Promise<Tail> {
  const probe = await readFileSlice(path, 0, 0, 'audit file');
  if (!probe.ok) {
    if (probe.reason === 'missing') return { lastHash: GENESIS_HASH, seq: 0, whole: 0, cut: null };
    throw new AuditFileError(probe.message);
  }
  if (probe.size === 0) return { lastHash: GENESIS_HASH, seq: 0, whole: 0, cut: null };
  // Room for a whole last record, its newline, a torn record after it and the newline before it.
  const start = Math.max(0, probe.size - (2 * MAX_RECORD_BYTES + 2));
  const read = await readFileSlice(path, start, probe.size - start, 'audit file');
  if (!read.ok) throw new AuditFileError(read.message);
  let bytes = read.bytes;
  let cut: Buffer | null = null;
  if (bytes[bytes.length - 1] !== 0x0a) {
    const nl = bytes.lastIndexOf(0x0a);
    // Longer than any record: not a write that was cut short, so not for the writer to cut.
    if (bytes.length - (nl + 1) > MAX_RECORD_BYTES)
      throw new AuditFileError(`audit file ${JSON.stringify(path)}: its incomplete last line is longer than ${MAX_RECORD_BYTES} bytes`);
    cut = Buffer.from(bytes.subarray(nl + 1));
    bytes = bytes.subarray(0, nl + 1);
  }
  const whole = start + bytes.length;
  if (bytes.length === 0) return { lastHash: GENESIS_HASH, seq: 0, whole: 0, cut };
  const from = bytes.lastIndexOf(0x0a, bytes.length - 2);
  if (from === -1 && start > 0)
    throw new AuditFileError(`audit file ${JSON.stringify(path)}: its last record is longer than ${MAX_RECORD_BYTES} bytes`);
  const last = bytes.subarray(from + 1, bytes.length - 1);
  return { lastHash: recordHash(last), seq: seqOf(last), whole, cut };
}

function seqOf(line: Buffer): number | undefined {
  try {
    const seq = (JSON.parse(line.toString('utf8')) as { seq?: unknown } | null)?.seq;
    return typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0 ? seq : undefined;
  } catch {
    return undefined;
  }
}

/** Lines in the first `length` bytes: a file from before seq continues at its line count + 1. */
async function countLines(path: string, length: number): Promise<number> {
  let lines = 0;
  for (let position = 0; position < length; ) {
    const r = await readFileSlice(path, position, Math.min(1024 * 1024, length - position), 'audit file');
    if (!r.ok) throw new AuditFileError(r.message);
    if (r.bytes.length === 0) break;
    for (let i = r.bytes.indexOf(0x0a); i !== -1; i = r.bytes.indexOf(0x0a, i + 1)) lines += 1;
    position += r.bytes.length;
  }
  return lines;
}
