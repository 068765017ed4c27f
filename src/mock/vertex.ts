import { isRecord } from './conversation.js';
import type { Exchange } from './exchange.js';
import { geminiError, replyAnthropicInvalid, replyJson } from './exchange.js';
import { handleJwtGrant } from './gcp-jwt-grant.js';
import { handleMetadata, METADATA_PREFIX } from './gcp-metadata.js';
import type { TokenCheck } from './gcp-tokens.js';
import { serveGenerateContent } from './gemini.js';
import { handleCountTokens, handleMessages } from './messages.js';
import type { MockContext } from './provider-context.js';

// Vertex AI, served alone with `--protocol vertex`: Gemini models under the `google`
// publisher (generateContent, streamGenerateContent) and Claude under `anthropic`
// (rawPredict, streamRawPredict: Anthropic's Messages body, the model in the path, the API
// version in the body). Every model path wants a bearer token this mock issued, from its
// OAuth2 token endpoint or its metadata server, as Google's front end wants one it issued.

/**
 * `/{v1|v1beta1}/projects/{project}/locations/{location}/` then a model: a publisher's
 * (`publishers/{p}/models/{m}`), a tuned one (`models/{m}`) or an endpoint (`endpoints/{id}`),
 * then `:{method}`. @google/genai (1.x) uses v1beta1, @anthropic-ai/vertex-sdk v1.
 */
const MODEL_PATH =
  /^\/(v1|v1beta1)\/projects\/([^/]+)\/locations\/([^/]+)\/(?:publishers\/([^/]+)\/models|models|endpoints)\/([^/:]+):([A-Za-z]+)$/;

/** A model path, as the mock read it (project and location are taken as given). */
export interface VertexModelPath {
  readonly version: 'v1' | 'v1beta1';
  readonly project: string;
  readonly location: string;
  /** `google` also for tuned models and endpoints, which serve Gemini's API. */
  readonly publisher: string;
  readonly model: string;
  readonly method: string;
}

export function parseVertexPath(path: string): VertexModelPath | null {
  const m = MODEL_PATH.exec(path);
  if (m === null) return null;
  try {
    return {
      version: m[1] as 'v1' | 'v1beta1',
      project: decodeURIComponent(m[2] as string),
      location: decodeURIComponent(m[3] as string),
      publisher: m[4] ?? 'google',
      model: decodeURIComponent(m[5] as string),
      method: m[6] as string,
    };
  } catch {
    return null;
  }
}

/**
 * Vertex's documented `vertex-2023-10-16`, or a dated Anthropic API version: what
 * @anthropic-ai/vertex-sdk 1.x sends, copying the base SDK's `anthropic-version` header.
 */
const ANTHROPIC_VERSION = /^(?:vertex-)?\d{4}-\d{2}-\d{2}$/;

const CREDENTIALS_HELP =
  'Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.';

/** The RPC a path names, as Google's ErrorInfo reports it: `google.cloud.aiplatform.v1.PredictionService.RawPredict`. */
function rpcOf(where: VertexModelPath): string {
  return `google.cloud.aiplatform.${where.version}.PredictionService.${where.method.charAt(0).toUpperCase()}${where.method.slice(1)}`;
}

const UNAUTHENTICATED: Readonly<Record<Exclude<TokenCheck, 'ok'>, { readonly message: string; readonly reason: string }>> = {
  missing: { message: `Request is missing required authentication credential. ${CREDENTIALS_HELP}`, reason: 'CREDENTIALS_MISSING' },
  unknown: { message: `Request had invalid authentication credentials. ${CREDENTIALS_HELP}`, reason: 'ACCESS_TOKEN_TYPE_UNSUPPORTED' },
  expired: { message: `Request had invalid authentication credentials. ${CREDENTIALS_HELP}`, reason: 'ACCESS_TOKEN_EXPIRED' },
};

/** Google's 401: a missing credential, or one it did not issue or that has expired, with an ErrorInfo naming why. */
function replyUnauthenticated(ex: Exchange, check: Exclude<TokenCheck, 'ok'>, where: VertexModelPath): void {
  const { message, reason } = UNAUTHENTICATED[check];
  const info = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason,
    domain: 'googleapis.com',
    metadata: { service: 'aiplatform.googleapis.com', method: rpcOf(where) },
  };
  ex.res.setHeader('www-authenticate', 'Bearer realm="https://accounts.google.com/"');
  replyJson(ex, 401, geminiError(401, message, [info]));
}

function replyGoogle(ex: Exchange, status: number, message: string): void {
  replyJson(ex, status, geminiError(status, message));
}

function replyNotFound(ex: Exchange): void {
  replyGoogle(ex, 404, `The requested URL ${ex.path} was not found on this server.`);
}

/**
 * Claude on Vertex AI: the Messages body names no model (the path does) and carries
 * `anthropic_version` instead of the header. Answers Anthropic-shaped, as Vertex relays
 * Anthropic's own errors. `count-tokens:rawPredict` is the token count, whose body keeps its model.
 */
function serveClaude(ctx: MockContext, ex: Exchange, where: VertexModelPath): void {
  if (where.model === 'count-tokens' && where.method === 'rawPredict') return handleCountTokens(ctx, ex);
  if (where.method !== 'rawPredict' && where.method !== 'streamRawPredict') return replyNotFound(ex);
  let payload: unknown;
  try {
    payload = JSON.parse(ex.body);
  } catch {
    return replyAnthropicInvalid(ex, 'The request body is not valid JSON.');
  }
  if (!isRecord(payload)) return replyAnthropicInvalid(ex, 'The request body must be a JSON object.');
  if (payload.model !== undefined) return replyAnthropicInvalid(ex, 'model: Extra inputs are not permitted');
  if (payload.anthropic_version === undefined) return replyAnthropicInvalid(ex, 'anthropic_version: Field required');
  if (typeof payload.anthropic_version !== 'string' || !ANTHROPIC_VERSION.test(payload.anthropic_version))
    return replyAnthropicInvalid(ex, 'anthropic_version: must be an API version such as vertex-2023-10-16');
  handleMessages(ctx, ex, where.model);
}

/** Every non-control request of a `--protocol vertex` mock. */
export function routeVertex(ctx: MockContext, ex: Exchange): void {
  if (ex.path === '/token') {
    if (ex.req.method !== 'POST') return replyGoogle(ex, 405, 'Method not allowed; use POST.');
    return handleJwtGrant(ctx.gcpTokens, ex);
  }
  if (ex.path.startsWith(METADATA_PREFIX) || ex.path === METADATA_PREFIX.slice(0, -1)) return handleMetadata(ctx.gcpTokens, ex);
  const where = parseVertexPath(ex.path);
  if (where === null) return replyNotFound(ex);
  if (ex.req.method !== 'POST') return replyGoogle(ex, 405, `Method ${ex.req.method ?? 'GET'} is not allowed on ${ex.path}; use POST.`);
  // The credential is checked before any fault is taken, as Google's front end checks it first.
  const auth = ctx.gcpTokens.check(ex.req.headers.authorization);
  if (auth !== 'ok') return replyUnauthenticated(ex, auth, where);
  if (where.publisher === 'anthropic') return serveClaude(ctx, ex, where);
  if (where.publisher !== 'google') return replyNotFound(ex);
  if (where.method !== 'generateContent' && where.method !== 'streamGenerateContent') return replyNotFound(ex);
  serveGenerateContent(ctx, ex, where.model, where.method, new URLSearchParams(ex.query));
}
