import { open } from 'node:fs/promises';
import { createLocalJWKSet, type JSONWebKeySet, type LocalJWKSet } from 'jose';
import { fetchableUrl, type JwtIssuerConfig } from '../config/index.js';

// One issuer's signing keys (its JWKS), kept off the request path: fetched at start and on
// each reload, refreshed every `jwks_recheck_s`, fetched again when a token names a key
// that is not there (once per cooldown, one fetch however many requests ask), and kept
// when a fetch fails: the last good keys serve until a retry (backoff up to 30 s) succeeds.

/** A JWKS answer, a discovery document or a JWKS file larger than this is refused. */
export const MAX_JWKS_BYTES = 1024 * 1024;
const FETCH_TIMEOUT_MS = 5_000;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/** What the keys report to the composition root: each fetch's outcome (for metrics and logs). */
export interface JwksHooks {
  fetched(issuer: string, result: 'ok' | 'error', detail: { reason: string; error?: string; retryInMs?: number; keys?: number }): void;
}

export type KeysState = 'pending' | 'ready' | 'unavailable';

/** Where one issuer's keys come from: what must be equal for two configs to share their keys. */
export function jwksSourceOf(config: JwtIssuerConfig): string {
  return JSON.stringify([config.issuer, config.jwks, config.jwks_recheck_s, config.jwks_refetch_cooldown_s]);
}

export class IssuerKeys {
  readonly id: string;
  readonly source: string;
  readonly #config: JwtIssuerConfig;
  readonly #hooks: JwksHooks;
  #set: LocalJWKSet | null = null;
  #kids: ReadonlySet<string> = new Set();
  #state: KeysState = 'pending';
  #lastError: string | null = null;
  #inflight: Promise<void> | null = null;
  #lastFetchMs = Number.NEGATIVE_INFINITY;
  #failures = 0;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #firstDone: Promise<void>;
  #firstResolve!: () => void;

  constructor(config: JwtIssuerConfig, hooks: JwksHooks) {
    this.id = config.id;
    this.source = jwksSourceOf(config);
    this.#config = config;
    this.#hooks = hooks;
    this.#firstDone = new Promise((resolve) => {
      this.#firstResolve = resolve;
    });
  }

  /** `pending` until the first fetch ends; then `ready` (keys held) or `unavailable` (never had any). */
  get state(): KeysState {
    return this.#state;
  }

  get lastError(): string | null {
    return this.#lastError;
  }

  /** The key set jose verifies with; null while none was ever fetched. */
  get keySet(): LocalJWKSet | null {
    return this.#set;
  }

  hasKid(kid: string): boolean {
    return this.#kids.has(kid);
  }

  /** Resolves when the first fetch has ended, whatever its outcome. */
  get firstFetch(): Promise<void> {
    return this.#firstDone;
  }

  /** Fetches now (start and reload): single-flight with a fetch already running. */
  refresh(reason: string): Promise<void> {
    if (this.#inflight !== null) return this.#inflight;
    this.#lastFetchMs = Date.now();
    const run = this.#fetch(reason).finally(() => {
      this.#inflight = null;
    });
    this.#inflight = run;
    return run;
  }

  /**
   * A token named a key this set lacks: one fetch, shared by every request that asks while
   * it runs, and at most one per cooldown. Null when the cooldown forbids one (the caller
   * refuses the token as naming an unknown key).
   */
  refetchForUnknownKid(reason = 'unknown_kid'): Promise<void> | null {
    if (this.#inflight !== null) return this.#inflight;
    if (Date.now() - this.#lastFetchMs < this.#config.jwks_refetch_cooldown_s * 1000) return null;
    return this.refresh(reason);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#firstResolve();
  }

  async #fetch(reason: string): Promise<void> {
    try {
      const jwks = await readJwks(this.#config);
      if (this.#closed) return;
      this.#set = createLocalJWKSet(jwks);
      this.#kids = new Set(jwks.keys.flatMap((k) => (typeof k.kid === 'string' ? [k.kid] : [])));
      this.#state = 'ready';
      this.#lastError = null;
      this.#failures = 0;
      this.#hooks.fetched(this.id, 'ok', { reason, keys: jwks.keys.length });
      this.#schedule(this.#config.jwks_recheck_s * 1000);
    } catch (err) {
      if (this.#closed) return;
      this.#failures += 1;
      this.#lastError = (err as Error).message;
      if (this.#state === 'pending') this.#state = 'unavailable';
      const retryInMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (this.#failures - 1));
      this.#hooks.fetched(this.id, 'error', { reason, error: this.#lastError, retryInMs });
      this.#schedule(retryInMs);
    } finally {
      this.#firstResolve();
    }
  }

  #schedule(inMs: number): void {
    if (this.#closed) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.refresh(this.#failures > 0 ? 'retry' : 'recheck');
    }, inMs);
    this.#timer.unref();
  }
}

/** The issuer's JWKS from its source, bounded and checked for shape. */
async function readJwks(config: JwtIssuerConfig): Promise<JSONWebKeySet> {
  const jwks = config.jwks;
  let value: unknown;
  if ('file' in jwks) value = JSON.parse(await readBounded(jwks.file));
  else if ('url' in jwks) value = await fetchJson(jwks.url, 'the JWKS');
  else value = await fetchJson(await discoveredJwksUri(config.issuer), 'the JWKS');
  return checkedJwks(value);
}

/** `<issuer>/.well-known/openid-configuration`'s `jwks_uri`, after checking the document names this issuer. */
async function discoveredJwksUri(issuer: string): Promise<string> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const doc = await fetchJson(url, 'the discovery document');
  if (doc === null || typeof doc !== 'object') throw new Error(`${url}: the discovery document is not a JSON object`);
  const { issuer: named, jwks_uri: uri } = doc as { issuer?: unknown; jwks_uri?: unknown };
  // OpenID Connect Discovery 1.0 section 4.3: the document must name the issuer it was fetched for.
  if (named !== issuer)
    throw new Error(`${url}: the discovery document names issuer ${JSON.stringify(named)}, not ${JSON.stringify(issuer)}`);
  if (typeof uri !== 'string' || !fetchableUrl(uri))
    throw new Error(`${url}: jwks_uri must be an https:// URL (http:// only to a loopback host)`);
  return uri;
}

function checkedJwks(value: unknown): JSONWebKeySet {
  if (value === null || typeof value !== 'object' || !Array.isArray((value as { keys?: unknown }).keys))
    throw new Error('the JWKS is not a JSON object with a "keys" array');
  const keys = (value as { keys: unknown[] }).keys.filter(
    (k): k is JSONWebKeySet['keys'][number] =>
      k !== null && typeof k === 'object' && typeof (k as { kty?: unknown }).kty === 'string' && (k as { use?: unknown }).use !== 'enc',
  );
  if (keys.length === 0) throw new Error('the JWKS holds no signing key');
  // Public keys only: a JWKS that publishes a private part is a misconfigured issuer; its private members are dropped.
  return { keys: keys.map(({ d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, k: _k, ...pub }) => pub) };
}

async function fetchJson(url: string, what: string): Promise<unknown> {
  const res = await fetch(url, {
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    // A redirect could lead anywhere, in clear: the configured URL is the one to fetch.
    redirect: 'error',
    headers: { accept: 'application/json' },
  });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`${url}: ${what} answered HTTP ${res.status}`);
  }
  const text = await boundedText(res, url, what);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${url}: ${what} is not JSON`);
  }
}

async function boundedText(res: Response, url: string, what: string): Promise<string> {
  const length = Number(res.headers.get('content-length') ?? Number.NaN);
  if (length > MAX_JWKS_BYTES) {
    await res.body?.cancel();
    throw new Error(`${url}: ${what} is larger than ${MAX_JWKS_BYTES} bytes`);
  }
  if (res.body === null) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_JWKS_BYTES) {
      await reader.cancel();
      throw new Error(`${url}: ${what} is larger than ${MAX_JWKS_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readBounded(path: string): Promise<string> {
  const file = await open(path, 'r');
  try {
    const buf = Buffer.alloc(MAX_JWKS_BYTES + 1);
    const { bytesRead } = await file.read(buf, 0, buf.length, 0);
    if (bytesRead > MAX_JWKS_BYTES) throw new Error(`${path}: the JWKS file is larger than ${MAX_JWKS_BYTES} bytes`);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await file.close();
  }
}
