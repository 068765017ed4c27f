// A listener's endpoints as a table of method + path -> handler. Matching gives the
// endpoint, or the methods the path does accept (405 with Allow), or nothing (404); the
// listener sends both refusals through the same error path as every other error.

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/**
 * The one handler contract of both listeners: a handler answers the request and calls
 * `done` once, with null or the error its client must be answered with (the listener
 * answers it). Throwing before anything was answered is the same as `done(err)`.
 */
export type Handler<C> = (ctx: C, rest: string, done: (err: unknown) => void) => void;

/** The adapter for a handler that answers at once or through a promise. */
export const answered =
  <C>(fn: (ctx: C, rest: string) => void | Promise<void>): Handler<C> =>
  (ctx, rest, done) =>
    void Promise.resolve(fn(ctx, rest)).then(() => done(null), done);

export interface Endpoint<C> {
  readonly method: Method;
  /** An exact path, or a prefix when it ends in `/*` (the rest is the endpoint's argument). */
  readonly path: string;
  readonly handle: Handler<C>;
  /** Probes and scrapes are not requests worth a record (metrics, access line). Default true. */
  readonly recorded?: boolean;
  /** Admin endpoints: whether the admin token is required (when one is set). Default true. */
  readonly authenticated?: boolean;
}

export type Match<C, E extends Endpoint<C> = Endpoint<C>> =
  | { readonly kind: 'found'; readonly endpoint: E; readonly rest: string }
  | { readonly kind: 'method_not_allowed'; readonly allow: string }
  | { readonly kind: 'not_found' };

const NOT_FOUND = Object.freeze({ kind: 'not_found' as const });

/** The endpoints of one path, with every answer built once. */
interface PathEntry<C, E extends Endpoint<C>> {
  readonly endpoints: E[];
  found: Map<string, Match<C, E> & { readonly kind: 'found' }>;
  notAllowed: Match<C, E>;
}

/** A listener's endpoints (of type E, which may carry more than an Endpoint), matched by method and path. */
export class EndpointTable<C, E extends Endpoint<C> = Endpoint<C>> {
  readonly #exact = new Map<string, PathEntry<C, E>>();
  readonly #prefixes: Array<{ readonly prefix: string; readonly entry: PathEntry<C, E> }> = [];

  constructor(endpoints: readonly E[]) {
    const entries = new Map<string, PathEntry<C, E>>();
    for (const e of endpoints) {
      const entry = entries.get(e.path);
      if (entry === undefined) entries.set(e.path, { endpoints: [e], found: new Map(), notAllowed: NOT_FOUND });
      else entry.endpoints.push(e);
    }
    for (const [path, entry] of entries) {
      entry.found = new Map(
        entry.endpoints.map((endpoint) => [endpoint.method, Object.freeze({ kind: 'found' as const, endpoint, rest: '' })]),
      );
      entry.notAllowed = Object.freeze({ kind: 'method_not_allowed', allow: entry.endpoints.map((e) => e.method).join(', ') });
      if (path.endsWith('/*')) this.#prefixes.push({ prefix: path.slice(0, -1), entry });
      else this.#exact.set(path, entry);
    }
  }

  match(method: string | undefined, path: string): Match<C, E> {
    const exact = this.#exact.get(path);
    if (exact !== undefined) return exact.found.get(method ?? '') ?? exact.notAllowed;
    for (const { prefix, entry } of this.#prefixes) {
      if (path.length <= prefix.length || !path.startsWith(prefix)) continue;
      const found = entry.found.get(method ?? '');
      if (found === undefined) return entry.notAllowed;
      return { kind: 'found', endpoint: found.endpoint, rest: path.slice(prefix.length) };
    }
    return NOT_FOUND;
  }
}
