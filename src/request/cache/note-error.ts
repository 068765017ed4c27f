import type { Services } from '../services.js';

/** Logs a cache failure (at most once a minute) and counts it: the request goes on as a miss. */
export function noteCacheError(svc: Services, operation: string, err: unknown): void {
  svc.metrics.cacheErrors.inc({ operation });
  const now = Date.now();
  if (now - lastLogged < LOG_EVERY_MS) return;
  lastLogged = now;
  svc.logger.warn({ msg: 'response cache', problem: `${operation} failed: ${(err as Error)?.message ?? String(err)}` });
}

let lastLogged = 0;
const LOG_EVERY_MS = 60_000;
