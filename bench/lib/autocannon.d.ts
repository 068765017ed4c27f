// autocannon 8 ships no types. Only the part of its programmatic API the benchmark uses.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface AutocannonOptions {
    url: string;
    method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
    headers?: Record<string, string>;
    body?: string | Buffer;
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds before a request counts as a timeout. */
    timeout?: number;
    /** Milliseconds between the per-second samples (also how often the stop flag is checked). */
    sampleInt?: number;
    /** The sequence each connection sends in turn; a setupRequest rebuilds its request before every send. */
    requests?: Array<{ setupRequest?: SetupRequest }>;
  }

  /** The request as autocannon is about to build it (only the part the benchmark touches). */
  interface RequestData {
    readonly headers: Record<string, string>;
    readonly [field: string]: unknown;
  }

  /** Returns the request to send; a falsy value restarts the sequence. */
  type SetupRequest = (req: RequestData, context: Record<string, unknown>) => RequestData | null;

  interface Histogram {
    readonly average: number;
    readonly mean: number;
    readonly stddev: number;
    readonly min: number;
    readonly max: number;
    readonly total: number;
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
  }

  interface AutocannonResult {
    readonly url: string;
    readonly connections: number;
    /** Seconds, rounded to 10 ms. */
    readonly duration: number;
    readonly errors: number;
    readonly timeouts: number;
    readonly mismatches: number;
    readonly non2xx: number;
    readonly resets: number;
    readonly '2xx': number;
    readonly statusCodeStats: Record<string, { count: number }>;
    /** Milliseconds, recorded with 1 ms resolution. */
    readonly latency: Histogram;
    readonly requests: Histogram & { readonly sent: number };
    readonly throughput: Histogram;
    readonly start: Date;
    readonly finish: Date;
  }

  interface Instance extends EventEmitter {
    stop(): void;
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
    on(event: 'reqError', listener: (err: Error) => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  function autocannon(opts: AutocannonOptions, cb: (err: Error | null, result: AutocannonResult) => void): Instance;
  namespace autocannon {
    export type { AutocannonOptions, AutocannonResult, Instance, RequestData, SetupRequest };
  }
  export default autocannon;
}
