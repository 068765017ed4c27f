import { Pool } from 'undici';

export interface PoolSpec {
  /** `type base_url`: the provider identity that owns this pool. */
  readonly identity: string;
  readonly baseUrl: string;
  readonly connectTimeoutMs: number;
  readonly maxConnections: number;
  /** For an https base URL: a private CA, a client certificate (mutual TLS), the name to verify. */
  readonly tls?: PoolTls;
}

/** PEM texts as read from the files the config names (never logged, never in a pool's key). */
export interface PoolTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly serverName?: string;
}

export interface UpstreamCall {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Appended to the base URL's path, e.g. `/chat/completions`. */
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string | Buffer | null;
  /** Time to the response headers, and the longest silence between two body chunks. */
  readonly timeoutMs: number;
}

/**
 * undici's own handler protocol: what its client calls for every dispatched request. The
 * newer one (onRequestStart, onResponseStart, …) is a wrapper over it that builds a
 * controller and parses every response's headers into an object before the handler sees
 * them; a proxy that passes a few allowed headers on needs neither (about 3 µs of a
 * request's CPU, ADR 0022). undici marks these names deprecated in its types, yet its client calls
 * nothing else (undici 7: dispatcher-base.js unwraps a new-style handler into this one).
 */
export interface RawHandler {
  /** Before the request is written; `abort` ends it (onError follows). */
  onConnect(abort: (err?: Error) => void): void;
  /**
   * The status and the raw headers (name, value, name, value, … as received). Returning
   * false pauses the response until `resume` is called.
   */
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean;
  /** A body chunk; returning false pauses the response until `resume` is called. */
  onData(chunk: Buffer): boolean;
  /** The body has ended. undici's types say the trailers are strings; they are Buffers, and unread here. */
  onComplete(trailers: unknown[] | null): void;
  onError(err: Error): void;
}

/**
 * One keep-alive connection pool per provider identity and connection settings. A
 * generation swap that removes, re-points or re-tunes a provider retires its pool: it
 * closes once its in-flight calls finish. A late call on a retired pool (a failover
 * attempt of a request that started on the old generation) reopens it for that call
 * rather than failing, and it closes again after.
 */
export class ProviderPool {
  readonly identity: string;
  readonly #origin: string;
  readonly #basePath: string;
  readonly #spec: PoolSpec;
  #pool: Pool | null = null;
  #inflight = 0;
  #retired = false;

  constructor(spec: PoolSpec) {
    const url = new URL(spec.baseUrl);
    this.identity = spec.identity;
    this.#origin = url.origin;
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.#spec = spec;
  }

  get inflight(): number {
    return this.#inflight;
  }

  get retired(): boolean {
    return this.#retired;
  }

  /**
   * Sends one call. The handler gets undici's callbacks directly (no stream or promise
   * per call, which is most of a proxy's overhead). The pool counts the call as in flight
   * until undici reports its end or its error, so a retired pool closes after its last
   * call, whatever the handler does.
   */
  dispatch(call: UpstreamCall, handler: RawHandler): void {
    const pool = (this.#pool ??= this.#open());
    this.#inflight += 1;
    const counted = new CountedCall(this.#callEnded, handler);
    try {
      pool.dispatch(
        {
          origin: this.#origin,
          method: call.method,
          path: this.#basePath + call.path,
          headers: call.headers,
          body: call.body,
          headersTimeout: call.timeoutMs,
          bodyTimeout: call.timeoutMs,
        },
        counted,
      );
    } catch (err) {
      // A synchronous refusal (invalid options, a destroyed pool) ends the call here.
      counted.end();
      throw err;
    }
  }

  /** Closes the pool once in-flight calls have finished. */
  retire(): void {
    this.#retired = true;
    if (this.#inflight === 0) this.#closePool();
  }

  /** Immediate close at shutdown, after the drain. */
  async destroy(): Promise<void> {
    this.#retired = true;
    const pool = this.#pool;
    this.#pool = null;
    if (pool !== null) await pool.destroy().catch(() => undefined);
  }

  #open(): Pool {
    return new Pool(this.#origin, {
      connections: this.#spec.maxConnections,
      connectTimeout: this.#spec.connectTimeoutMs,
      ...(this.#spec.tls === undefined
        ? {}
        : {
            connect: {
              ca: this.#spec.tls.ca,
              cert: this.#spec.tls.cert,
              key: this.#spec.tls.key,
              servername: this.#spec.tls.serverName,
              rejectUnauthorized: true,
            },
          }),
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
  }

  /** One dispatched call has ended (see CountedCall). */
  readonly #callEnded = (): void => {
    this.#inflight -= 1;
    if (this.#retired && this.#inflight === 0) this.#closePool();
  };

  #closePool(): void {
    const pool = this.#pool;
    this.#pool = null;
    if (pool !== null) void pool.close().catch(() => undefined);
  }
}

/**
 * Decorates a call's handler so that the pool learns, exactly once, that the call ended:
 * undici ends every dispatched call with either onComplete or onError.
 */
class CountedCall implements RawHandler {
  readonly #onEnd: () => void;
  readonly #inner: RawHandler;
  #ended = false;

  constructor(onEnd: () => void, inner: RawHandler) {
    this.#onEnd = onEnd;
    this.#inner = inner;
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onEnd();
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#inner.onConnect(abort);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    return this.#inner.onHeaders(statusCode, rawHeaders, resume, statusText);
  }

  onData(chunk: Buffer): boolean {
    return this.#inner.onData(chunk);
  }

  onComplete(trailers: unknown[] | null): void {
    this.end();
    this.#inner.onComplete(trailers);
  }

  onError(err: Error): void {
    this.end();
    this.#inner.onError(err);
  }
}
