import { parentPort, workerData } from 'node:worker_threads';
import { loadConfigFile, PIECE_VALUES } from './load.js';
import { splitIntoPieces } from './pieces.js';

// The config read and parsed on a worker thread (see loadConfigFileOffThread): yaml takes
// seconds for a config of hundreds of thousands of keys, and the event loop that serves
// traffic must not wait for it. The result is plain data, sent back in pieces, each one
// when the caller asks for it (pieces.ts).

const { path, env, maxBytes } = workerData as { path: string; env: NodeJS.ProcessEnv; maxBytes: number };
const pieces = splitIntoPieces(loadConfigFile(path, env, maxBytes) as unknown as Record<string, unknown>, PIECE_VALUES);
let next = 0;
const send = (): void => parentPort?.postMessage(next < pieces.length ? pieces[next++] : null);
parentPort?.on('message', send);
send();
