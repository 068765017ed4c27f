// The shape of a presented token, judged before any key is looked at: whether a credential
// is a JWT at all (an API key never has this shape), its size, and its header and claims
// decoded (not yet trusted: they only say which issuer and which key to check it with).

/** A token larger than this is refused before it is decoded. */
export const MAX_TOKEN_BYTES = 8 * 1024;

/** Three base64url segments (JWS compact serialization); the third may not be empty here, so `alg: none` tokens match too. */
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Whether a presented credential is a JWT rather than an API key. */
export function looksLikeJwt(credential: string): boolean {
  // The first segment of every JWT is base64url JSON starting `{"` ("eyJ"): an API key with two dots is not mistaken for one.
  return credential.startsWith('eyJ') && COMPACT.test(credential);
}

export interface DecodedToken {
  readonly header: Readonly<Record<string, unknown>>;
  readonly claims: Readonly<Record<string, unknown>>;
}

/** The token's header and claims, decoded but unverified; null when either is not a JSON object. */
export function decodeToken(token: string): DecodedToken | null {
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  const header = jsonSegment(token.slice(0, first));
  const claims = jsonSegment(token.slice(first + 1, second));
  return header === null || claims === null ? null : { header, claims };
}

function jsonSegment(segment: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A claim by name, or by a dotted path into nested objects (`realm_access.roles`, as
 * Keycloak nests roles). The exact name is tried first: namespaced claims are URLs with dots
 * in them (`https://example.com/roles`).
 */
export function claimAt(claims: Readonly<Record<string, unknown>>, name: string): unknown {
  if (Object.hasOwn(claims, name)) return claims[name];
  let at: unknown = claims;
  for (const part of name.split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/**
 * A claim's values as strings: a string (space-separated when `split`, as OAuth's `scope`
 * is), or an array of strings and numbers. Anything else holds no value.
 */
export function claimValues(claims: Readonly<Record<string, unknown>>, name: string, split = false): readonly string[] {
  const value = claimAt(claims, name);
  if (typeof value === 'string') return split ? value.split(/\s+/).filter((s) => s !== '') : [value];
  if (typeof value === 'number' && Number.isFinite(value)) return [String(value)];
  if (Array.isArray(value)) return value.flatMap((v) => (typeof v === 'string' ? [v] : typeof v === 'number' ? [String(v)] : []));
  return [];
}

/** Text safe inside an RFC 6750 `error_description="…"`: printable ASCII without `"` or `\`. */
export function headerSafe(text: string): string {
  return text.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?');
}
