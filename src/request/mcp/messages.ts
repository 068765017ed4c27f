import type { ServerResponse } from 'node:http';
import type { ErrorCode } from '../../errors.js';
import type { JsonRpcError, JsonRpcId } from '../../mcp/index.js';

// The /mcp endpoint's JSON-RPC: what a client's message is, and every answer's bytes. An
// error the gateway makes names its stable code in `error.data.code`, beside the JSON-RPC
// code a client branches on:
//   -32700 parse error, -32600 invalid request, -32601 method not found,
//   -32602 invalid params (an unknown tool, as the MCP specification has it),
//   -32001 refused (authentication, an allow-list, a limit, the governance store),
//   -32002 no server could answer (unavailable, timed out, failed),
//   -32603 internal error.

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
export const REFUSED = -32001;
export const UPSTREAM_FAILED = -32002;

/** One message a client posted: a request (with an id), a notification, or a response to a server request. */
export type ClientMessage =
  | { readonly kind: 'request'; readonly id: JsonRpcId; readonly method: string; readonly params: Record<string, unknown> }
  | { readonly kind: 'notification'; readonly method: string; readonly params: Record<string, unknown> }
  | { readonly kind: 'response' };

/** The body as a JSON-RPC message, or the error to answer it with (and the id, when one could be read). */
export function readClientMessage(
  body: Buffer,
):
  | { readonly ok: true; readonly message: ClientMessage }
  | { readonly ok: false; readonly error: JsonRpcError; readonly id: JsonRpcId | null } {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, error: { code: PARSE_ERROR, message: 'Parse error: the body is not JSON' }, id: null };
  }
  if (Array.isArray(value))
    return {
      ok: false,
      error: {
        code: INVALID_REQUEST,
        message: 'Invalid Request: batches are not part of this protocol version; send one message per POST',
      },
      id: null,
    };
  if (value === null || typeof value !== 'object') return invalid('the body must be a JSON-RPC object', null);
  const m = value as Record<string, unknown>;
  const id = typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id)) ? (m.id as JsonRpcId) : null;
  if (m.jsonrpc !== '2.0') return invalid('jsonrpc must be "2.0"', id);
  if (m.method === undefined) {
    if (('result' in m || 'error' in m) && id !== null) return { ok: true, message: { kind: 'response' } };
    return invalid('a message needs a method (or is a response with an id)', id);
  }
  if (typeof m.method !== 'string' || m.method === '') return invalid('method must be a non-empty string', id);
  if (m.params !== undefined && (m.params === null || typeof m.params !== 'object' || Array.isArray(m.params)))
    return invalid('params must be an object', id);
  const params = (m.params ?? {}) as Record<string, unknown>;
  if (!('id' in m)) return { ok: true, message: { kind: 'notification', method: m.method, params } };
  if (id === null) return invalid('id must be a string or a number', null);
  return { ok: true, message: { kind: 'request', id, method: m.method, params } };
}

function invalid(why: string, id: JsonRpcId | null): { ok: false; error: JsonRpcError; id: JsonRpcId | null } {
  return { ok: false, error: { code: INVALID_REQUEST, message: `Invalid Request: ${why}` }, id };
}

/** A JSON-RPC result's bytes; `result` is JSON text already. */
export function resultText(id: JsonRpcId, result: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`;
}

export function errorText(id: JsonRpcId | null, error: JsonRpcError): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** The JSON-RPC error for one of the gateway's refusals or failures: its code by class, its stable code in data. */
export function gatewayError(code: ErrorCode, message: string, data: Record<string, unknown> = {}): JsonRpcError {
  return { code: jsonRpcCodeOf(code), message, data: { code, ...data } };
}

function jsonRpcCodeOf(code: ErrorCode): number {
  switch (code) {
    case 'tool_not_found':
    case 'invalid_request':
      return INVALID_PARAMS;
    case 'upstream_unavailable':
    case 'upstream_timeout':
    case 'upstream_error':
    case 'upstream_auth_failed':
    case 'credential_unavailable':
    case 'stream_interrupted':
    case 'no_route':
    case 'shutting_down':
      return UPSTREAM_FAILED;
    case 'internal_error':
      return INTERNAL_ERROR;
    default:
      return REFUSED;
  }
}

/** A JSON-RPC answer (200) as one JSON body, with the session's id. */
export function sendJsonRpc(res: ServerResponse, body: Buffer | string, sessionId: string | null, status = 200): void {
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  if (sessionId !== null) headers['mcp-session-id'] = sessionId;
  res.writeHead(status, headers);
  res.end(body);
}

/** An SSE event carrying one JSON-RPC message. */
export function sseMessage(json: string, eventId?: string): string {
  return eventId === undefined ? `event: message\ndata: ${json}\n\n` : `id: ${eventId}\nevent: message\ndata: ${json}\n\n`;
}
