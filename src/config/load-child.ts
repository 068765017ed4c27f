import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { loadConfigFile, PIECE_VALUES } from './load.js';
import { splitIntoPieces } from './pieces.js';

// The config read and parsed in a child process (see loadConfigFileOffThread): yaml takes
// seconds for a config of hundreds of thousands of keys, and the process that serves
// traffic must not wait for it, nor share the CPU with it: every thread of this process,
// the garbage collector's included, runs at the lowest priority. The result is plain data,
// sent back in pieces, each one when the parent asks for it (pieces.ts).

lowerEveryThreadsPriority();
const [path, maxBytes] = [process.argv[2] as string, Number(process.argv[3])];
const pieces = splitIntoPieces(loadConfigFile(path, process.env, maxBytes) as unknown as Record<string, unknown>, PIECE_VALUES);
let next = 0;
const send = (): void => {
  process.send?.(next < pieces.length ? pieces[next++] : null);
};
process.on('message', send);
process.on('disconnect', () => process.exit(0));
send();

/**
 * Background work takes the CPU that serving leaves (traffic p99 during a reload of the
 * largest accepted config, ADR 0021). Linux schedules threads one by one, so each of this
 * process's threads is niced (V8's own threads exist before this runs; later ones inherit
 * the niceness).
 * Elsewhere, or when refused, the parse runs as it is.
 */
function lowerEveryThreadsPriority(): void {
  try {
    for (const tid of readdirSync('/proc/self/task')) setPriority(Number(tid), 19);
  } catch {
    // Not Linux, or not allowed: the parse keeps its priority.
  }
}
