import { Compute, JWT, type OAuth2Client } from 'google-auth-library';
import type { Credential } from '../credential.js';
import { BearerTokenSource, type Fetched, type TokenEvent } from './token-source.js';

/** The one scope Vertex AI accepts a token for. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** Where google-auth-library sends a service account's JWT-bearer grant; `gcp.token_url` names another. */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** Past this the token endpoint counts as down: a fetch is never on a request's path, but a hung one would hold the refresh. */
const FETCH_TIMEOUT_MS = 10_000;

/** What a Google Cloud token needs, resolved when the generation is built. */
export type GcpSpec =
  | {
      readonly providerName: string;
      readonly kind: 'service_account';
      /** The key file's path, for the admin views; its key is in `privateKey`. */
      readonly keyFile: string;
      readonly clientEmail: string;
      readonly privateKey: Credential;
      /** The OAuth2 token endpoint; null = Google's. */
      readonly tokenUrl: string | null;
    }
  | { readonly providerName: string; readonly kind: 'metadata_server' };

/**
 * A vertex provider's access token from google-auth-library: the JWT-bearer grant signed
 * with the service account's key, or the node's metadata server (GKE workload identity, which
 * honours GCE_METADATA_HOST). The library's client is made once per source and asked for a
 * new token at every refresh; the source decides when, ahead of expiry.
 */
export function gcpTokenSource(spec: GcpSpec, onEvent: (e: TokenEvent) => void): BearerTokenSource {
  const client = gcpClient(spec);
  const source = spec.kind === 'service_account' ? `gcp:service_account ${spec.clientEmail} (file:${spec.keyFile})` : 'gcp:metadata_server';
  return new BearerTokenSource({ provider: spec.providerName, what: 'Google Cloud token', source }, onEvent, () => fetchGcpToken(client));
}

/**
 * One token for the probe of a draft vertex provider, fetched with `fetchImpl` (the probe's,
 * pinned to the token endpoint's judged address); `refused` when the endpoint answered and
 * turned the grant down (a 4xx: a key it does not know, a bad signature).
 */
export async function probeGcpToken(
  spec: Extract<GcpSpec, { kind: 'service_account' }>,
  fetchImpl: typeof fetch,
): Promise<Fetched<string> & { readonly refused?: boolean }> {
  try {
    return await fetchGcpToken(gcpClient(spec, fetchImpl), true);
  } catch (err) {
    return { ok: false, message: gcpFailure(err), refused: refusedStatus(err) };
  }
}

function gcpClient(spec: GcpSpec, fetchImpl: typeof fetch = fetch): OAuth2Client {
  // Node's own fetch (undici, as the rest of the gateway speaks), not the node-fetch the
  // library loads by default: over Node's global agent it was seen to leave later token
  // requests hanging until the timeout.
  const transporterOptions = { timeout: FETCH_TIMEOUT_MS, fetchImplementation: fetchImpl };
  if (spec.kind === 'metadata_server') return new Compute({ scopes: [CLOUD_PLATFORM_SCOPE], transporterOptions });
  const jwt = new JWT({ email: spec.clientEmail, key: spec.privateKey.apiKey(), scopes: [CLOUD_PLATFORM_SCOPE], transporterOptions });
  const tokenUrl = spec.tokenUrl;
  jwt.transporter.interceptors.request.add({
    resolved: async (options) => {
      // The library posts the grant to Google's endpoint, whatever the key file says; the
      // configured one (a private endpoint, a test's) replaces it on the way out.
      if (tokenUrl !== null && options.url.href === GOOGLE_TOKEN_URL) options.url = new URL(tokenUrl);
      // The source retries on its own schedule: the library's retries would only hold up a
      // reload waiting for its first token.
      options.retryConfig = { ...options.retryConfig, retry: 0 };
      return options;
    },
  });
  return jwt;
}

/** `rethrow`: the caller reads the failure itself (the probe, which tells a refusal from silence). */
async function fetchGcpToken(client: OAuth2Client, rethrow = false): Promise<Fetched<string>> {
  try {
    const { credentials } = await client.refreshAccessToken();
    const token = credentials.access_token;
    const expiry = credentials.expiry_date;
    if (typeof token !== 'string' || token === '' || typeof expiry !== 'number')
      return { ok: false, message: 'the token endpoint answered without an access_token and its expiry' };
    return { ok: true, value: token, lifetimeS: Math.max(1, (expiry - Date.now()) / 1000) };
  } catch (err) {
    if (rethrow) throw err;
    return { ok: false, message: gcpFailure(err) };
  }
}

function refusedStatus(err: unknown): boolean {
  const e = err as { response?: { status?: unknown }; status?: unknown };
  const status = typeof e.response?.status === 'number' ? e.response.status : typeof e.status === 'number' ? e.status : 0;
  return status >= 400 && status < 500;
}

/** The status and the OAuth `error` code of a failed fetch, or the network error's code; never the assertion or a token. */
function gcpFailure(err: unknown): string {
  const e = err as { response?: { status?: unknown; data?: unknown }; status?: unknown };
  const status = typeof e.response?.status === 'number' ? e.response.status : typeof e.status === 'number' ? e.status : null;
  const data = e.response?.data as { error?: unknown } | undefined;
  const error = typeof data?.error === 'string' && /^[a-z_]{1,64}$/.test(data.error) ? `, ${data.error}` : '';
  if (status !== null) return `the token endpoint answered ${status}${error}`;
  // fetch's own error ("fetch failed") holds the socket's in its cause: ECONNREFUSED, ETIMEDOUT...
  for (let at: unknown = err, depth = 0; at !== null && typeof at === 'object' && depth < 4; depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]{2,31}$/.test(code)) return `the token request failed (${code})`;
    at = (at as { cause?: unknown }).cause;
  }
  // A timeout or an abort names itself in the message; one that could carry a token or the assertion is left out.
  const said = String((err as Error)?.message ?? '').slice(0, 160);
  const name = err instanceof Error ? err.name : 'error';
  return /eyJ|ya29|assertion|token=/i.test(said) ? `the token request failed (${name})` : `the token request failed (${name}: ${said})`;
}
