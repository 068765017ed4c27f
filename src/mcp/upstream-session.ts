import { LATEST_MCP_PROTOCOL_VERSION, MCP_PROTOCOL_VERSIONS, type McpProtocolVersion } from './types.js';
import { serverInfoOf } from './upstream-catalog.js';
import { describeFailure, outcomeOf, type RpcRoute, sendMessage, sendRequest } from './upstream-rpc.js';

// The MCP lifecycle's first step with one server: `initialize`, then
// `notifications/initialized`. The session id the server gives (none from a stateless
// server) and the version it chose go on every later request.

export interface UpstreamSession {
  /** Null for a stateless server. */
  readonly id: string | null;
  readonly protocolVersion: McpProtocolVersion;
  readonly serverInfo: { readonly name: string; readonly version: string } | null;
}

export type SessionStart =
  | { readonly ok: true; readonly session: UpstreamSession }
  /** `refused` when the server was never reached; a message without secrets. */
  | { readonly ok: false; readonly reason: 'refused' | 'session'; readonly message: string };

const spoken = (v: unknown): v is McpProtocolVersion => MCP_PROTOCOL_VERSIONS.some((known) => known === v);

/**
 * Initializes a session. `routeFor` gives the route for the initialize request (null) and
 * then for the session's own messages.
 */
export async function initializeSession(
  routeFor: (session: UpstreamSession | null) => RpcRoute,
  id: number,
  clientInfo: { readonly name: string; readonly version: string },
): Promise<SessionStart> {
  const params = { protocolVersion: LATEST_MCP_PROTOCOL_VERSION, capabilities: {}, clientInfo };
  // Nothing is answered before the session exists: a server request here goes unanswered.
  const answer = await sendRequest(routeFor(null), id, 'initialize', params, { onServerRequest: () => undefined });
  const outcome = outcomeOf(answer);
  if (outcome.kind !== 'result') {
    const reason = outcome.kind === 'failed' && outcome.reason === 'refused' ? 'refused' : 'session';
    return { ok: false, reason, message: `initialize: ${describeFailure(outcome)}` };
  }
  const version = outcome.result.protocolVersion;
  if (!spoken(version)) {
    const named = typeof version === 'string' ? version.slice(0, 40) : 'none';
    return { ok: false, reason: 'session', message: `initialize: the server's protocol version ${named} is not one the gateway speaks` };
  }
  const session: UpstreamSession = {
    id: answer.kind === 'response' ? answer.head.sessionId : null,
    protocolVersion: version,
    serverInfo: serverInfoOf(outcome.result),
  };
  const note = await sendMessage(routeFor(session), { jsonrpc: '2.0', method: 'notifications/initialized' });
  if (note.kind !== 'accepted')
    return { ok: false, reason: 'session', message: `notifications/initialized: ${describeFailure(outcomeOf(note))}` };
  return { ok: true, session };
}
