import { closeSync, openSync, writeSync } from 'node:fs';
import { isoTime, type LoggerOptions } from './logger.js';

/** Levels at which the access log (written at `info`) is on. */
const ACCESS_LEVELS = new Set(['info', 'debug', 'trace']);

const BUFFER_BYTES = 256 * 1024;
/** Pending bytes that trigger a write, as nginx's `access_log ... buffer=`. */
const FLUSH_AT_BYTES = 64 * 1024;
/** The most a line can take as UTF-8 is 3 bytes per UTF-16 unit. */
const MAX_BYTES_PER_UNIT = 3;

/**
 * The access log: one line per request, in the same JSON shape as the event log (level,
 * time, service, msg), to the same destination, written in batches: when 64 KiB are
 * pending, and at least every flushMs (nginx's `buffer= flush=`). A write per request
 * measured ~8% of the gateway's CPU under load. Lines are encoded straight into one
 * preallocated buffer: appending to a growing string (what a generic stream does) made
 * garbage of every batch and cost the collector more than the writes. Lines are flat
 * records of known, non-secret fields, serialised directly.
 *
 * When the destination cannot take more (a full non-blocking pipe: EAGAIN), the bytes
 * stay pending and are retried at the next write; lines that no longer fit are dropped
 * and counted, never blocking a request.
 */
export class AccessLog {
  readonly #fd: number;
  readonly #ownsFd: boolean;
  readonly #buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  readonly #timer: NodeJS.Timeout;
  #used = 0;
  #enabled: boolean;
  #open = true;
  /** Lines dropped because the destination could not keep up. */
  dropped = 0;

  constructor(opts: LoggerOptions & { readonly flushMs: number }) {
    const dest = opts.destination ?? 1;
    this.#ownsFd = typeof dest === 'string';
    this.#fd = typeof dest === 'string' ? openSync(dest, 'a') : dest;
    this.#enabled = ACCESS_LEVELS.has(opts.level);
    this.#timer = setInterval(() => this.#flush(), Math.max(opts.flushMs, 10));
    this.#timer.unref();
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  setLevel(level: string): void {
    this.#enabled = ACCESS_LEVELS.has(level) && this.#open;
  }

  /** Writes one `msg: "request"` line; undefined fields are left out, as pino does. */
  write(fields: Readonly<Record<string, unknown>>): void {
    if (!this.#enabled) return;
    const record = JSON.stringify(fields);
    this.writeFields(record.length > 2 ? `,${record.slice(1, -1)}` : '');
  }

  /**
   * Writes one `msg: "request"` line from its fields already serialised as JSON members,
   * each after a comma (`,"status":200,"stream":false`): the request path builds one string.
   */
  writeFields(members: string): void {
    if (!this.#enabled) return;
    const line = `{"level":"info"${isoTime()},"service":"switchyard","msg":"request"${members}}\n`;
    if (this.#used + line.length * MAX_BYTES_PER_UNIT > BUFFER_BYTES) {
      this.#flush();
      if (this.#used + line.length * MAX_BYTES_PER_UNIT > BUFFER_BYTES) {
        this.dropped += 1;
        return;
      }
    }
    this.#used += this.#buffer.write(line, this.#used);
    if (this.#used >= FLUSH_AT_BYTES) this.#flush();
  }

  /** Writes what is pending, and stops the flush timer. */
  close(): void {
    // A request that ends after the drain (its socket destroyed) must not write to a closed destination.
    this.#enabled = false;
    this.#open = false;
    clearInterval(this.#timer);
    this.#flush();
    if (this.#ownsFd) closeSync(this.#fd);
  }

  #flush(): void {
    let offset = 0;
    try {
      while (offset < this.#used) offset += writeSync(this.#fd, this.#buffer, offset, this.#used - offset);
    } catch (err) {
      // EAGAIN: keep the rest for the next flush. Anything else (stdout gone): nothing useful to do.
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') offset = this.#used;
    }
    if (offset === 0) return;
    this.#buffer.copy(this.#buffer, 0, offset, this.#used);
    this.#used -= offset;
  }
}
