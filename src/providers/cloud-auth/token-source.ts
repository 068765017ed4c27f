import { inspect } from 'node:util';
import { type EntraSpec, fetchEntraToken, type TokenFetch } from './entra-client.js';

/** What a source tells its owner (server/ logs it); never a token, a key or a secret. */
export type TokenEvent =
  | {
      readonly kind: 'fetched';
      readonly provider: string;
      /** What the source holds: `Entra ID token`, `Google Cloud token`, `AWS credentials`. */
      readonly what: string;
      /** null: it does not expire (access keys from the config). */
      readonly lifetimeS: number | null;
      readonly refreshInMs: number | null;
    }
  | { readonly kind: 'failed'; readonly provider: string; readonly what: string; readonly message: string; readonly retryInMs: number };

/** One fetch's outcome: the value and how long it lives (null = for good), or why there is none (no secret in it). */
export type Fetched<T> =
  | { readonly ok: true; readonly value: T; readonly lifetimeS: number | null }
  | { readonly ok: false; readonly message: string };

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** Azure and the AWS SDKs refresh 5 minutes ahead; a short-lived token (or a test's) is refreshed at 80% of its life instead. */
const REFRESH_AHEAD_S = 300;

/** When to fetch the next value: 5 minutes before expiry or at 80% of the lifetime, whichever comes first. */
export function refreshDelayMs(lifetimeS: number): number {
  const ahead = Math.min(0.8 * lifetimeS, lifetimeS - REFRESH_AHEAD_S);
  return Math.round((ahead > 0 ? ahead : 0.8 * lifetimeS) * 1000);
}

/** Who a source serves and what it holds, for its messages and admin views. */
export interface SourceLabel {
  readonly provider: string;
  /** `Entra ID token`, `Google Cloud token`, `AWS credentials`. */
  readonly what: string;
  /** Safe to show: where the value comes from (a tenant and client, a service account, a role), never the value. */
  readonly source: string;
}

/**
 * One provider's cloud credential (a bearer token, or short-lived AWS keys), kept fresh by
 * an unref'd timer so a request never waits on the authority: `current()` is a field read.
 * The first fetch starts with `start()` (when the generation is built); a failed fetch is
 * retried with a doubling delay while the value in hand, if any, serves until it expires.
 * Like Credential, the value is in a private field and never printed.
 */
export class TokenSource<T> {
  readonly #label: SourceLabel;
  readonly #onEvent: (e: TokenEvent) => void;
  readonly #fetch: (stopped: AbortSignal) => Promise<Fetched<T>>;
  #value: T | null = null;
  #expiresAt = 0;
  #problem: string;
  #timer: NodeJS.Timeout | null = null;
  #failures = 0;
  #started = false;
  #stopped = false;
  #first: Promise<void> | null = null;
  /** Aborts a fetch under way when the source is retired, so a shutdown does not wait for the authority. */
  readonly #stop = new AbortController();
  /** Safe to show (admin views). */
  readonly source: string;

  constructor(label: SourceLabel, onEvent: (e: TokenEvent) => void, fetch: (stopped: AbortSignal) => Promise<Fetched<T>>) {
    this.#label = label;
    this.#onEvent = onEvent;
    this.#fetch = fetch;
    this.#problem = `no ${label.what} fetched yet`;
    this.source = label.source;
  }

  /** Starts the first fetch (once); the promise settles when it has, whatever its outcome. */
  start(): Promise<void> {
    if (!this.#started) {
      this.#started = true;
      this.#first = this.#refresh();
    }
    return this.#first ?? Promise.resolve();
  }

  /** Retired with its provider: no more fetches, and the value is dropped. */
  stop(): void {
    this.#stopped = true;
    this.#stop.abort();
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#value = null;
  }

  /** The value to use, or null when none is valid now (see `problem`). */
  current(): T | null {
    return this.#value !== null && Date.now() < this.#expiresAt ? this.#value : null;
  }

  /** Why `current()` is null: the last fetch's failure, or that none has succeeded yet. */
  problem(): string {
    return this.#value !== null && Date.now() >= this.#expiresAt ? `${this.#label.what} expired; ${this.#problem}` : this.#problem;
  }

  async #refresh(): Promise<void> {
    if (this.#stopped) return;
    const r = await this.#fetch(this.#stop.signal).catch(
      (err: unknown): Fetched<T> => ({ ok: false, message: `fetch failed (${String((err as Error)?.name)})` }),
    );
    if (this.#stopped) return;
    const { provider, what } = this.#label;
    if (r.ok) {
      this.#value = r.value;
      this.#expiresAt = r.lifetimeS === null ? Number.POSITIVE_INFINITY : Date.now() + r.lifetimeS * 1000;
      this.#failures = 0;
      this.#problem = `no ${what} fetched yet`;
      const refreshInMs = r.lifetimeS === null ? null : refreshDelayMs(r.lifetimeS);
      if (refreshInMs !== null) this.#schedule(refreshInMs);
      this.#onEvent({ kind: 'fetched', provider, what, lifetimeS: r.lifetimeS, refreshInMs });
    } else {
      this.#failures += 1;
      this.#problem = `${what} unavailable: ${r.message}`;
      const retryInMs = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (this.#failures - 1));
      this.#schedule(retryInMs);
      this.#onEvent({ kind: 'failed', provider, what, message: r.message, retryInMs });
    }
  }

  #schedule(ms: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#refresh();
    }, ms);
    // A refresh never keeps the process alive: shutdown does not wait for the next value.
    this.#timer.unref();
  }

  toJSON(): string {
    return `[credential ${this.source}]`;
  }

  [inspect.custom](): string {
    return this.toJSON();
  }
}

/** A source of OAuth2 bearer tokens (Entra ID, Google Cloud): sent as `Authorization: Bearer`. */
export class BearerTokenSource extends TokenSource<string> {
  /** The token to send, or null when none is valid now (see `problem`). */
  bearer(): string | null {
    return this.current();
  }

  /** The header value, for the upstream call; the attempt checked `bearer()` first. */
  authorization(): string {
    return `Bearer ${this.current() ?? ''}`;
  }
}

/** A provider's Entra ID token: the client-credentials grant, or a federated workload identity. */
export class EntraTokenSource extends BearerTokenSource {
  constructor(
    spec: EntraSpec,
    onEvent: (e: TokenEvent) => void,
    fetch: (spec: EntraSpec, stopped: AbortSignal) => Promise<TokenFetch> = fetchEntraToken,
  ) {
    const proof = spec.clientSecret !== null ? `client_secret ${spec.clientSecret.source}` : 'workload identity';
    super(
      { provider: spec.providerName, what: 'Entra ID token', source: `entra:${spec.tenantId}/${spec.clientId} (${proof})` },
      onEvent,
      (stopped) => fetch(spec, stopped).then((r) => (r.ok ? { ok: true, value: r.token, lifetimeS: r.lifetimeS } : r)),
    );
  }
}
