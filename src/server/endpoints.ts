import type { IncomingMessage } from 'node:http';

// A listener's endpoints as a table of method + path -> handler. Matching gives the
// endpoint, or the methods the path does accept (405 with Allow), or nothing (404); the
// listener sends both refusals through the same error path as every other error.

export type Method = 'GET' | 'POST' | 'DELETE';

/**
 * What a handler returns when it answers the request itself, later, on callbacks rather
 * than a promise: it then calls the Exchange's done() (after answering any error) when
 * its part is over.
 */
export const ANSWERS_LATER: unique symbol = Symbol('answers later');

export interface Endpoint<C> {
  readonly method: Method;
  /** An exact path, or a prefix when it ends in `/*` (the rest is the endpoint's argument). */
  readonly path: string;
  readonly handle: (ctx: C, rest: string) => void | Promise<void> | typeof ANSWERS_LATER;
  /** Probes and scrapes are not requests worth a record (metrics, access line). Default true. */
  readonly recorded?: boolean;
  /** Admin endpoints: whether the admin token is required (when one is set). Default true. */
  readonly authenticated?: boolean;
}

export type Match<C> =
  | { readonly kind: 'found'; readonly endpoint: Endpoint<C>; readonly rest: string }
  | { readonly kind: 'method_not_allowed'; readonly allow: string }
  | { readonly kind: 'not_found' };

const NOT_FOUND = Object.freeze({ kind: 'not_found' as const });

/** The endpoints of one path, with every answer built once. */
interface PathEntry<C> {
  readonly endpoints: Endpoint<C>[];
  found: Map<string, Match<C> & { readonly kind: 'found' }>;
  notAllowed: Match<C>;
}

export class EndpointTable<C> {
  readonly #exact = new Map<string, PathEntry<C>>();
  readonly #prefixes: Array<{ readonly prefix: string; readonly entry: PathEntry<C> }> = [];

  constructor(endpoints: readonly Endpoint<C>[]) {
    const entries = new Map<string, PathEntry<C>>();
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

  match(method: string | undefined, path: string): Match<C> {
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

/** The request's path, without the query string. */
export function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
