import type { ServerResponse } from 'node:http';
import { A2A_ERRORS, type JsonRpcErrorObject } from '../../a2a/index.js';
import { type ErrorCode, errorCatalog } from '../../errors.js';

// The /a2a endpoints' JSON-RPC: what a client's request is, and the bytes of every answer
// the gateway makes itself. The protocol's own codes are kept for what they mean (-32001 a
// task the caller does not own or that does not exist, -32602 invalid params, -32601 an
// unknown method). The gateway's refusals and failures have codes of their own, so that a
// client never mistakes a rate limit for a missing task, and name their stable code in
// `error.data.code`:
//   -32040 refused by the gateway (authentication, an allow-list, a limit, the governance store),
//   -32050 no agent could answer (unavailable, timed out, failed, an answer too large).

/** The gateway refused the call: `error.data.code` says why (agent_not_allowed, rate_limit_exceeded, ...). */
export const GATEWAY_REFUSED = -32040;
/** No upstream agent answered: `error.data.code` says how it failed (upstream_unavailable, upstream_timeout, ...). */
export const GATEWAY_FAILED = -32050;

export type JsonRpcId = string | number | null;

/** One JSON-RPC request as a client posted it. */
export interface ClientRequest {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly params: Record<string, unknown>;
}

/** The body as one JSON-RPC request, or the error to answer it with (and the id, when one could be read). */
export function readRequest(
  body: Buffer,
):
  | { readonly ok: true; readonly request: ClientRequest }
  | { readonly ok: false; readonly error: JsonRpcErrorObject; readonly id: JsonRpcId } {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, error: { code: A2A_ERRORS.parseError, message: 'Parse error: the body is not JSON' }, id: null };
  }
  if (Array.isArray(value)) return invalid('batches are not part of the A2A protocol; send one request per POST', null);
  if (value === null || typeof value !== 'object') return invalid('the body must be a JSON-RPC object', null);
  const m = value as Record<string, unknown>;
  const id = typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id)) ? (m.id as string | number) : null;
  if (m.jsonrpc !== '2.0') return invalid('jsonrpc must be "2.0"', id);
  if (typeof m.method !== 'string' || m.method === '') return invalid('method must be a non-empty string', id);
  if (m.params !== undefined && (m.params === null || typeof m.params !== 'object' || Array.isArray(m.params)))
    return invalid('params must be an object', id);
  if (!('id' in m) || (m.id !== null && id === null)) return invalid('id must be a string or a number (A2A has no notifications)', id);
  return { ok: true, request: { id, method: m.method, params: (m.params ?? {}) as Record<string, unknown> } };
}

function invalid(why: string, id: JsonRpcId): { ok: false; error: JsonRpcErrorObject; id: JsonRpcId } {
  return { ok: false, error: { code: A2A_ERRORS.invalidRequest, message: `Invalid Request: ${why}` }, id };
}

export function errorText(id: JsonRpcId, error: JsonRpcErrorObject): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** A JSON-RPC result's bytes; `result` is JSON text already. */
export function resultText(id: JsonRpcId, result: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`;
}

/** The JSON-RPC error for one of the gateway's refusals or failures: its code by class, its stable code in data. */
export function gatewayError(code: ErrorCode, message: string, data: Record<string, unknown> = {}): JsonRpcErrorObject {
  return { code: jsonRpcCodeOf(code), message, data: { code, ...data } };
}

/** The protocol's own task-not-found: for a task or context that does not exist, or is another team's. */
export function taskNotFound(what: string): JsonRpcErrorObject {
  return { code: A2A_ERRORS.taskNotFound, message: `Task not found: ${what}` };
}

function jsonRpcCodeOf(code: ErrorCode): number {
  switch (code) {
    case 'invalid_request':
      return A2A_ERRORS.invalidParams;
    case 'internal_error':
      return A2A_ERRORS.internalError;
    case 'upstream_unavailable':
    case 'upstream_timeout':
    case 'upstream_error':
    case 'upstream_auth_failed':
    case 'stream_interrupted':
    case 'stream_event_too_large':
    case 'no_route':
    case 'shutting_down':
      return GATEWAY_FAILED;
    default:
      return GATEWAY_REFUSED;
  }
}

/** The HTTP status a gateway error is answered with: the catalog's, so that a proxy or a client library sees a 403 or a 429. */
export function statusOf(code: ErrorCode): number {
  return errorCatalog[code].status;
}

/** A JSON-RPC answer as one JSON body. */
export function sendJson(res: ServerResponse, body: string | Buffer, status = 200, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** One SSE event carrying one JSON-RPC response. */
export function sseEvent(json: string): string {
  return `data: ${json}\n\n`;
}
