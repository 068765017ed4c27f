import type { ProviderProtocol } from './canonical/index.js';
import { BearerTokenSource } from './cloud-auth/index.js';
import type { Credential } from './credential.js';

// How each provider type is addressed and authenticated: the upstream path of each
// operation's endpoint and the headers that carry its key. The body is the adapters' and the
// canonical layer's business; this is only the envelope.

export type ProviderType = 'openai' | 'azure_openai' | 'anthropic' | 'gemini' | 'bedrock' | 'vertex';

/** What addressing needs of a provider (live/'s ProviderRuntime has these fields). */
export interface ProviderAddress {
  readonly type: ProviderType;
  readonly anthropicVersion: string | null;
  readonly apiVersion: string | null;
  /** vertex only: the project and location its paths name. */
  readonly vertex?: { readonly project: string; readonly location: string } | null;
}

/**
 * The `anthropic_version` a vertex provider puts in Claude's body when its config names
 * none: what Anthropic's own Vertex SDK (@anthropic-ai/vertex-sdk 1.x) sends, which is the
 * Messages SDK's `anthropic-version` moved from the header into the body.
 */
export const VERTEX_ANTHROPIC_VERSION = '2026-10-21';

/**
 * The protocol a candidate's calls speak: its provider's, or for vertex its publisher's
 * (Claude speaks Anthropic's, Google's models Gemini's), named by the route's `publisher` or,
 * when it does not say, told by the model's name.
 */
export function candidateProtocol(
  p: { readonly type: ProviderType; readonly protocol: ProviderProtocol },
  upstreamModel: string,
  publisher?: 'google' | 'anthropic',
): ProviderProtocol {
  if (p.type !== 'vertex') return p.protocol;
  return (publisher ?? (upstreamModel.startsWith('claude') ? 'anthropic' : 'google')) === 'anthropic' ? 'anthropic' : 'gemini';
}

/**
 * What a request asks of a provider. `chat` is served by every type (across protocols by
 * translation; Gemini only so); `count_tokens` is Anthropic's, passed to Anthropic providers only; the
 * others are OpenAI endpoints, passed through to OpenAI-protocol providers only.
 */
export type Operation = 'chat' | 'embeddings' | 'completions' | 'responses' | 'count_tokens';

interface OperationAddress {
  /** The endpoint under the provider's base URL (an OpenAI-type one's; Anthropic's is `anthropic`). */
  readonly endpoint: string;
  /** The endpoint under an Anthropic provider's base URL, when Anthropic serves the operation. */
  readonly anthropic?: string;
  /** The provider types that serve it. */
  readonly servedBy: readonly ProviderType[];
  /**
   * Azure OpenAI: `deployment` endpoints live under /openai/deployments/{deployment}; a
   * `resource` endpoint (the Responses API) is called on the resource, with the deployment
   * as the body's model.
   */
  readonly azure: 'deployment' | 'resource';
}

const OPENAI_TYPES: readonly ProviderType[] = ['openai', 'azure_openai'];

/** The one table of where each operation goes and who serves it. */
const operations: Readonly<Record<Operation, OperationAddress>> = {
  chat: {
    endpoint: '/chat/completions',
    anthropic: '/messages',
    servedBy: ['openai', 'azure_openai', 'anthropic', 'gemini', 'bedrock', 'vertex'],
    azure: 'deployment',
  },
  embeddings: { endpoint: '/embeddings', servedBy: OPENAI_TYPES, azure: 'deployment' },
  completions: { endpoint: '/completions', servedBy: OPENAI_TYPES, azure: 'deployment' },
  responses: { endpoint: '/responses', servedBy: OPENAI_TYPES, azure: 'resource' },
  count_tokens: { endpoint: '/messages/count_tokens', anthropic: '/messages/count_tokens', servedBy: ['anthropic'], azure: 'deployment' },
};

/** Whether a provider of this type serves the operation. */
export function servesOperation(type: ProviderType, operation: Operation): boolean {
  return operations[operation].servedBy.includes(type);
}

/** The provider types that serve the operation, for the message that refuses it. */
export function operationProviders(operation: Operation): readonly ProviderType[] {
  return operations[operation].servedBy;
}

/**
 * The endpoint's path under the provider's base URL. Azure names the deployment in the
 * path; so do Gemini, Vertex AI and Bedrock the model, with another method for a stream
 * (Gemini's `alt=sse`: server-sent events, not the JSON array it streams by default).
 * Vertex names the project, the location and the model's publisher too: Claude's methods
 * are Anthropic's Messages API (`rawPredict`), Gemini's are Gemini's. These three serve only
 * chat. `protocol` is the candidate's (for vertex, its publisher's).
 */
export function upstreamPathFor(
  p: ProviderAddress,
  upstreamModel: string,
  operation: Operation = 'chat',
  stream = false,
  protocol: ProviderProtocol | null = null,
): string {
  const { endpoint, azure, anthropic } = operations[operation];
  if (p.type === 'gemini') {
    const model = encodeURIComponent(upstreamModel);
    return stream ? `/v1beta/models/${model}:streamGenerateContent?alt=sse` : `/v1beta/models/${model}:generateContent`;
  }
  if (p.type === 'bedrock') {
    // The AWS SDK sends a model id's `:` (anthropic.claude-...-v1:0) as %3A, and signs the path so.
    return `/model/${encodeURIComponent(upstreamModel)}/${stream ? 'converse-stream' : 'converse'}`;
  }
  if (p.type === 'vertex') {
    const { project, location } = p.vertex ?? { project: '', location: '' };
    const publisher = (protocol ?? candidateProtocol({ type: 'vertex', protocol: 'gemini' }, upstreamModel)) === 'anthropic';
    const base = `/v1/projects/${encodeURIComponent(project)}/locations/${encodeURIComponent(location)}/publishers/${publisher ? 'anthropic' : 'google'}/models/${encodeURIComponent(upstreamModel)}`;
    if (publisher) return stream ? `${base}:streamRawPredict` : `${base}:rawPredict`;
    return stream ? `${base}:streamGenerateContent?alt=sse` : `${base}:generateContent`;
  }
  if (p.type === 'anthropic') return anthropic ?? endpoint;
  if (p.type !== 'azure_openai') return endpoint;
  const version = `api-version=${encodeURIComponent(p.apiVersion ?? '')}`;
  if (azure === 'resource') return `/openai${endpoint}?${version}`;
  return `/openai/deployments/${encodeURIComponent(upstreamModel)}${endpoint}?${version}`;
}

/**
 * The path of one stored response (`GET` / `DELETE /v1/responses/{id}`) under the
 * provider's base URL, with the client's query string (`include[]`, `stream`...) kept.
 */
export function storedResponsePath(p: ProviderAddress, responseId: string, query: string): string {
  const id = encodeURIComponent(responseId);
  if (p.type !== 'azure_openai') return query === '' ? `/responses/${id}` : `/responses/${id}?${query}`;
  const version = `api-version=${encodeURIComponent(p.apiVersion ?? '')}`;
  return `/openai/responses/${id}?${query === '' ? version : `${query}&${version}`}`;
}

/**
 * The headers of an upstream call, asking for the answer uncompressed. The key goes where the provider type expects it:
 * `authorization: Bearer` (OpenAI, and Azure with an Entra ID token), `api-key` (Azure with a key), `x-api-key` (Anthropic, which never
 * gets an `authorization`), `x-goog-api-key` (Gemini, whose `?key=` would put it in every
 * URL a proxy or an access log records). An Anthropic client's own `anthropic-version` and
 * `anthropic-beta` are forwarded, since they change what the request means; so are an
 * OpenAI client's `OpenAI-Beta`, `OpenAI-Organization` and `OpenAI-Project` to OpenAI and
 * Azure providers (they pick the API version, and the account the call is billed to), unless
 * the provider's config sets the same header. No other client header is forwarded.
 */
export function providerHeaders(
  p: ProviderAddress,
  credential: Credential | BearerTokenSource | null,
  extra: Readonly<Record<string, string>>,
  accept: string,
  requestId: string,
  client: { readonly [name: string]: string | string[] | undefined },
): Record<string, string> {
  // identity: the relay reads usage from the answer's bytes and passes them on as they are.
  const headers: Record<string, string> = {
    ...extra,
    'content-type': 'application/json',
    accept,
    'accept-encoding': 'identity',
    'x-request-id': requestId,
  };
  // An azure_openai provider on Entra ID and a vertex one have a bearer token; bedrock signs instead (after this).
  const key = credential instanceof BearerTokenSource ? null : credential;
  if (p.type === 'vertex') {
    // Claude on Vertex takes its version in the body; a beta header still applies.
    const beta = client['anthropic-beta'];
    if (typeof beta === 'string' && beta !== '') headers['anthropic-beta'] = beta;
    // The provider's Google Cloud token, or an overlay candidate's own credential, which for Vertex is a token.
    if (credential !== null) headers.authorization = credential.authorization();
  } else if (p.type === 'bedrock') {
    // Signed by the caller (SigV4 covers the final bytes), nothing to add here.
  } else if (p.type === 'anthropic') {
    const version = client['anthropic-version'];
    headers['anthropic-version'] = typeof version === 'string' && version !== '' ? version : (p.anthropicVersion ?? '2023-06-01');
    const beta = client['anthropic-beta'];
    if (typeof beta === 'string' && beta !== '') headers['anthropic-beta'] = beta;
    if (key !== null) headers['x-api-key'] = key.apiKey();
  } else if (p.type === 'gemini') {
    if (key !== null) headers['x-goog-api-key'] = key.apiKey();
  } else {
    for (const name of OPENAI_CLIENT_HEADERS) {
      const value = client[name];
      if (headers[name] === undefined && typeof value === 'string' && value !== '') headers[name] = value;
    }
    if (p.type === 'azure_openai') {
      // An Entra ID token is a bearer; Azure reads `api-key` only for a resource key.
      if (credential instanceof BearerTokenSource) headers.authorization = credential.authorization();
      else if (credential !== null) headers['api-key'] = credential.apiKey();
    } else if (credential !== null) headers.authorization = credential.authorization();
  }
  return headers;
}

/** Lower-cased, as Node gives a request's headers and as `providers.<name>.headers` keeps them. */
const OPENAI_CLIENT_HEADERS = ['openai-beta', 'openai-organization', 'openai-project'] as const;
