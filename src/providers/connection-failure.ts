// How a raw upstream exchange that failed with an error (not an answer) is read by the
// callers that speak JSON-RPC over a provider's pool (an MCP server, an A2A agent): whether
// the connection was never made, so the upstream cannot have seen the request; whether it
// timed out; or whether it dropped after the request went out.

/** undici's and the socket's codes for a connection that was never made (the request was not written). */
const UNCONNECTED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_INVALID_ARG',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

export interface ConnectionFailure {
  readonly reason: 'refused' | 'timeout' | 'dropped';
  readonly detail: string;
}

/** An error from the connection: `refused` only when nothing was answered and the connection was never made. */
export function connectionFailure(err: Error, answered: boolean): ConnectionFailure {
  const code = (err as { code?: unknown }).code;
  const named = typeof code === 'string' ? code : err.name;
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return { reason: 'timeout', detail: `timed out (${code})` };
  if (!answered && typeof code === 'string' && (UNCONNECTED_CODES.has(code) || code.startsWith('ERR_TLS_')))
    return { reason: 'refused', detail: `could not connect (${code})` };
  return { reason: 'dropped', detail: `the connection closed (${named})` };
}
