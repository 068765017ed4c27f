// The floor a Node proxy stands on: node:http in front, an undici Pool behind, the request
// body buffered and relayed, the response body buffered and relayed, nothing else (no
// routing, no metrics, no logs). `npm run bench` measures the gateway against it in the
// same run, so "gateway / minimal proxy" says what the gateway's own work costs.
// Plain JavaScript on purpose: no loader, no build step between it and the measurement.
//
//   node bench/minimal-proxy.mjs --upstream http://127.0.0.1:9001/v1 [--port N]
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values } = parseArgs({ options: { upstream: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (values.upstream === undefined) {
  process.stderr.write('minimal-proxy: --upstream URL is required\n');
  process.exit(2);
}
const upstream = new URL(values.upstream);
const basePath = upstream.pathname.replace(/\/+$/, '');
const pool = new Pool(upstream.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    try {
      // The gateway's API path is /v1/chat/completions; the upstream's base URL ends in /v1.
      const path = basePath + (req.url ?? '/').replace(/^\/v1/, '');
      const { statusCode, body } = await pool.request({
        path,
        method: req.method ?? 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      });
      const buffered = Buffer.from(await body.arrayBuffer());
      res.writeHead(statusCode, { 'content-type': 'application/json', 'content-length': buffered.length });
      res.end(buffered);
    } catch (err) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    }
  });
});

server.listen(Number(values.port), '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`minimal proxy listening on http://127.0.0.1:${port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  void pool.close().finally(() => process.exit(0));
  server.closeAllConnections();
});
