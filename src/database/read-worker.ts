import { Worker } from 'node:worker_threads';
import type { ReadJob, ReadReply } from './read-worker-thread.js';
import type { TextColumn, TextFormat } from './usage-text.js';

// better-sqlite3 steps a statement on the thread that calls it: a ledger query over months
// of rollups would hold the gateway's event loop, and every request with it, for as long as
// it runs. The usage API's reads go to one worker thread with a read-only connection of its
// own instead; the rows come back in batches (or already rendered as text, so that the loop
// only writes them out), and the caller yields in between. Started at the first read, so a gateway nobody asks for usage never
// starts it.

/** Rows per message: small enough that handling one batch costs the loop well under a millisecond or two. */
export const READ_BATCH_ROWS = 500;

interface Pending {
  readonly batches: unknown[];
  done: boolean;
  error: Error | null;
  wake: (() => void) | null;
}

export class ReadWorker {
  readonly #path: string;
  #worker: Worker | null = null;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();

  constructor(path: string) {
    this.#path = path;
  }

  /** The rows of one compiled SELECT, batch by batch. */
  rows(sql: string, parameters: readonly unknown[]): AsyncGenerator<readonly Record<string, unknown>[]> {
    return this.#read({ sql, parameters });
  }

  /** The rows of one compiled SELECT rendered by `renderRows`, batch by batch. */
  text(sql: string, parameters: readonly unknown[], columns: readonly TextColumn[], format: TextFormat): AsyncGenerator<string> {
    return this.#read({ sql, parameters, render: { columns, format } });
  }

  async *#read<T>(job: Omit<ReadJob, 'id' | 'batchRows'>): AsyncGenerator<T> {
    const id = this.#nextId++;
    const pending: Pending = { batches: [], done: false, error: null, wake: null };
    this.#pending.set(id, pending);
    try {
      this.#start().postMessage({ ...job, id, batchRows: READ_BATCH_ROWS } satisfies ReadJob);
      for (;;) {
        if (pending.batches.length > 0) {
          yield pending.batches.shift() as T;
          continue;
        }
        if (pending.done) return;
        if (pending.error !== null) throw pending.error;
        await new Promise<void>((resolve) => {
          pending.wake = resolve;
        });
        pending.wake = null;
      }
    } finally {
      // A caller that stops early (the client went away) leaves the rest of its rows to be dropped on arrival.
      this.#pending.delete(id);
    }
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    if (worker !== null) await worker.terminate();
  }

  #start(): Worker {
    if (this.#worker !== null) return this.#worker;
    const worker = threadOf(this.#path);
    // The gateway's exit waits for its listeners and the ledger, never for an idle reader.
    worker.unref();
    worker.on('message', (reply: ReadReply) => {
      const pending = this.#pending.get(reply.id);
      if (pending === undefined) return;
      if ('batch' in reply) pending.batches.push(reply.batch);
      else if ('done' in reply) pending.done = true;
      else pending.error = Object.assign(new Error(reply.error.message), reply.error.code === undefined ? {} : { code: reply.error.code });
      pending.wake?.();
    });
    const fail = (err: Error): void => {
      // The thread is gone (it could not open the file, or it crashed): every read in flight fails, the next one starts a new thread.
      if (this.#worker === worker) this.#worker = null;
      for (const pending of this.#pending.values()) {
        if (pending.done) continue;
        pending.error ??= err;
        pending.wake?.();
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the usage read worker stopped (exit code ${code})`)));
    this.#worker = worker;
    return worker;
  }
}

/**
 * The thread, from the built JavaScript. Under tsx (the tests, the bench) this module is
 * TypeScript and so is the thread's; a worker does not inherit tsx's loader, so the thread
 * is loaded through tsx's API.
 */
function threadOf(path: string): Worker {
  const options = { workerData: { path } };
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./read-worker-thread.js', import.meta.url), options);
  const thread = new URL('./read-worker-thread.ts', import.meta.url).href;
  const load = `import('tsx/esm/api').then((tsx) => tsx.tsImport(${JSON.stringify(thread)}, ${JSON.stringify(import.meta.url)}))`;
  return new Worker(load, { ...options, eval: true });
}
