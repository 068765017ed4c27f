import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { renderRows, type TextColumn, type TextFormat } from './usage-text.js';

// The thread behind ReadWorker: its own read-only connection to the SQLite file (WAL lets it
// read while the gateway's connection writes), running one compiled statement at a time and
// posting back, batch by batch as the statement steps, either the rows or (when asked) the
// rows already rendered as the usage API writes them.

export interface ReadJob {
  readonly id: number;
  readonly sql: string;
  readonly parameters: readonly unknown[];
  readonly batchRows: number;
  readonly render?: { readonly columns: readonly TextColumn[]; readonly format: TextFormat };
}

export type ReadReply =
  | { readonly id: number; readonly batch: unknown }
  | { readonly id: number; readonly done: true }
  | { readonly id: number; readonly error: { readonly message: string; readonly code?: string } };

const port = parentPort;
if (port === null) throw new Error('read-worker-thread runs as a worker thread');
const file = new BetterSqlite3((workerData as { path: string }).path, { readonly: true, fileMustExist: true });
// A writer's checkpoint may hold the file for a moment; a read waits for it here, off the request path.
file.pragma('busy_timeout = 5000');

port.on('message', (job: ReadJob) => {
  const render = job.render;
  const post = (rows: Record<string, unknown>[]): void => {
    const batch = render === undefined ? rows : renderRows(rows, render.columns, render.format);
    port.postMessage({ id: job.id, batch } satisfies ReadReply);
  };
  try {
    const statement = file.prepare(job.sql);
    if (!statement.reader) throw new Error('the read worker runs queries that return rows only');
    let rows: Record<string, unknown>[] = [];
    for (const row of statement.iterate(...job.parameters)) {
      rows.push(row as Record<string, unknown>);
      if (rows.length >= job.batchRows) {
        post(rows);
        rows = [];
      }
    }
    if (rows.length > 0) post(rows);
    port.postMessage({ id: job.id, done: true } satisfies ReadReply);
  } catch (err) {
    const { message, code } = err as { message: string; code?: unknown };
    port.postMessage({ id: job.id, error: typeof code === 'string' ? { message, code } : { message } } satisfies ReadReply);
  }
});
