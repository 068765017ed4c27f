import { type FailureReason, reasonForStatus } from '../resilience/index.js';

// How an attempt that failed before anything reached the client is told to the failover
// loop: a reason it branches on, and a detail safe to show a client (both read by tests
// and clients, so they are stable strings).

/** An attempt that failed before it committed: the caller may try the next candidate. */
export interface FailedAttempt {
  readonly kind: 'failed';
  readonly reason: FailureReason;
  readonly detail: string;
  /** An upstream 429's `retry-after`, in ms: the provider asked not to be called before then. */
  readonly retryAfterMs?: number;
}

/** The attempt ran out of time (request_timeout_ms, the route's deadline, stream_max_ms). */
export class OutOfTime extends Error {
  readonly code = 'SWITCHYARD_OUT_OF_TIME';
}

/** A plain body to translate grew past the relay's bound for a body it must hold whole. */
export class TooLargeToTranslate extends Error {
  readonly code = 'SWITCHYARD_TOO_LARGE_TO_TRANSLATE';
}

const entry = (reason: FailureReason, detail: string): readonly [FailureReason, string] => Object.freeze([reason, detail] as const);

/** The undici and socket error codes the gateway tells apart, with what they fail over as. */
export const FAILURE_BY_CODE: Readonly<Record<string, readonly [FailureReason, string]>> = Object.freeze({
  UND_ERR_HEADERS_TIMEOUT: entry('timeout', 'timed out waiting for a response'),
  UND_ERR_BODY_TIMEOUT: entry('timeout', 'timed out waiting for a response'),
  UND_ERR_CONNECT_TIMEOUT: entry('timeout', 'timed out connecting'),
  ECONNREFUSED: entry('connect_error', 'connection refused'),
  UND_ERR_CLOSED: entry('connect_error', 'connection pool closed'),
  UND_ERR_DESTROYED: entry('connect_error', 'connection pool closed'),
  UND_ERR_SOCKET: entry('connect_error', 'connection closed by the provider'),
  ECONNRESET: entry('connect_error', 'connection closed by the provider'),
  EPIPE: entry('connect_error', 'connection closed by the provider'),
  ENOTFOUND: entry('connect_error', 'provider host not found'),
  EAI_AGAIN: entry('connect_error', 'provider host not found'),
});

/** Maps an error from the pool or undici to a failover reason and a detail safe to show a client. */
export function upstreamFailure(err: unknown): FailedAttempt {
  if (err instanceof OutOfTime) return { kind: 'failed', reason: 'timeout', detail: `out of time: ${err.message}` };
  if (err instanceof TooLargeToTranslate) return { kind: 'failed', reason: 'status_5xx', detail: err.message };
  const code = typeof err === 'object' && err !== null ? ((err as { code?: unknown }).code ?? '') : '';
  // An own property only: a code such as "constructor" must not find Object's prototype.
  const known = typeof code === 'string' && Object.hasOwn(FAILURE_BY_CODE, code) ? FAILURE_BY_CODE[code] : undefined;
  if (known !== undefined) return { kind: 'failed', reason: known[0], detail: known[1] };
  return { kind: 'failed', reason: 'connect_error', detail: code === '' ? 'request failed' : `request failed (${String(code)})` };
}

/** An upstream answer whose status fails over (resilience's rule), with a 429's `retry-after` when it gave one. */
export function statusFailure(status: number, retryAfterMs: number | null): FailedAttempt {
  const reason = reasonForStatus(status);
  return retryAfterMs === null
    ? { kind: 'failed', reason, detail: `HTTP ${status}` }
    : { kind: 'failed', reason, detail: `HTTP ${status}`, retryAfterMs };
}

/** An answer in a content encoding the gateway did not ask for (it asks for identity): the provider misbehaved. */
export function encodingFailure(encoding: string): FailedAttempt {
  const shown = encoding.length <= 32 ? encoding : `${encoding.slice(0, 32)}…`;
  return {
    kind: 'failed',
    reason: 'status_5xx',
    detail: `the provider answered with content-encoding ${JSON.stringify(shown)}, though asked for identity`,
  };
}

/** `retry-after` as delay-seconds or an HTTP date (RFC 9110 10.2.3), in ms from now; null when absent or unreadable. */
export function retryAfterOf(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
