import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

// A private redis-server on a spare loopback port, for tests that stop Redis mid-run:
// never the shared one at 6379.

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  for (let i = 0; i < 100 && !out.includes('Ready to accept connections'); i += 1) {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!out.includes('Ready to accept connections')) throw new Error(`redis-server did not start: ${out}`);
  return child;
}

export async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

/** Deletes every key under `prefix` at `url` (a test's own keys on the shared Redis), in SCAN pages. */
export async function deleteKeysWithPrefix(url: string, prefix: string): Promise<void> {
  const admin = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    for (let round = 0; round < 10_000; round += 1) {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await admin.del(...keys);
      cursor = next;
      if (cursor === '0') break;
    }
  } finally {
    admin.disconnect();
  }
}
