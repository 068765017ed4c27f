import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { csvHeader, type TextColumn, type TextFormat } from '../database/index.js';

// A usage page on the wire, written as its rows are read: JSON (`{"rows":[…],"next":…}`) or
// CSV (RFC 4180, the next cursor in a header). The rows come already rendered, batch by
// batch (on the read worker, for SQLite); each batch is written on its own, then the loop is
// given back (or the socket drained), so a page of ten thousand rows never holds the event
// loop, nor the whole answer in memory.

/** The response header that carries a CSV page's next cursor. */
export const NEXT_HEADER = 'x-switchyard-next';

export async function sendPage(
  res: ServerResponse,
  format: TextFormat,
  columns: readonly TextColumn[],
  batches: AsyncIterable<string>,
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
    if (!(await write(res, csv ? csvHeader(columns) : '{"rows":['))) return;
    for await (const batch of batches) {
      if (batch === '') continue;
      // JSON batches are objects joined by commas: one more comma joins two batches.
      const text = csv || first ? batch : `,${batch}`;
      first = false;
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
