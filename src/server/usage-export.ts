import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

// A usage page on the wire, written as its rows are read: JSON (`{"rows":[…],"next":…}`) or
// CSV (RFC 4180, the next cursor in a header). Each batch is serialized and written on its
// own, then the loop is given back (or the socket drained), so a page of ten thousand rows
// never holds the event loop, nor the whole answer in memory.

export type ExportRow = Readonly<Record<string, string | number | boolean>>;

/** The response header that carries a CSV page's next cursor. */
export const NEXT_HEADER = 'x-switchyard-next';

export async function sendPage(
  res: ServerResponse,
  format: 'json' | 'csv',
  columns: readonly string[],
  rows: AsyncIterable<readonly ExportRow[]>,
  next: string | null,
): Promise<void> {
  const csv = format === 'csv';
  res.writeHead(200, {
    ...(csv && next !== null ? { [NEXT_HEADER]: next } : {}),
    'content-type': csv ? 'text/csv; charset=utf-8' : 'application/json',
    'cache-control': 'no-store',
  });
  let first = true;
  try {
    if (!(await write(res, csv ? `${columns.map(csvField).join(',')}\r\n` : '{"rows":['))) return;
    for await (const batch of rows) {
      if (batch.length === 0) continue;
      let text: string;
      if (csv) {
        text = batch.map((r) => `${columns.map((c) => csvField(r[c])).join(',')}\r\n`).join('');
      } else {
        text = `${first ? '' : ','}${batch.map((r) => JSON.stringify(r)).join(',')}`;
        first = false;
      }
      // The client went away: stop reading (the rest of the page is dropped as it arrives).
      if (!(await write(res, text))) return;
    }
    res.end(csv ? undefined : `],"next":${JSON.stringify(next)}}`);
  } catch {
    // The headers are sent: a failure mid-page can only cut the answer short, which a client
    // sees as a truncated body (no closing bracket, or a connection reset) rather than a page.
    res.destroy();
  }
}

/** Writes and then gives the loop back: waits for the socket to drain when it is full. False when the response is closed. */
async function write(res: ServerResponse, text: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false;
  if (res.write(text)) await yieldToLoop();
  else {
    const done = new AbortController();
    try {
      await Promise.race([once(res, 'drain', { signal: done.signal }), once(res, 'close', { signal: done.signal })]);
    } finally {
      done.abort();
    }
  }
  return !res.destroyed;
}

/**
 * RFC 4180 quoting, after OWASP's guard against formula injection: a text field that a
 * spreadsheet would read as a formula (it begins with =, +, -, @, a tab or a carriage
 * return) is prefixed with a single quote. Numbers are written as numbers.
 */
export function csvField(value: unknown): string {
  let text = String(value ?? '');
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
