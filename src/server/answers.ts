import type { ServerResponse } from 'node:http';
import { SwitchyardError } from '../errors.js';
import { failRequest, type Services, sendBody } from '../request/index.js';
import type { Match } from './endpoints.js';

// What both listeners answer the same way: a request no endpoint takes, and /metrics.

/** The error for a request no endpoint takes: 404, or 405 naming the methods the path accepts. */
export function refusal(match: Exclude<Match<unknown>, { kind: 'found' }>, method: string | undefined, path: string): SwitchyardError {
  if (match.kind === 'not_found') return new SwitchyardError('not_found', `no such endpoint: ${method ?? 'GET'} ${path}`);
  return new SwitchyardError('method_not_allowed', `method not allowed; this endpoint accepts ${match.allow}`, null, {
    allow: match.allow,
  });
}

/** A scrape keeps no record: a failed one's code is not noted. */
const unrecorded = (): void => undefined;

/** GET /metrics, on both listeners. */
export function serveMetrics(res: ServerResponse, svc: Services): void {
  svc.metrics.render().then(
    (text) => sendBody(res, 200, text, svc.metrics.contentType),
    (err: unknown) => failRequest({ res, failed: unrecorded }, err, svc),
  );
}
