import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';

// The thread behind ReadWorker: its own read-only connection to the SQLite file (WAL lets it
// read while the gateway's connection writes), running one compiled statement at a time and
// posting its rows back in batches as they are stepped.

export interface ReadJob {
  readonly id: number;
  readonly sql: string;
  readonly parameters: readonly unknown[];
  readonly batchRows: number;
}

export type ReadReply =
  | { readonly id: number; readonly rows: readonly unknown[] }
  | { readonly id: number; readonly done: true }
  | { readonly id: number; readonly error: { readonly message: string; readonly code?: string } };

const port = parentPort;
if (port === null) throw new Error('read-worker-thread runs as a worker thread');
const file = new BetterSqlite3((workerData as { path: string }).path, { readonly: true, fileMustExist: true });
// A writer's checkpoint may hold the file for a moment; a read waits for it here, off the request path.
file.pragma('busy_timeout = 5000');

port.on('message', (job: ReadJob) => {
  try {
    const statement = file.prepare(job.sql);
    if (!statement.reader) throw new Error('the read worker runs queries that return rows only');
    let batch: unknown[] = [];
    for (const row of statement.iterate(...job.parameters)) {
      batch.push(row);
      if (batch.length >= job.batchRows) {
        port.postMessage({ id: job.id, rows: batch } satisfies ReadReply);
        batch = [];
      }
    }
    if (batch.length > 0) port.postMessage({ id: job.id, rows: batch } satisfies ReadReply);
    port.postMessage({ id: job.id, done: true } satisfies ReadReply);
  } catch (err) {
    const { message, code } = err as { message: string; code?: unknown };
    port.postMessage({ id: job.id, error: typeof code === 'string' ? { message, code } : { message } } satisfies ReadReply);
  }
});
