import { parentPort, workerData } from 'node:worker_threads';
import { loadConfigFile } from './load.js';

// The config read and parsed on a worker thread (see loadConfigFileOffThread): yaml takes
// seconds for a config of hundreds of thousands of keys, and the event loop that serves
// traffic must not wait for it. The result is plain data, cloned back to the caller.

const { path, env, maxBytes } = workerData as { path: string; env: NodeJS.ProcessEnv; maxBytes: number };
parentPort?.postMessage(loadConfigFile(path, env, maxBytes));
