import { type Logger, pino } from 'pino';

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
export function isoTime(): string {
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

export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // Nothing useful to do when stdout is gone at exit.
  }
}
