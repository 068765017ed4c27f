import type { Credential, ProviderPool } from '../providers/index.js';
import type { StopSignal } from './stop.js';
import type { RpcRoute } from './upstream-rpc.js';
import type { UpstreamSession } from './upstream-session.js';

// What every message to one MCP server carries: the provider's configured headers and its
// credential, and the session's id and version. Nothing else: a request the gateway relays
// for its own caller never passes that caller's headers upstream.

/** The settings a route is built from (McpUpstreamSettings, narrowed). */
export interface RouteSettings {
  readonly url: URL;
  readonly pool: ProviderPool;
  readonly headers: Readonly<Record<string, string>>;
  readonly credential: Credential | null;
  readonly timeoutMs: number;
}

/** Headers the protocol sets: a configured one of these names is not sent. */
const PROTOCOL_HEADERS = new Set([
  'accept',
  'authorization',
  'content-type',
  'content-length',
  'host',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
]);

export function routeOf(settings: RouteSettings, session: UpstreamSession | null, signal: StopSignal): RpcRoute {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(settings.headers)) {
    if (!PROTOCOL_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
  }
  headers.accept = 'application/json, text/event-stream';
  headers['content-type'] = 'application/json';
  if (session !== null) {
    headers['mcp-protocol-version'] = session.protocolVersion;
    if (session.id !== null) headers['mcp-session-id'] = session.id;
  }
  const credential = settings.credential;
  if (credential !== null) headers.authorization = credential.authorization();
  return {
    pool: settings.pool,
    path: settings.url.pathname + settings.url.search,
    headers,
    timeoutMs: settings.timeoutMs,
    signal,
    redact: (text) => redacted(text, credential),
  };
}

/** Whether a session begun under `a` is still the one `b` would begin (same endpoint, headers and credential). */
export function sameIdentity(a: RouteSettings, b: RouteSettings): boolean {
  if (a.url.href !== b.url.href) return false;
  if ((a.credential?.authorization() ?? null) !== (b.credential?.authorization() ?? null)) return false;
  const names = Object.keys(a.headers);
  return names.length === Object.keys(b.headers).length && names.every((name) => a.headers[name] === b.headers[name]);
}

/** A text from the server (a status body, an error message) without the credential in it, should the server echo it. */
export function redacted(text: string, credential: Credential | null): string {
  const secret = credential?.apiKey() ?? '';
  return secret === '' ? text : text.split(secret).join('[redacted]');
}
