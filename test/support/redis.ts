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

export interface RedisOptions {
  /** More redis-server arguments after the defaults, e.g. `--requirepass PW` or `--user NAME on >PW ~prefix* +@all`. */
  readonly args?: readonly string[];
  /** Listen with TLS only, on `port` (the plain port is then off). Files are PEM paths. */
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca: string; readonly authClients: boolean };
}

export async function startRedis(port: number, options: RedisOptions = {}): Promise<ChildProcess> {
  const tls = options.tls;
  const listen =
    tls === undefined
      ? ['--port', String(port)]
      : [
          '--port',
          '0',
          '--tls-port',
          String(port),
          '--tls-cert-file',
          tls.cert,
          '--tls-key-file',
          tls.key,
          '--tls-ca-cert-file',
          tls.ca,
          '--tls-auth-clients',
          tls.authClients ? 'yes' : 'no',
        ];
  const child = spawn('redis-server', [...listen, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...(options.args ?? [])], {
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
