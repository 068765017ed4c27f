import { verify } from 'node:crypto';
import type { Exchange } from './exchange.js';
import { replyJson } from './exchange.js';
import type { GcpTokens } from './gcp-tokens.js';
import { CLOUD_PLATFORM_SCOPE, GOOGLE_TOKEN_URL, oauthError, replyToken, serveTokenRequest } from './gcp-tokens.js';

// `POST /token`: Google's OAuth2 token endpoint for a service account, which signs a JWT
// with its private key and trades it (RFC 7523's JWT-bearer grant, form-encoded) for an
// access token. The JWT is checked as Google checks it: three base64url parts, RS256, the
// account as `iss`, a scope, the token URL as `aud`, and a lifetime of at most an hour
// that includes now. Its signature is checked only when the mock knows the public key.

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const maxJwtLifetimeS = 3600;
/** Google tolerates some clock skew between the signer and itself. */
const clockSkewS = 300;
const base64url = /^[A-Za-z0-9_-]+$/;

interface Refusal {
  readonly error: 'invalid_grant' | 'invalid_scope' | 'unsupported_grant_type' | 'invalid_request';
  readonly description: string;
}

function refusal(error: Refusal['error'], description: string): Refusal {
  return { error, description };
}

function decodePart(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The URL this request was posted to, as the signer would have named it. */
function urlOf(ex: Exchange): string {
  return `http://${ex.req.headers.host ?? ''}${ex.path}`;
}

/** Checks a JWT-bearer assertion; null when Google would take it. */
export function checkAssertion(tokens: GcpTokens, assertion: string, postedTo: string, nowS: number): Refusal | null {
  const parts = assertion.split('.');
  if (parts.length !== 3 || !parts.every((p) => base64url.test(p)))
    return refusal('invalid_grant', 'Invalid JWT: not three base64url parts.');
  const header = decodePart(parts[0] as string);
  const claims = decodePart(parts[1] as string);
  if (header === null || claims === null) return refusal('invalid_grant', 'Invalid JWT: its header or claims are not a JSON object.');
  if (header.alg !== 'RS256') return refusal('invalid_grant', 'Invalid JWT: the algorithm must be RS256.');
  if (typeof claims.iss !== 'string' || claims.iss === '')
    return refusal('invalid_grant', 'Invalid JWT: no iss (the service account email).');
  if (claims.aud !== GOOGLE_TOKEN_URL && claims.aud !== postedTo)
    return refusal('invalid_grant', `Invalid JWT: aud must be ${GOOGLE_TOKEN_URL} or ${postedTo}.`);
  const { iat, exp } = claims;
  if (typeof iat !== 'number' || typeof exp !== 'number' || iat > nowS + clockSkewS || exp <= nowS || exp - iat > maxJwtLifetimeS) {
    return refusal(
      'invalid_grant',
      'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
    );
  }
  const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
  if (!scopes.includes(CLOUD_PLATFORM_SCOPE)) return refusal('invalid_scope', `The JWT's scope must include ${CLOUD_PLATFORM_SCOPE}.`);
  const key = tokens.publicKey;
  if (key !== null) {
    const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
    if (!verify('RSA-SHA256', signed, key, Buffer.from(parts[2] as string, 'base64url')))
      return refusal('invalid_grant', 'Invalid JWT Signature.');
  }
  return null;
}

function refuse(ex: Exchange, tokens: GcpTokens, r: Refusal): void {
  tokens.refuse();
  replyJson(ex, 400, oauthError(r.error, r.description));
}

/** `POST /token`. Token faults are taken first, so "the token endpoint is down" needs no valid JWT. */
export function handleJwtGrant(tokens: GcpTokens, ex: Exchange): void {
  serveTokenRequest(tokens, ex, () => {
    const contentType = String(ex.req.headers['content-type'] ?? '');
    if (!contentType.startsWith('application/x-www-form-urlencoded'))
      return refuse(ex, tokens, refusal('invalid_request', 'The body must be application/x-www-form-urlencoded.'));
    const form = new URLSearchParams(ex.body);
    const grant = form.get('grant_type');
    if (grant !== JWT_BEARER) return refuse(ex, tokens, refusal('unsupported_grant_type', `Invalid grant_type: ${grant ?? ''}`));
    const assertion = form.get('assertion');
    if (assertion === null || assertion === '')
      return refuse(ex, tokens, refusal('invalid_request', 'Missing required parameter: assertion'));
    const problem = checkAssertion(tokens, assertion, urlOf(ex), Math.floor(Date.now() / 1000));
    if (problem !== null) return refuse(ex, tokens, problem);
    replyToken(ex, tokens, 'jwt');
  });
}
