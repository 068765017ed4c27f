import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { SwitchyardError } from '../errors.js';

// The status page's files: plain HTML, CSS and a few script modules, shipped in the package under
// static/status-page/ (package.json "files") and served by the admin listener as they are,
// with no build step. This module sits at the same depth in src/ and in dist/, so one
// relative URL finds them from either. They are read once, when the admin listener starts.

const DIR = fileURLToPath(new URL('../../static/status-page/', import.meta.url));

const FILES = {
  'index.html': 'text/html; charset=utf-8',
  'status.css': 'text/css; charset=utf-8',
  'status.js': 'text/javascript; charset=utf-8',
  'page.js': 'text/javascript; charset=utf-8',
  'topology.js': 'text/javascript; charset=utf-8',
  'topology-writes.js': 'text/javascript; charset=utf-8',
  'provider-form.js': 'text/javascript; charset=utf-8',
  'route-form.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
} as const;

type FileName = keyof typeof FILES;

/**
 * The page loads only its own files and talks only to this listener; it is never framed,
 * and it sends no referrer (the admin URL may be private).
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export class StatusPageFiles {
  readonly #bodies = new Map<string, Buffer>();
  /** Why the files could not be read (a broken install), or null. */
  readonly problem: string | null = null;

  constructor(dir = DIR) {
    try {
      for (const name of Object.keys(FILES)) this.#bodies.set(name, readFileSync(`${dir}${name}`));
    } catch (err) {
      this.#bodies.clear();
      this.problem = `status page files not readable in ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    }
  }

  /** Sends one of the page's files; any other name is a 404 like any unknown path. */
  send(res: ServerResponse, name: string): void {
    const body = this.#bodies.get(name);
    if (body === undefined) {
      if (this.problem !== null && name in FILES) throw new SwitchyardError('not_found', this.problem);
      throw new SwitchyardError('not_found', `no such endpoint: GET /status-page/${name}`);
    }
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': FILES[name as FileName], 'content-length': body.length });
    res.end(body);
  }
}
