import { inspect } from 'node:util';
import { type EntraSpec, fetchEntraToken, type TokenFetch } from './token-client.js';

/** What a token source tells its owner (server/ logs it); never a token or a secret. */
export type TokenEvent =
  | { readonly kind: 'fetched'; readonly provider: string; readonly lifetimeS: number; readonly refreshInMs: number }
  | { readonly kind: 'failed'; readonly provider: string; readonly message: string; readonly retryInMs: number };

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** Azure refreshes 5 minutes ahead; a short-lived token (or a test's) is refreshed at 80% of its life instead. */
const REFRESH_AHEAD_S = 300;

/** When to fetch the next token: 5 minutes before expiry or at 80% of the lifetime, whichever comes first. */
export function refreshDelayMs(lifetimeS: number): number {
  const ahead = Math.min(0.8 * lifetimeS, lifetimeS - REFRESH_AHEAD_S);
  return Math.round((ahead > 0 ? ahead : 0.8 * lifetimeS) * 1000);
}

/**
 * One provider's Entra ID token, kept fresh by an unref'd timer so a request never waits on
 * the authority: `bearer()` is a field read. The first fetch starts with `start()` (when the
 * generation is built); a failed fetch is retried with a doubling delay while the token in
 * hand, if any, serves until it expires. Like Credential, the token is in a private field and
 * never printed.
 */
export class EntraTokenSource {
  readonly #spec: EntraSpec;
  readonly #onEvent: (e: TokenEvent) => void;
  readonly #fetch: (spec: EntraSpec, stopped: AbortSignal) => Promise<TokenFetch>;
  #token: string | null = null;
  #expiresAt = 0;
  #problem = 'no Entra ID token fetched yet';
  #timer: NodeJS.Timeout | null = null;
  #failures = 0;
  #started = false;
  #stopped = false;
  #first: Promise<void> | null = null;
  /** Aborts a fetch under way when the source is retired, so a shutdown does not wait for the authority. */
  readonly #stop = new AbortController();
  /** Safe to show (admin views): the tenant, the client and how it proves itself. */
  readonly source: string;

  constructor(
    spec: EntraSpec,
    onEvent: (e: TokenEvent) => void,
    fetch: (spec: EntraSpec, stopped: AbortSignal) => Promise<TokenFetch> = fetchEntraToken,
  ) {
    this.#spec = spec;
    this.#onEvent = onEvent;
    this.#fetch = fetch;
    const proof = spec.clientSecret !== null ? `client_secret ${spec.clientSecret.source}` : 'workload identity';
    this.source = `entra:${spec.tenantId}/${spec.clientId} (${proof})`;
  }

  /** Starts the first fetch (once); the promise settles when it has, whatever its outcome. */
  start(): Promise<void> {
    if (!this.#started) {
      this.#started = true;
      this.#first = this.#refresh();
    }
    return this.#first ?? Promise.resolve();
  }

  /** Retired with its provider: no more fetches, and the token is dropped. */
  stop(): void {
    this.#stopped = true;
    this.#stop.abort();
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#token = null;
  }

  /** The token to send, or null when none is valid now (see `problem`). */
  bearer(): string | null {
    return this.#token !== null && Date.now() < this.#expiresAt ? this.#token : null;
  }

  /** The header value, for the upstream call; the attempt checked `bearer()` first. */
  authorization(): string {
    return `Bearer ${this.bearer() ?? ''}`;
  }

  /** Why `bearer()` is null: the last fetch's failure, or that none has succeeded yet. */
  problem(): string {
    return this.#token !== null && Date.now() >= this.#expiresAt ? `Entra ID token expired; ${this.#problem}` : this.#problem;
  }

  async #refresh(): Promise<void> {
    if (this.#stopped) return;
    const r = await this.#fetch(this.#spec, this.#stop.signal).catch(
      (err: unknown): TokenFetch => ({ ok: false, message: `token fetch failed (${String((err as Error)?.name)})` }),
    );
    if (this.#stopped) return;
    const provider = this.#spec.providerName;
    if (r.ok) {
      this.#token = r.token;
      this.#expiresAt = Date.now() + r.lifetimeS * 1000;
      this.#failures = 0;
      this.#problem = 'no Entra ID token fetched yet';
      const refreshInMs = refreshDelayMs(r.lifetimeS);
      this.#schedule(refreshInMs);
      this.#onEvent({ kind: 'fetched', provider, lifetimeS: r.lifetimeS, refreshInMs });
    } else {
      this.#failures += 1;
      this.#problem = `Entra ID token unavailable: ${r.message}`;
      const retryInMs = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (this.#failures - 1));
      this.#schedule(retryInMs);
      this.#onEvent({ kind: 'failed', provider, message: r.message, retryInMs });
    }
  }

  #schedule(ms: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#refresh();
    }, ms);
    // A refresh never keeps the process alive: shutdown does not wait for the next token.
    this.#timer.unref();
  }

  toJSON(): string {
    return `[credential ${this.source}]`;
  }

  [inspect.custom](): string {
    return this.toJSON();
  }
}
