import type {
  AnthropicRequestOptions,
  CanonicalRequest,
  ClientProtocol,
  ProviderProtocol,
  Translation,
  TranslationRule,
  WrittenRequest,
} from './canonical/index.js';
import type { AwsSigner } from './cloud-auth/index.js';
import { BearerTokenSource } from './cloud-auth/index.js';
import type { Credential } from './credential.js';
import type { AnswerHeader, AnswerReader } from './upstream-failure.js';

// The one contract every provider type implements (ADR 0037). A type's folder under
// providers/ holds all it knows: its config schema (kept in config/, which must stay pure),
// its identity, where each operation goes, how a call is authenticated, how a request is
// written for it and how its answers are read. Nothing outside these folders, the registry
// and config/'s list of types asks which type a provider is.

export type ProviderType = 'openai' | 'azure_openai' | 'anthropic' | 'gemini' | 'bedrock' | 'vertex' | 'mcp' | 'a2a';

/**
 * What a request asks of a provider. `chat` is served by every model type (across protocols by
 * translation); `count_tokens` is Anthropic's; the others are OpenAI endpoints.
 */
export type Operation = 'chat' | 'embeddings' | 'completions' | 'responses' | 'count_tokens';

/** The endpoint of each operation under an OpenAI-protocol provider's base URL. */
export const OPERATION_ENDPOINTS: Readonly<Record<Operation, string>> = {
  chat: '/chat/completions',
  embeddings: '/embeddings',
  completions: '/completions',
  responses: '/responses',
  count_tokens: '/messages/count_tokens',
};

/** The credential a call carries: a key, or a cloud's bearer token (Entra ID, Google Cloud). */
export type CallCredential = Credential | BearerTokenSource | null;

/** How a non-standard answer is read: the failure inside a 200 (Gemini), the status in a header (Bedrock). */
export interface AnswerReaders {
  readonly readAnswer?: AnswerReader;
  readonly statusOfAnswer?: (status: number, header: AnswerHeader) => number;
}

/** What a provider's config gives its adapter when the generation is built, resolved by live/. */
export interface ProviderAuth {
  /** Entra ID or Google Cloud tokens, for the types that authenticate with them; null otherwise. */
  readonly bearer: BearerTokenSource | null;
  /** A SigV4 signer with the provider's AWS keys, for the types that sign; null otherwise. */
  readonly signer: AwsSigner | null;
}

/**
 * One provider's calls, as its adapter writes them: built once per provider and generation,
 * with the type's settings (versions, project, location) bound in, so the request path asks
 * no question about the type.
 */
export interface ProviderWire {
  /**
   * The protocol a candidate's calls speak: the provider's, or for a type that hosts several
   * publishers (vertex), the publisher's, named by the route or told by the model's name.
   */
  protocolOf(upstreamModel: string, publisher?: 'google' | 'anthropic'): ProviderProtocol;
  /** The endpoint's path under the base URL; `protocol` is the candidate's. */
  path(upstreamModel: string, operation: Operation, stream: boolean, protocol: ProviderProtocol): string;
  /** The path of one stored response (`GET` / `DELETE /v1/responses/{id}`), the client's query kept. */
  storedResponsePath(responseId: string, query: string): string;
  /** The type's own headers and its authentication, added to `headers` (which holds the common ones). */
  authenticate(headers: Record<string, string>, credential: CallCredential, client: ClientRequestHeaders): void;
  /**
   * A same-protocol body the type cannot take as the client sent it (Claude on Vertex: the
   * model is in the path, the version in the body), from the parsed body; null when the
   * client's bytes with the model spliced in are what it takes.
   */
  ownBody(parsed: Readonly<Record<string, unknown>>, protocol: ProviderProtocol): Record<string, unknown> | null;
  /** A request in the canonical form, written for the candidate's protocol. */
  write(request: CanonicalRequest, protocol: ProviderProtocol, options: WriteOptions): Translation<WrittenRequest>;
  /** How the answers of the candidate's protocol are read when they are not plain HTTP. */
  readers(protocol: ProviderProtocol): AnswerReaders;
  /** Signs the final bytes (SigV4): the headers to add; null for a type that does not sign. */
  readonly sign:
    | ((method: string, path: string, headers: Readonly<Record<string, string>>, body: string | Buffer | null) => Record<string, string>)
    | null;
}

export interface WriteOptions {
  /**
   * The `max_tokens` to send when the client set none, for a protocol that requires one
   * (Anthropic's): asked only then, since it is a pricing-table lookup.
   */
  readonly defaultMaxTokens: () => AnthropicRequestOptions['defaultMaxTokens'];
  /** The client's protocol, for the fields a writer refuses in its words. */
  readonly client: ClientProtocol;
}

/** A client request's headers, as Node gives them (lower-cased). */
export interface ClientRequestHeaders {
  readonly [name: string]: string | string[] | undefined;
}

/**
 * A provider's config, as far as an adapter reads it (config/'s schema for the type holds
 * it; live/ hands it over as parsed).
 */
export interface AdapterConfig {
  readonly type: ProviderType;
  readonly base_url?: string;
  readonly anthropic_version?: string;
  readonly api_version?: string;
  readonly region?: string;
  readonly project?: string;
  readonly location?: string;
  /** a2a: where its card is, under the base URL. */
  readonly card_path?: string;
}

/**
 * The one cheap call `POST /admin/v1/providers/test` makes to a draft provider, authenticated
 * as its calls are: a list of models where the API has one, else what a client does first.
 */
export interface ProbeCall {
  readonly method: 'GET' | 'POST';
  /** Under the base URL's path. */
  readonly path: string;
  /** The call's own headers besides its authentication (a JSON-RPC body's content type). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | null;
  /** The model ids a successful answer's JSON body lists (none when it lists none). */
  models(body: unknown): string[];
  /** Whether an answer that is not a success refuses the credential: 401 and 403 unless the API says so otherwise. */
  refused?(status: number, body: unknown): boolean;
}

/** One provider type. */
export interface ProviderAdapter {
  readonly type: ProviderType;
  /** What it serves: `tools` for an MCP server, `agents` for an A2A agent, `models` for the rest. */
  readonly serves: 'models' | 'tools' | 'agents';
  /** The operations its providers serve. */
  readonly operations: readonly Operation[];
  /** The protocols its candidates speak, so the translation policy's rows that apply to it (`to` one of these). */
  readonly protocols: readonly ProviderProtocol[];
  /** The base URL when the config names none: the cloud's own; null when the config must name it. */
  defaultBaseUrl(config: AdapterConfig): string | null;
  /** What, beyond type and base URL, tells two providers' upstreams apart (a region, a project/location). */
  scope(config: AdapterConfig): string | null;
  /** The provider's wire, with its settings and credentials bound in. */
  wire(config: AdapterConfig, auth: ProviderAuth): ProviderWire;
  /**
   * What the probe of a draft provider sends; null when the probe does not support the type.
   * `models` are the upstream names of the draft's `models` map, in its order, for a type
   * whose API lists none and whose probe is a one-token call to one of them.
   */
  probe(config: AdapterConfig, models: readonly string[]): ProbeCall | null;
}

/** The translation policy's rows that apply to a type: those written to a protocol it speaks. */
export function policyRowsOf(adapter: ProviderAdapter, rows: readonly TranslationRule[]): readonly TranslationRule[] {
  return rows.filter((r) => adapter.protocols.some((p) => p === r.to));
}

/** The key of a call, for types that send one: null when the credential is a bearer token (sent as one elsewhere). */
export function keyOf(credential: CallCredential): Credential | null {
  return credential instanceof BearerTokenSource ? null : credential;
}

/** A client header's value when it is one non-empty string. */
export function clientHeader(client: ClientRequestHeaders, name: string): string | null {
  const value = client[name];
  return typeof value === 'string' && value !== '' ? value : null;
}
