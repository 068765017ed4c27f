import { open } from 'node:fs/promises';
import { type Dispatcher, request } from 'undici';
import type { Credential } from '../credential.js';

/** The one scope Azure OpenAI (Cognitive Services) accepts a token for. */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Past this the authority counts as down: a token fetch is never on a request's path, but a hung one would hold the refresh. */
const FETCH_TIMEOUT_MS = 10_000;
/** A projected service account token is about a kilobyte; an assertion file past this is a mistake. */
const MAX_ASSERTION_BYTES = 64 * 1024;
const MAX_ANSWER_BYTES = 256 * 1024;

/** What a token fetch needs: who asks, of which authority, proving it how. Resolved when the generation is built. */
export interface EntraSpec {
  readonly providerName: string;
  /** `https://login.microsoftonline.com`, without a trailing slash. */
  readonly authorityHost: string;
  readonly tenantId: string;
  readonly clientId: string;
  /** The client-credentials grant's secret; null = workload identity (the assertion file). */
  readonly clientSecret: Credential | null;
  /** AZURE_FEDERATED_TOKEN_FILE, read anew for every fetch; used when clientSecret is null. */
  readonly assertionFile: string | null;
}

export type TokenFetch =
  | { readonly ok: true; readonly token: string; readonly lifetimeS: number }
  /** `refused`: the authority answered and turned the credentials down (a 4xx), rather than not answering. */
  | { readonly ok: false; readonly message: string; readonly refused?: boolean };

/**
 * One token from the v2.0 endpoint (RFC 6749 section 4.4; RFC 7523 for the assertion). The
 * message of a failure names the authority's answer (status and its OAuth `error` code),
 * never the secret, the assertion or a token.
 */
export async function fetchEntraToken(spec: EntraSpec, stopped?: AbortSignal, dispatcher?: Dispatcher): Promise<TokenFetch> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: spec.clientId, scope: COGNITIVE_SERVICES_SCOPE });
  if (spec.clientSecret !== null) form.set('client_secret', spec.clientSecret.apiKey());
  else {
    // Re-read every time: the kubelet rotates the projected token, and an old one is refused.
    const assertion = await readAssertion(spec.assertionFile ?? '');
    if (!assertion.ok) return assertion;
    form.set('client_assertion_type', JWT_BEARER);
    form.set('client_assertion', assertion.value);
  }
  const url = `${spec.authorityHost}/${encodeURIComponent(spec.tenantId)}/oauth2/v2.0/token`;
  let status: number;
  let text: string;
  try {
    const res = await request(url, {
      method: 'POST',
      // The probe's: a connection pinned to the authority's judged address.
      ...(dispatcher === undefined ? {} : { dispatcher }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      signal:
        stopped === undefined ? AbortSignal.timeout(FETCH_TIMEOUT_MS) : AbortSignal.any([stopped, AbortSignal.timeout(FETCH_TIMEOUT_MS)]),
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
    });
    status = res.statusCode;
    text = await readCapped(res.body);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const name = err instanceof Error ? err.name : 'error';
    return { ok: false, message: `token request to ${spec.authorityHost} failed (${typeof code === 'string' ? code : name})` };
  }
  const body = parseJson(text);
  if (status !== 200) {
    const error = typeof body?.error === 'string' && /^[a-z_]{1,64}$/.test(body.error) ? `, ${body.error}` : '';
    return { ok: false, message: `authority ${spec.authorityHost} answered ${status}${error}`, refused: status >= 400 && status < 500 };
  }
  const token = body?.access_token;
  const lifetimeS = Number(body?.expires_in);
  if (typeof token !== 'string' || token === '' || !Number.isFinite(lifetimeS) || lifetimeS <= 0)
    return { ok: false, message: `authority ${spec.authorityHost} answered 200 without an access_token and expires_in` };
  return { ok: true, token, lifetimeS };
}

async function readAssertion(
  path: string,
): Promise<{ readonly ok: true; readonly value: string } | { readonly ok: false; readonly message: string }> {
  if (path === '') return { ok: false, message: 'AZURE_FEDERATED_TOKEN_FILE is not set' };
  try {
    const file = await open(path, 'r');
    try {
      if (!(await file.stat()).isFile()) return { ok: false, message: `federated token file ${path} is not a regular file` };
      const buf = Buffer.alloc(MAX_ASSERTION_BYTES + 1);
      const { bytesRead } = await file.read(buf, 0, buf.length, 0);
      if (bytesRead > MAX_ASSERTION_BYTES) return { ok: false, message: `federated token file ${path} is too large` };
      const value = buf.subarray(0, bytesRead).toString('utf8').trim();
      if (value === '') return { ok: false, message: `federated token file ${path} is empty` };
      return { ok: true, value };
    } finally {
      await file.close();
    }
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return { ok: false, message: `federated token file ${path} cannot be read (${typeof code === 'string' ? code : 'error'})` };
  }
}

async function readCapped(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) break;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
