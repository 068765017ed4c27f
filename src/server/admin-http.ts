import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchyardError } from '../errors.js';
import type { Keyring } from '../live/index.js';
import type { Applied } from '../managed/index.js';
import { readBody } from '../request/index.js';

// The /admin/v1/ wire: a request's JSON body, its If-Match and its page; an answer as JSON
// (never cached), an object with its ETag, a page of a list, and a write's reload headers.

export const MAX_BODY_BYTES = 64 * 1024;
const DEFAULT_PAGE = 100;
const MAX_PAGE = 500;

export async function jsonBody(req: IncomingMessage, emptyIsObject = false): Promise<Record<string, unknown>> {
  const bytes = await readBody(req, MAX_BODY_BYTES);
  if (bytes.length === 0 && emptyIsObject) return {};
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new SwitchyardError('invalid_json', 'the body is not JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new SwitchyardError('invalid_request', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** `If-Match: "7"` -> 7; absent or `*` -> null (the write is unconditional). */
export function ifMatch(req: IncomingMessage): number | null {
  const header = req.headers['if-match'];
  if (header === undefined || header.trim() === '*') return null;
  const m = /^\s*(?:W\/)?"(\d{1,15})"\s*$/.exec(header);
  // An ETag this API never gave (a config object's, or garbage) matches no version.
  return m === null ? -1 : Number(m[1]);
}

export const tagOf = (version: number): string => `"${version}"`;
export const configTag = (keyring: Keyring): string => `"config-${keyring.sourceHash.slice(0, 16)}"`;

export function pageOf(req: IncomingMessage): { limit: number; after: string | undefined } {
  const url = new URL(req.url ?? '/', 'http://admin');
  const raw = url.searchParams.get('limit');
  const limit = raw === null ? DEFAULT_PAGE : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new SwitchyardError('invalid_request', `limit must be a whole number 1-${MAX_PAGE}`, 'limit');
  }
  const after = url.searchParams.get('after') ?? undefined;
  return { limit, after };
}

/** One page of a list merged from the config file and the database, by id; `next` is the cursor of the page after. */
export function sendPage(res: ServerResponse, items: Array<{ id: string; view: Record<string, unknown> }>, limit: number): void {
  items.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const page = items.slice(0, limit);
  const next = items.length > limit ? (page[page.length - 1]?.id ?? null) : null;
  send(res, 200, { data: page.map((i) => i.view), next });
}

export function reloadHeaders(reload: Applied | null): Record<string, string> {
  if (reload === null) return {};
  // The generation is the routing one, unchanged by a key write; the keyring says when the write is live.
  return {
    'x-switchyard-reload': reload.result,
    'x-switchyard-generation': String(reload.generation),
    'x-switchyard-keyring': String(reload.keyring),
    ...(reload.topology === undefined ? {} : { 'x-switchyard-topology': reload.topology }),
  };
}

/** A write's answer (`reload` given, null when none ran) carries the warnings of the reload that applied it. */
export function sendObject(
  res: ServerResponse,
  status: number,
  view: Record<string, unknown>,
  etag: string,
  reload?: Applied | null,
): void {
  const body = reload === undefined ? view : { ...view, warnings: reload?.warnings ?? [] };
  send(res, status, body, { etag, ...reloadHeaders(reload ?? null) });
}

export function send(res: ServerResponse, status: number, value: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}
