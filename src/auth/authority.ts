import { hash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { errors, type JWTPayload, jwtVerify } from 'jose';
import type { JwtConfig, JwtIssuerConfig } from '../config/index.js';
import { IssuerKeys, type JwksHooks, jwksSourceOf } from './jwks.js';
import { decodeToken, headerSafe, MAX_TOKEN_BYTES } from './token.js';

// The gateway's judge of signed-in callers: which issuers it trusts (from the serving
// generation's `auth.jwt`), their keys (IssuerKeys, kept across reloads while their source is
// unchanged), and the tokens it has already verified, by digest, until they expire, so
// that a busy principal costs one signature check per token rather than per request.

/** One trusted issuer, as one generation's config has it, with the keys it verifies with. */
export interface Issuer {
  readonly id: string;
  readonly config: JwtIssuerConfig;
  readonly keys: IssuerKeys;
  readonly audiences: ReadonlySet<string>;
}

/** A token whose signature, issuer, lifetime and algorithm were checked; its audience is checked per endpoint. */
export interface VerifiedToken {
  readonly issuer: Issuer;
  readonly claims: Readonly<JWTPayload>;
  /** `exp`, epoch ms (every accepted token has one). */
  readonly expMs: number;
  readonly audiences: readonly string[];
  /** What request/ derived from it for one keyring's policy (the principal, or its refusal): kept beside the token. */
  memo: { readonly of: object; readonly value: unknown } | null;
}

export type TokenVerdict =
  | { readonly ok: true; readonly token: VerifiedToken }
  | { readonly ok: false; readonly code: 'unauthorized' | 'credential_unavailable'; readonly description: string };

/** Verified tokens held at most; the oldest go first. */
const MAX_CACHED = 50_000;

export class JwtAuthority {
  readonly #hooks: JwksHooks;
  #config: JwtConfig | null = null;
  #byIss = new Map<string, Issuer>();
  #byId = new Map<string, Issuer>();
  readonly #verified = new Map<string, VerifiedToken>();

  constructor(hooks: JwksHooks) {
    this.#hooks = hooks;
  }

  /** Whether any issuer is configured: when not, every credential is an API key. */
  get active(): boolean {
    return this.#config !== null;
  }

  get config(): JwtConfig | null {
    return this.#config;
  }

  get issuers(): readonly Issuer[] {
    return [...this.#byId.values()];
  }

  issuer(id: string): Issuer | undefined {
    return this.#byId.get(id);
  }

  /**
   * Takes a generation's `auth.jwt` (at start and after each swap). An issuer whose key
   * source is unchanged keeps its keys (and is refreshed, as each reload refreshes); a new
   * one starts fetching; a removed one stops. Tokens verified under an issuer that changed
   * are verified again.
   */
  configure(config: JwtConfig | undefined): void {
    const next = config ?? null;
    if (next === this.#config) return;
    const byIss = new Map<string, Issuer>();
    const byId = new Map<string, Issuer>();
    const kept = new Set<IssuerKeys>();
    for (const c of next?.issuers ?? []) {
      const before = this.#byId.get(c.id);
      if (before !== undefined && isDeepStrictEqual(before.config, c)) {
        // Unchanged (most reloads re-read the same auth block): the same issuer, so its verified tokens stay verified.
        kept.add(before.keys);
        byIss.set(c.issuer, before);
        byId.set(c.id, before);
        void before.keys.refetchForUnknownKid('reload');
        continue;
      }
      let keys: IssuerKeys;
      if (before !== undefined && before.keys.source === jwksSourceOf(c)) {
        // A reload refreshes the keys it keeps, within the cooldown (an overlay may reload every few seconds).
        keys = before.keys;
        void keys.refetchForUnknownKid('reload');
      } else {
        keys = new IssuerKeys(c, this.#hooks);
        void keys.refresh('start');
      }
      kept.add(keys);
      const issuer: Issuer = Object.freeze({ id: c.id, config: c, keys, audiences: new Set(c.audiences) });
      byIss.set(c.issuer, issuer);
      byId.set(c.id, issuer);
    }
    for (const old of this.#byId.values()) if (!kept.has(old.keys)) old.keys.close();
    this.#config = next;
    this.#byIss = byIss;
    this.#byId = byId;
  }

  /** Resolves when every issuer's first fetch has ended (or `timeoutMs` passed): the start waits for this. */
  async ready(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([Promise.all([...this.#byId.values()].map((i) => i.keys.firstFetch)), timeout]);
    clearTimeout(timer);
  }

  /**
   * Judges a presented JWT: at once for a token verified before (until its `exp`), or after
   * its signature is checked (a promise). Never throws; the refusal says what failed, in
   * words safe to send back (never the token).
   */
  verify(token: string, nowMs: number): TokenVerdict | Promise<TokenVerdict> {
    if (token.length > MAX_TOKEN_BYTES) return refuse(`the token is larger than ${MAX_TOKEN_BYTES / 1024} KiB`);
    const digest = hash('sha256', token, 'base64url');
    const known = this.#verified.get(digest);
    if (known !== undefined) {
      const issuer = known.issuer;
      if (this.#byIss.get(issuer.config.issuer) === issuer && nowMs < known.expMs + issuer.config.clock_skew_s * 1000) {
        return { ok: true, token: known };
      }
      this.#verified.delete(digest);
    }
    return this.#verifyNew(token, digest, nowMs);
  }

  close(): void {
    for (const i of this.#byId.values()) i.keys.close();
    this.#byId = new Map();
    this.#byIss = new Map();
    this.#verified.clear();
  }

  #verifyNew(token: string, digest: string, nowMs: number): TokenVerdict | Promise<TokenVerdict> {
    const decoded = decodeToken(token);
    if (decoded === null) return refuse('the token is not a well-formed JWT');
    const { header, claims } = decoded;
    const issuer = typeof claims.iss === 'string' ? this.#byIss.get(claims.iss) : undefined;
    if (issuer === undefined) return refuse('the token is from an unknown issuer');
    const alg = header.alg;
    if (typeof alg !== 'string' || alg.toLowerCase() === 'none')
      return refuse('the token is unsigned (alg none); the gateway accepts signed tokens only');
    if (!(issuer.config.algorithms as readonly string[]).includes(alg))
      return refuse(`algorithm ${alg} is not accepted from issuer ${issuer.id} (accepted: ${issuer.config.algorithms.join(', ')})`);
    for (const pointer of KEY_POINTERS) {
      if (header[pointer] !== undefined)
        return refuse(
          `the token's header carries ${pointer}: the gateway verifies with the issuer's configured keys only and never fetches or trusts a key a token names`,
        );
    }
    if (issuer.keys.state === 'pending')
      return issuer.keys.firstFetch.then(() => this.#checkSignature(token, digest, issuer, header, nowMs));
    return this.#checkSignature(token, digest, issuer, header, nowMs);
  }

  #checkSignature(
    token: string,
    digest: string,
    issuer: Issuer,
    header: Readonly<Record<string, unknown>>,
    nowMs: number,
  ): TokenVerdict | Promise<TokenVerdict> {
    const keys = issuer.keys;
    if (keys.keySet === null) return unavailable(issuer);
    const kid = header.kid;
    if (typeof kid === 'string' && !keys.hasKid(kid)) {
      const refetch = keys.refetchForUnknownKid();
      if (refetch === null) return refuse(unknownKid(issuer, kid));
      return refetch.then(() => (keys.hasKid(kid) ? this.#jose(token, digest, issuer, nowMs) : refuse(unknownKid(issuer, kid))));
    }
    return this.#jose(token, digest, issuer, nowMs);
  }

  async #jose(token: string, digest: string, issuer: Issuer, nowMs: number): Promise<TokenVerdict> {
    const keySet = issuer.keys.keySet;
    if (keySet === null) return unavailable(issuer);
    const c = issuer.config;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keySet, {
        issuer: c.issuer,
        algorithms: c.algorithms,
        clockTolerance: c.clock_skew_s,
        requiredClaims: ['exp'],
        currentDate: new Date(nowMs),
      }));
    } catch (err) {
      return refuse(joseFailure(err, issuer));
    }
    if (typeof payload.iat === 'number' && payload.iat * 1000 > nowMs + c.clock_skew_s * 1000)
      return refuse('the token was issued in the future (iat is past the allowed clock skew)');
    const aud = payload.aud;
    const verified: VerifiedToken = {
      issuer,
      claims: payload,
      expMs: (payload.exp as number) * 1000,
      audiences: typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud.filter((a) => typeof a === 'string') : [],
      memo: null,
    };
    if (this.#verified.size >= MAX_CACHED) {
      const oldest = this.#verified.keys().next();
      if (!oldest.done) this.#verified.delete(oldest.value);
    }
    this.#verified.set(digest, verified);
    return { ok: true, token: verified };
  }
}

/** Header members that point at a key the token chooses: never fetched, never trusted. */
const KEY_POINTERS = ['jku', 'x5u', 'jwk'] as const;

/** Whether the token's audience includes one of the issuer's, or `extra` (the MCP resource). */
export function audienceAccepted(token: VerifiedToken, extra: string | null = null): boolean {
  for (const a of token.audiences) if (token.issuer.audiences.has(a) || a === extra) return true;
  return false;
}

export function audienceRefusal(token: VerifiedToken, extra: string | null = null): TokenVerdict {
  const expected = [...token.issuer.audiences, ...(extra === null ? [] : [extra])];
  return refuse(`the token's audience is not accepted here (expected one of: ${expected.join(', ')})`);
}

function refuse(description: string): TokenVerdict {
  return { ok: false, code: 'unauthorized', description: headerSafe(description) };
}

function unavailable(issuer: Issuer): TokenVerdict {
  return {
    ok: false,
    code: 'credential_unavailable',
    description: headerSafe(`issuer ${issuer.id}'s signing keys could not be fetched yet; the gateway keeps retrying`),
  };
}

function unknownKid(issuer: Issuer, kid: string): string {
  return `the token is signed by an unknown key: no key ${JSON.stringify(kid.slice(0, 64))} in issuer ${issuer.id}'s JWKS`;
}

/** jose's refusal in words that say what failed (never the token). */
function joseFailure(err: unknown, issuer: Issuer): string {
  if (err instanceof errors.JWTExpired) return 'the token expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return 'the token is not valid yet (nbf)';
    if (err.claim === 'iss') return 'the token is from an unknown issuer';
    if (err.claim === 'exp') return 'the token has no valid exp claim';
    return `the token's ${err.claim} claim is not valid: ${err.reason}`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return `the token's algorithm is not accepted from issuer ${issuer.id}`;
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the token signature does not verify';
  if (err instanceof errors.JWKSNoMatchingKey)
    return `the token is signed by an unknown key: none in issuer ${issuer.id}'s JWKS matches it`;
  if (err instanceof errors.JWKSMultipleMatchingKeys)
    return `the token names no kid and several keys in issuer ${issuer.id}'s JWKS could have signed it`;
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) return 'the token is not a well-formed JWT';
  if (err instanceof errors.JOSENotSupported) return 'the token uses an algorithm or key type the gateway does not support';
  return 'the token could not be verified';
}
