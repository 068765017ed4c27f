import type { KeyObject } from 'node:crypto';
import { createPublicKey, randomBytes } from 'node:crypto';
import type { Exchange } from './exchange.js';
import { drop, pause, replyJson } from './exchange.js';
import { FaultQueue } from './fault-queue.js';

// The access tokens a Vertex AI mock accepts, issued the two ways a Google client gets one:
// a service account trades a signed JWT at the OAuth2 token endpoint (`POST /token`), and a
// workload on GCE or GKE asks its metadata server. A token is random and lives `ttlS`
// seconds; the Vertex model paths accept only a token issued here and not yet expired.

/** What google-auth-library puts in a service account's JWT as `aud`, and where it posts it. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** Issued tokens kept for checking; the oldest are forgotten first, so a long benchmark stays bounded. */
const maxLiveTokens = 10_000;

export type TokenCheck = 'ok' | 'missing' | 'unknown' | 'expired';

/** Served at `GET /__mock/tokens`. */
export interface MockTokenStats {
  /** Tokens issued since start or the last reset, by either route. */
  issued: number;
  /** Of those, issued by `POST /token` for a service account's JWT. */
  issuedForJwt: number;
  /** Of those, issued by the metadata server. */
  issuedByMetadata: number;
  /** Requests to either token route refused (a bad grant, a missing Metadata-Flavor, a token fault). */
  refused: number;
}

export interface GcpTokenOptions {
  /** Seconds an issued token lives (its `expires_in`); 0 issues tokens that are already expired. */
  ttlS: number;
  /** When set, a JWT's RS256 signature must verify with this key; else any well-formed JWT is taken. */
  publicKeyPem: string | null;
}

/** The mock's token authority: what it issued, until when, and the faults its token routes meet. */
export class GcpTokens {
  readonly #ttlS: number;
  readonly #publicKey: KeyObject | null;
  /** Token → expiry in epoch ms, oldest first. */
  readonly #live = new Map<string, number>();
  #stats: MockTokenStats = { issued: 0, issuedForJwt: 0, issuedByMetadata: 0, refused: 0 };
  /** Faults for the token routes only; model requests never take them. */
  readonly faults = new FaultQueue();

  constructor(opts: GcpTokenOptions) {
    this.#ttlS = opts.ttlS;
    this.#publicKey = opts.publicKeyPem === null ? null : createPublicKey(opts.publicKeyPem);
  }

  get ttlS(): number {
    return this.#ttlS;
  }

  get publicKey(): KeyObject | null {
    return this.#publicKey;
  }

  issue(via: 'jwt' | 'metadata'): string {
    const token = `ya29.mock-${randomBytes(24).toString('base64url')}`;
    this.#live.set(token, Date.now() + this.#ttlS * 1000);
    if (this.#live.size > maxLiveTokens) this.#live.delete(this.#live.keys().next().value as string);
    this.#stats.issued += 1;
    if (via === 'jwt') this.#stats.issuedForJwt += 1;
    else this.#stats.issuedByMetadata += 1;
    return token;
  }

  refuse(): void {
    this.#stats.refused += 1;
  }

  /** Checks an `Authorization` header value. */
  check(authorization: string | undefined): TokenCheck {
    const match = authorization === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match === null) return 'missing';
    const expiresAt = this.#live.get(match[1] as string);
    if (expiresAt === undefined) return 'unknown';
    return Date.now() < expiresAt ? 'ok' : 'expired';
  }

  stats(): MockTokenStats {
    return { ...this.#stats };
  }

  /**
   * Zeroes the counts and clears the token faults. Issued tokens stay valid: a client (a
   * gateway under test) caches its token across tests, as it would across a real day.
   */
  reset(): void {
    this.#stats = { issued: 0, issuedForJwt: 0, issuedByMetadata: 0, refused: 0 };
    this.faults.clear();
  }
}

/** Google's token endpoint answers errors as RFC 6749 does: `{"error", "error_description"}`. */
export function oauthError(error: string, description: string): string {
  return JSON.stringify({ error, error_description: description });
}

/**
 * A token route meets its fault queue as a model route meets its own: a status fault answers
 * (by default an OAuth-shaped error), close drops, hang never answers, latency delays.
 */
export function serveTokenRequest(tokens: GcpTokens, ex: Exchange, answer: () => void): void {
  const fault = tokens.faults.take();
  const respond = (): void => {
    if (fault?.mode === 'status') {
      tokens.refuse();
      const body = fault.source.body === undefined ? tokenFaultBody(fault.status) : fault.bodyText;
      return replyJson(ex, fault.status, body, fault.headers);
    }
    if (fault?.mode === 'close' || fault?.mode === 'cut_stream') {
      tokens.refuse();
      return drop(ex);
    }
    if (fault?.mode === 'hang') return tokens.refuse();
    answer();
  };
  if (fault?.mode !== 'latency') return respond();
  void pause(ex, fault.latencyMs).then(() => {
    if (!ex.closed) respond();
  });
}

function tokenFaultBody(status: number): string {
  if (status === 400) return oauthError('invalid_grant', 'Mock fault: HTTP 400.');
  if (status === 401 || status === 403) return oauthError('unauthorized_client', `Mock fault: HTTP ${status}.`);
  if (status === 429) return oauthError('rate_limit_exceeded', 'Mock fault: HTTP 429.');
  return oauthError('internal_failure', `Mock fault: HTTP ${status}.`);
}

function tokenBody(token: string, ttlS: number): string {
  return JSON.stringify({ access_token: token, expires_in: ttlS, token_type: 'Bearer' });
}

export function replyToken(ex: Exchange, tokens: GcpTokens, via: 'jwt' | 'metadata'): void {
  const token = tokens.issue(via);
  // Google marks token answers uncacheable; a client must not reuse one from a proxy.
  replyJson(ex, 200, tokenBody(token, tokens.ttlS), { 'cache-control': 'no-cache, no-store, max-age=0, must-revalidate' });
}
