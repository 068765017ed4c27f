import type { ClientRequestHeaders, ProbeCall, ProviderWire } from './adapter.js';
import { answerReadersOf, writeCanonical } from './protocol-wire.js';

// Pieces several adapters share: the defaults of a wire, and what OpenAI-protocol types
// forward of a client's headers.

/** The path of one stored response on an OpenAI-style API: `/responses/{id}`, with the client's query. */
export function plainStoredResponsePath(responseId: string, query: string): string {
  const id = encodeURIComponent(responseId);
  return query === '' ? `/responses/${id}` : `/responses/${id}?${query}`;
}

/** Lower-cased, as Node gives a request's headers and as `providers.<name>.headers` keeps them. */
const OPENAI_CLIENT_HEADERS = ['openai-beta', 'openai-organization', 'openai-project'] as const;

/**
 * An OpenAI client's `OpenAI-Beta`, `OpenAI-Organization` and `OpenAI-Project` go to OpenAI
 * and Azure providers (they pick the API version, and the account the call is billed to),
 * unless the provider's config sets the same header.
 */
export function forwardOpenaiClientHeaders(headers: Record<string, string>, client: ClientRequestHeaders): void {
  for (const name of OPENAI_CLIENT_HEADERS) {
    const value = client[name];
    if (headers[name] === undefined && typeof value === 'string' && value !== '') headers[name] = value;
  }
}

/** What most wires share: the canonical writers and readers by protocol, the client's body as it is, no signature. */
export const WIRE_DEFAULTS: Pick<ProviderWire, 'storedResponsePath' | 'ownBody' | 'write' | 'readers' | 'sign'> = Object.freeze({
  storedResponsePath: plainStoredResponsePath,
  ownBody: () => null,
  write: writeCanonical,
  readers: answerReadersOf,
  sign: null,
});

/**
 * The wire of a type whose calls are JSON-RPC to the endpoint the config (or the upstream's
 * card) names, an MCP server or an A2A agent: no model operation goes to it, so its paths are
 * the endpoint itself, and its own key goes as a bearer.
 */
export const ENDPOINT_WIRE: ProviderWire = Object.freeze<ProviderWire>({
  ...WIRE_DEFAULTS,
  protocolOf: () => 'openai' as const,
  path: () => '',
  authenticate: (headers, credential) => {
    if (credential !== null) headers.authorization = credential.authorization();
  },
});

/** The ids of an OpenAI- or Anthropic-style model list (`{data: [{id}, …]}`). */
export function listedIds(body: unknown): string[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return [];
  return data.map((m) => (m as { id?: unknown } | null)?.id).filter((id): id is string => typeof id === 'string');
}

/** The probe of an OpenAI-style API: its model list, at `path` under the base URL. */
export function modelListProbe(path: string): ProbeCall {
  return { method: 'GET', path, headers: {}, body: null, models: listedIds };
}
