import type { IncomingHttpHeaders } from 'node:http';

/** One request as the mock received it, kept so tests can check what the gateway forwarded. */
export interface MockRequestRecord {
  method: string;
  /** Path without the query string. */
  path: string;
  /** `1.1`, or `2.0` for Bedrock's HTTP/2 (h2c). */
  httpVersion: string;
  /** Node's lower-cased request headers, as received (over HTTP/2 with its pseudo-headers). */
  headers: IncomingHttpHeaders;
  /** The raw request body, byte-for-byte (decoded as UTF-8). */
  body: string;
  /** Epoch milliseconds when the body had been fully read. */
  at: number;
}

/** Served at `GET /__mock/stats`. Nothing under `/__mock/` is counted or recorded. */
export interface MockStats {
  name: string;
  total: number;
  /** Keyed `"<METHOD> <path>"`, e.g. `"POST /v1/chat/completions"`. */
  requests: Record<string, number>;
  /** Requests whose connection closed before the response was finished (not counting faults that drop it on purpose). */
  aborted: number;
  /** TCP connections accepted: with keep-alive, far fewer than requests; one per request means a client that churns. */
  connections: number;
  /** The last 50 requests, newest last. */
  recent: MockRequestRecord[];
}

const recentLimit = 50;

export class RequestStats {
  readonly #name: string;
  #total = 0;
  #aborted = 0;
  #connections = 0;
  // Keyed by method then path so counting allocates no key string per request.
  #counts = new Map<string, Map<string, number>>();
  #recent: MockRequestRecord[] = [];

  constructor(name: string) {
    this.#name = name;
  }

  count(method: string, path: string): void {
    this.#total += 1;
    let byPath = this.#counts.get(method);
    if (byPath === undefined) {
      byPath = new Map();
      this.#counts.set(method, byPath);
    }
    byPath.set(path, (byPath.get(path) ?? 0) + 1);
  }

  record(entry: MockRequestRecord): void {
    if (this.#recent.push(entry) > recentLimit) this.#recent.shift();
  }

  abort(): void {
    this.#aborted += 1;
  }

  connect(): void {
    this.#connections += 1;
  }

  reset(): void {
    this.#total = 0;
    this.#aborted = 0;
    this.#connections = 0;
    this.#counts = new Map();
    this.#recent = [];
  }

  snapshot(): MockStats {
    const requests: Record<string, number> = {};
    for (const [method, byPath] of this.#counts) {
      for (const [path, n] of byPath) requests[`${method} ${path}`] = n;
    }
    return {
      name: this.#name,
      total: this.#total,
      requests,
      aborted: this.#aborted,
      connections: this.#connections,
      recent: this.#recent.map((r) => ({ ...r, headers: { ...r.headers } })),
    };
  }
}
