// The grid loop's small HTTP surface: GET /metrics (Prometheus) and GET /status (JSON).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Grid } from './grid.js';

const routes: Record<string, (grid: Grid, res: ServerResponse) => Promise<void>> = {
  '/metrics': async (grid, res) => {
    const body = await grid.metrics.registry.metrics();
    res.writeHead(200, { 'content-type': grid.metrics.registry.contentType }).end(body);
  },
  '/status': async (grid, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(grid.status(), null, 2)}\n`);
  },
};

/** Listens on host:port (port 0 picks one); resolves with the server and its URL. */
export async function serveGrid(grid: Grid, host: string, port: number): Promise<{ server: Server; url: string }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://grid').pathname;
    const route = routes[path];
    if (route === undefined) return void reply(res, 404, 'not_found', `no endpoint ${path}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return void reply(res, 405, 'method_not_allowed', `${path} answers GET only`);
    }
    route(grid, res).catch((err: unknown) => reply(res, 500, 'internal_error', (err as Error).message));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { server, url: `http://${shown}:${address.port}` };
}

function reply(res: ServerResponse, status: number, code: string, message: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code, message } }));
}
