import { z } from 'zod';
import { providerRegion, zonesSchema } from './residency-schema.js';
import {
  exposedHeaderSchema,
  extraHeadersSchema,
  httpUrl,
  positiveInt,
  retrySchema,
  secretRefSchema,
  tlsSchema,
  toolName,
} from './schema-parts.js';

// The provider types and each one's config: config/'s list of types. A provider is a
// discriminated union on `type`, one strict object per type, so a key that belongs to
// another type is an unknown key, named as such with the type(s) it belongs to. Each type's
// adapter (providers/<type>/) reads the config its schema gives.

export const PROVIDER_TYPES = ['openai', 'azure_openai', 'anthropic', 'gemini', 'bedrock', 'vertex', 'mcp', 'a2a'] as const;
export type ProviderTypeName = (typeof PROVIDER_TYPES)[number];

const PROVIDER_TYPES_HINT =
  'must be "openai" (any OpenAI-compatible API), "azure_openai", "anthropic", "gemini", "bedrock" (AWS Bedrock Converse), "vertex" (Google Vertex AI), "mcp" (an MCP server\'s Streamable HTTP endpoint) or "a2a" (an agent speaking the Agent2Agent protocol)';

/** A missing key that the type needs: named with the type, since another type does without it. */
function requiredFor(type: string): { error: (issue: { readonly input?: unknown }) => string | undefined } {
  return { error: (issue) => (issue.input === undefined ? `required for type: ${type}` : undefined) };
}

/**
 * `providers.<name>.auth`: Microsoft Entra ID instead of an `api-key`, for azure_openai.
 * With `client_secret` the client-credentials grant; without it the workload identity a
 * Kubernetes service account federates (AZURE_FEDERATED_TOKEN_FILE, ADR 0031).
 */
const entraAuthSchema = z.strictObject({
  type: z.literal('entra', { error: 'must be "entra"' }),
  /** A directory (tenant) id or a verified domain; it becomes a path segment of the token URL. */
  tenant_id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be a tenant id (a GUID or a domain such as contoso.onmicrosoft.com)'),
  client_id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be an application (client) id'),
  client_secret: secretRefSchema.optional(),
  /** The sovereign clouds have their own (https://login.microsoftonline.us); tests point it at a local one. */
  authority_host: z
    .url({ protocol: /^https$/, error: (issue) => (issue.input === undefined ? undefined : 'must be an https:// URL') })
    .refine((u) => !URL.canParse(u) || new URL(u).pathname.replace(/\/+$/, '') === '', 'must be a host only, without a path')
    .refine(
      (u) => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).search === '' && new URL(u).hash === ''),
      'must not contain user:password@, a query string or a #fragment',
    )
    .default('https://login.microsoftonline.com'),
});
export type EntraAuthConfig = z.infer<typeof entraAuthSchema>;

/** An AWS region name (us-east-1, eu-central-2, us-gov-west-1); it becomes part of a host name. */
const awsRegion = z.string(requiredFor('bedrock')).regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, 'must be an AWS region such as us-east-1');

/**
 * `providers.<name>.aws`: how a bedrock provider signs (SigV4). Keys as secret references,
 * or the web identity a Kubernetes service account federates (EKS IRSA: the token file and
 * role the pod identity webhook sets in AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN),
 * exchanged at STS for short-lived keys.
 */
const awsAuthSchema = z
  .strictObject(
    {
      access_key_id: secretRefSchema.optional(),
      secret_access_key: secretRefSchema.optional(),
      session_token: secretRefSchema.optional(),
      web_identity: z.literal(true, { error: 'must be true (or leave it out and give access keys)' }).optional(),
      /** The STS endpoint for the web identity exchange; defaults to the region's (https://sts.{region}.amazonaws.com). */
      sts_endpoint: httpUrl.optional(),
    },
    requiredFor('bedrock'),
  )
  .superRefine((a, ctx) => {
    const keys = a.access_key_id !== undefined || a.secret_access_key !== undefined || a.session_token !== undefined;
    if (a.web_identity === true) {
      if (keys)
        ctx.addIssue({ code: 'custom', path: ['web_identity'], message: 'cannot be set together with access keys; give one of them' });
      return;
    }
    if (a.sts_endpoint !== undefined)
      ctx.addIssue({ code: 'custom', path: ['sts_endpoint'], message: 'only applies with web_identity: true' });
    if (a.access_key_id === undefined)
      ctx.addIssue({ code: 'custom', path: ['access_key_id'], message: 'required (or web_identity: true)' });
    if (a.secret_access_key === undefined)
      ctx.addIssue({ code: 'custom', path: ['secret_access_key'], message: 'required (or web_identity: true)' });
  });
export type AwsAuthConfig = z.infer<typeof awsAuthSchema>;

/**
 * `providers.<name>.gcp`: how a vertex provider gets its OAuth2 access tokens. A service
 * account's key file (the JWT-bearer grant, at `token_url` when set), or the metadata server
 * of the node (GKE workload identity; GCE_METADATA_HOST names another).
 */
const gcpAuthSchema = z
  .strictObject(
    {
      service_account: z.strictObject({ file: z.string().min(1, 'must be a file path') }).optional(),
      metadata_server: z.literal(true, { error: 'must be true (or give service_account)' }).optional(),
      /** The OAuth2 token endpoint for the service account's grant; Google's by default. */
      token_url: httpUrl.optional(),
    },
    requiredFor('vertex'),
  )
  .superRefine((g, ctx) => {
    if ((g.service_account === undefined) === (g.metadata_server === undefined))
      ctx.addIssue({ code: 'custom', path: [], message: 'needs exactly one of service_account: {file: PATH} or metadata_server: true' });
    if (g.token_url !== undefined && g.service_account === undefined)
      ctx.addIssue({ code: 'custom', path: ['token_url'], message: 'only applies with service_account' });
  });
export type GcpAuthConfig = z.infer<typeof gcpAuthSchema>;

/** A Google Cloud project id (6-30 characters), or a project number. */
const gcpProject = z
  .string(requiredFor('vertex'))
  .regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$|^\d{1,20}$/, 'must be a Google Cloud project id such as my-project-123');
/** A Vertex AI location (us-central1, europe-west4) or `global`; it becomes part of a host name. */
const gcpLocation = z
  .string(requiredFor('vertex'))
  .regex(/^(global|[a-z]+(-[a-z]+)*\d{0,2})$/, 'must be a Vertex AI location such as us-central1 or global');

/** What every type that calls an upstream over HTTP has: timeouts, the pool, extra headers, TLS. */
const upstreamShape = {
  /** Time to the first response byte, and the longest silence between two body chunks. */
  timeout_ms: positiveInt.max(3_600_000).default(60_000),
  /** The whole of a non-streamed response, however steadily it trickles (ADR 0013); none by default. */
  request_timeout_ms: positiveInt.max(3_600_000).optional(),
  /** The whole length of a stream; it then ends with an SSE error event. None by default. */
  stream_max_ms: positiveInt.max(86_400_000).optional(),
  /** The largest event a stream may send (bytes); a larger one ends the stream with stream_event_too_large. */
  max_event_bytes: z
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  connect_timeout_ms: positiveInt.max(600_000).default(5_000),
  max_connections: positiveInt.max(65_536).default(256),
  /** Extra headers sent upstream (non-secret, e.g. an organisation id). */
  headers: extraHeadersSchema.default({}),
  /** For an https base_url: a private CA, a client certificate for mutual TLS, the name to verify. */
  tls: tlsSchema.optional(),
  /** Where it runs, as free text; bedrock's is its AWS region, checked as one (its schema overrides this). */
  region: providerRegion.optional(),
  /** The zones it processes data in (`[eu, gdpr]`): what a team's `residency.allow` is matched against. */
  zones: zonesSchema.optional(),
};

/** An agent's upstream settings: every type's but max_event_bytes, which `a2a.max_event_bytes` sets for every agent. */
const { max_event_bytes: _eventBytes, ...agentUpstreamShape } = upstreamShape;

/** What every model provider has besides: exposed headers, model names, retries. */
const modelShape = {
  ...upstreamShape,
  /** Upstream response headers passed to clients beyond the default allow-list. Names are lower-cased. */
  expose_headers: z.array(exposedHeaderSchema).max(64).default([]),
  /**
   * Route model -> the name this provider serves it under (a vLLM that serves
   * `meta-llama/Llama-3.1-70B-Instruct` for the route `llama-3.1-70b`), for every candidate
   * of this provider, overlay ones included. A static candidate's own `model` wins.
   */
  models: z.record(z.string().min(1, 'must be a route model name'), z.string().min(1, 'must be a non-empty model name')).optional(),
  /** Retries of this provider on a transient failure before the next candidate; none by default. */
  retry: retrySchema.optional(),
};

/** anthropic: the `anthropic-version` sent when the client sent none; vertex: the body's `anthropic_version` for Claude. */
const anthropicVersion = z
  .string()
  .regex(/^(vertex-)?\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2023-06-01')
  .optional();

/** The schema of each type's config. */
export const PROVIDER_SCHEMAS = {
  /** Any OpenAI-compatible API: the API root ending in /v1. */
  openai: z.strictObject({ type: z.literal('openai'), base_url: httpUrl, api_key: secretRefSchema.optional(), ...modelShape }),
  /** Azure OpenAI: the resource's URL, the `api-version`, a key or Entra ID tokens. */
  azure_openai: z
    .strictObject({
      type: z.literal('azure_openai'),
      base_url: httpUrl,
      /** The `api-version` query parameter. */
      api_version: z
        .string(requiredFor('azure_openai (e.g. 2024-10-21)'))
        .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be an Azure API version such as 2024-10-21'),
      api_key: secretRefSchema.optional(),
      /** Entra ID tokens (`Authorization: Bearer`) instead of `api_key`. */
      auth: entraAuthSchema.optional(),
      ...modelShape,
    })
    // Both would be sent, and which one Azure honours is not for the config to leave open.
    .refine((p) => p.auth === undefined || p.api_key === undefined, {
      path: ['auth'],
      message: 'cannot be set together with api_key; give one of them',
    }),
  /** Anthropic's Messages API: the API root ending in /v1. */
  anthropic: z.strictObject({
    type: z.literal('anthropic'),
    base_url: httpUrl,
    anthropic_version: anthropicVersion,
    api_key: secretRefSchema.optional(),
    ...modelShape,
  }),
  /** The Gemini API: Google's address unless a proxy's or a mock's is named. */
  gemini: z.strictObject({ type: z.literal('gemini'), base_url: httpUrl.optional(), api_key: secretRefSchema.optional(), ...modelShape }),
  /** AWS Bedrock (Converse): the region's endpoint unless named; signed with the keys or web identity in `aws`. */
  bedrock: z.strictObject({
    type: z.literal('bedrock'),
    base_url: httpUrl.optional(),
    /** The keys or the web identity requests are signed with. */
    aws: awsAuthSchema,
    ...modelShape,
    /** The AWS region of the Bedrock Runtime endpoint (after the shared shape, whose free-text `region` it replaces). */
    region: awsRegion,
  }),
  /** Google Vertex AI: the location's endpoint unless named; Google Cloud tokens from `gcp`. */
  vertex: z.strictObject({
    type: z.literal('vertex'),
    base_url: httpUrl.optional(),
    anthropic_version: anthropicVersion,
    /** The Google Cloud project. */
    project: gcpProject,
    /** The Vertex AI location (a region, or global). */
    location: gcpLocation,
    /** Where the OAuth2 access tokens come from. */
    gcp: gcpAuthSchema,
    ...modelShape,
  }),
  /** An MCP server's Streamable HTTP endpoint: it serves tools, not models. */
  mcp: z.strictObject({
    type: z.literal('mcp'),
    base_url: httpUrl,
    api_key: secretRefSchema.optional(),
    ...upstreamShape,
    /**
     * Exposed tool name -> the name this server lists it under, for every tool route
     * candidate of this provider (overlay ones included). A static candidate's own `tool` wins.
     */
    tools: z.record(toolName, z.string().min(1, 'must be a non-empty tool name')).optional(),
    /**
     * Believe this server's tool annotations (readOnlyHint, idempotentHint) when deciding
     * whether a failed call may be sent to another candidate. The specification says
     * annotations are untrusted unless the server is; default false.
     */
    trust_annotations: z.boolean().optional(),
  }),
  /** An agent speaking the Agent2Agent protocol (A2A): it serves agents (routing.agents), not models. */
  a2a: z.strictObject({
    type: z.literal('a2a'),
    /** Where the agent lives; its card is read from here, and names the JSON-RPC endpoint calls go to. */
    base_url: httpUrl,
    /** The card's path, joined to base_url. */
    card_path: z
      .string()
      .regex(/^\/[^?#\s]*$/, 'must be a path starting with / (no query, no fragment)')
      .default('/.well-known/agent-card.json'),
    /** Sent as `Authorization: Bearer`; never the caller's own. */
    api_key: secretRefSchema.optional(),
    ...agentUpstreamShape,
  }),
} as const satisfies Record<ProviderTypeName, z.ZodType>;

export const providerSchema = z.discriminatedUnion(
  'type',
  [
    PROVIDER_SCHEMAS.openai,
    PROVIDER_SCHEMAS.azure_openai,
    PROVIDER_SCHEMAS.anthropic,
    PROVIDER_SCHEMAS.gemini,
    PROVIDER_SCHEMAS.bedrock,
    PROVIDER_SCHEMAS.vertex,
    PROVIDER_SCHEMAS.mcp,
    PROVIDER_SCHEMAS.a2a,
  ],
  { error: (issue) => ((issue.input as { type?: unknown } | undefined)?.type === undefined ? 'required' : PROVIDER_TYPES_HINT) },
);
export type ProviderConfig = z.infer<typeof providerSchema>;
/** The config of one provider type. */
export type ProviderConfigOf<T extends ProviderTypeName> = Extract<ProviderConfig, { readonly type: T }>;

/** Why a key another type has is not one of this type's, where the reason is not plain. */
const NOT_A_KEY_BECAUSE: Partial<Record<ProviderTypeName, Readonly<Record<string, string>>>> = {
  bedrock: { api_key: 'it authenticates with aws' },
  vertex: { api_key: 'it authenticates with gcp' },
  mcp: {
    models: 'it serves tools; map their names with tools',
    retry: 'a tool call may be a write; see retry_safe on a tool route',
    expose_headers: 'it serves tools',
  },
  a2a: {
    models: 'it serves an agent (routing.agents)',
    retry: 'a message may start work; a new task fails over only when it never reached the agent',
    expose_headers: 'it serves an agent',
    max_event_bytes: "a2a.max_event_bytes bounds every agent's events",
  },
};

function keysOf(type: ProviderTypeName): readonly string[] {
  const schema = PROVIDER_SCHEMAS[type] as z.ZodType;
  const def = schema._zod.def as { shape?: Record<string, unknown>; in?: { _zod: { def: { shape?: Record<string, unknown> } } } };
  return Object.keys(def.shape ?? def.in?._zod.def.shape ?? {});
}

function isProviderType(type: unknown): type is ProviderTypeName {
  return PROVIDER_TYPES.some((t) => t === type);
}

/** The keys a provider of the type accepts; every type's when the type is not one. */
export function providerKeys(type: unknown): readonly string[] {
  if (isProviderType(type)) return keysOf(type);
  return [...new Set(PROVIDER_TYPES.flatMap(keysOf))];
}

/**
 * The message for a key a provider of `type` does not take but another type does
 * (`unknown key for type openai; it is a key of type bedrock`); null when no type takes it.
 */
export function providerKeyHint(type: unknown, key: string): string | null {
  if (!isProviderType(type)) return null;
  const owners = PROVIDER_TYPES.filter((t) => t !== type && keysOf(t).includes(key));
  if (owners.length === 0) return null;
  const why = NOT_A_KEY_BECAUSE[type]?.[key];
  const list =
    owners.length === PROVIDER_TYPES.length - 1
      ? 'every other type'
      : `type ${owners.length === 1 ? owners[0] : `${owners.slice(0, -1).join(', ')} or ${owners.at(-1)}`}`;
  return `unknown key for type ${type}${why === undefined ? '' : ` (${why})`}; it is a key of ${list}`;
}

/** Whether a provider of the type serves tools (an MCP server) rather than models. */
export function servesTools(type: unknown): boolean {
  return type === 'mcp';
}

/** Whether a provider of the type is an agent (A2A) rather than a model or tool server. */
export function servesAgents(type: unknown): boolean {
  return type === 'a2a';
}

/**
 * Whether a provider of the type serves `/v1/embeddings` (a semantic cache's embedding route
 * needs one). The providers' registry holds the same list (operationProviders('embeddings')),
 * which config/ cannot import; a test keeps the two equal.
 */
export function servesEmbeddings(type: unknown): boolean {
  return type === 'openai' || type === 'azure_openai';
}

/** A route candidate's keys that only one type reads: an Azure deployment, a Vertex publisher. */
const CANDIDATE_KEY_TYPE: Readonly<Record<'deployment' | 'publisher', ProviderTypeName>> = {
  deployment: 'azure_openai',
  publisher: 'vertex',
};

/** The type a route candidate's `deployment` or `publisher` applies to, and whether a provider's type is it. */
export function candidateKeyType(
  key: 'deployment' | 'publisher',
  type: unknown,
): { readonly owner: ProviderTypeName; readonly applies: boolean } {
  const owner = CANDIDATE_KEY_TYPE[key];
  return { owner, applies: type === owner };
}
