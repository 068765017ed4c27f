import type { Credential } from './credential.js';

// How each provider type is addressed and authenticated: the upstream path of its chat
// endpoint and the headers that carry its key. The body is the adapters' and the
// canonical layer's business; this is only the envelope.

export type ProviderType = 'openai' | 'azure_openai' | 'anthropic';

/** What addressing needs of a provider (live/'s ProviderRuntime has these fields). */
export interface ProviderAddress {
  readonly type: ProviderType;
  readonly anthropicVersion: string | null;
  readonly apiVersion: string | null;
}

/** What a request asks of a provider: a chat answer, or embeddings (OpenAI-protocol providers only). */
export type Operation = 'chat' | 'embeddings';

/** The endpoint's path under the provider's base URL. Azure names the deployment in the path. */
export function chatPathFor(p: ProviderAddress, upstreamModel: string, operation: Operation = 'chat'): string {
  const endpoint = operation === 'chat' ? '/chat/completions' : '/embeddings';
  if (p.type === 'anthropic') return '/messages';
  if (p.type === 'azure_openai')
    return `/openai/deployments/${encodeURIComponent(upstreamModel)}${endpoint}?api-version=${encodeURIComponent(p.apiVersion ?? '')}`;
  return endpoint;
}

/**
 * The headers of an upstream call. The key goes where the provider type expects it:
 * `authorization: Bearer` (OpenAI), `api-key` (Azure), `x-api-key` (Anthropic, which never
 * gets an `authorization`). An Anthropic client's own `anthropic-version` and
 * `anthropic-beta` are forwarded, since they change what the request means.
 */
export function providerHeaders(
  p: ProviderAddress,
  credential: Credential | null,
  extra: Readonly<Record<string, string>>,
  accept: string,
  requestId: string,
  client: { readonly [name: string]: string | string[] | undefined },
): Record<string, string> {
  const headers: Record<string, string> = { ...extra, 'content-type': 'application/json', accept, 'x-request-id': requestId };
  if (p.type === 'anthropic') {
    const version = client['anthropic-version'];
    headers['anthropic-version'] = typeof version === 'string' && version !== '' ? version : (p.anthropicVersion ?? '2023-06-01');
    const beta = client['anthropic-beta'];
    if (typeof beta === 'string' && beta !== '') headers['anthropic-beta'] = beta;
    if (credential !== null) headers['x-api-key'] = credential.apiKey();
  } else if (p.type === 'azure_openai') {
    if (credential !== null) headers['api-key'] = credential.apiKey();
  } else if (credential !== null) headers.authorization = credential.authorization();
  return headers;
}
