import { pino, type Logger } from 'pino';

export type { Logger };

export interface LoggerOptions {
  readonly level: string;
  /** A file descriptor or path; defaults to stdout. */
  readonly destination?: number | string;
}

const REDACT = { paths: ['authorization', 'headers.authorization', 'api_key', 'token'], censor: '[redacted]' };

let lastMs = 0;
let lastTime = '';

/** pino's ISO timestamp, formatted once per millisecond: under load many lines share one. */
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

function options(level: string): pino.LoggerOptions {
  return {
    level,
    base: { service: 'switchyard' },
    timestamp: isoTime,
    redact: REDACT,
    formatters: { level: (label) => ({ level: label }) },
  };
}

/**
 * Structured JSON logs for events (start, reload, errors), one synchronous write per line
 * (pino's default): they are rare, and an operator reads them as they happen. Credential-
 * bearing keys are redacted as a second line of defence: nothing on purpose logs a header
 * or a secret value.
 */
export function createLogger(opts: LoggerOptions): Logger {
  return pino(options(opts.level), pino.destination({ dest: opts.destination ?? 1, sync: true }));
}

/** Levels at which the access log (written at `info`) is on. */
const ACCESS_LEVELS = new Set(['info', 'debug', 'trace']);

/**
 * The access log: one line per proxied request, in the same JSON shape as the event log
 * (level, time, service, msg), to the same destination, but written in batches (when
 * 8 KiB are pending, and at least every flushMs), as nginx's `access_log ... buffer=
 * flush=` does. A write per request measured ~8% of the gateway's CPU under load. Lines
 * are flat records of known, non-secret fields, so they are serialised directly rather
 * than through pino's generic path (another ~4%). close() writes what is pending.
 */
export class AccessLog {
  readonly #destination: ReturnType<typeof pino.destination>;
  #enabled: boolean;

  constructor(opts: LoggerOptions & { readonly flushMs: number }) {
    // periodicFlush writes what is pending on an unref'd timer, without an fsync.
    this.#destination = pino.destination({ dest: opts.destination ?? 1, sync: true, minLength: 8 * 1024, periodicFlush: Math.max(opts.flushMs, 10) });
    this.#enabled = ACCESS_LEVELS.has(opts.level);
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  setLevel(level: string): void {
    this.#enabled = ACCESS_LEVELS.has(level);
  }

  /** Writes one `msg: "request"` line; undefined fields are left out, as pino does. */
  write(fields: Readonly<Record<string, unknown>>): void {
    if (!this.#enabled) return;
    const record = JSON.stringify(fields);
    this.#destination.write(`{"level":"info"${isoTime()},"service":"switchyard","msg":"request"${record.length > 2 ? `,${record.slice(1)}` : '}'}\n`);
  }

  /** Writes what is pending, and stops the flush timer. */
  close(): void {
    // A request that ends after the drain (its socket destroyed) must not write to a closed stream.
    this.#enabled = false;
    try {
      this.#destination.flushSync();
      this.#destination.end();
    } catch {
      // Nothing useful to do when stdout is gone.
    }
  }
}

export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // Nothing useful to do when stdout is gone at exit.
  }
}
