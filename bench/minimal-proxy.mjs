// The floor a Node proxy stands on: node:http in front, an undici Pool behind, the request
// body buffered and relayed, the response body buffered and relayed, nothing else (no
// routing, no metrics, no logs). `npm run bench` measures the gateway against it in the
// same run, so "gateway / minimal proxy" says what the gateway's own work costs.
// Plain JavaScript on purpose: no loader, no build step between it and the measurement.
//
// `--wire JSON` makes it send the headers the gateway sends, and nothing more: the bench
// reads them off a gateway's response and off the request the mock received from it, as
// `{"upstream": [[name, value], …], "response": [[name, value], …]}`, where a null value is
// this request's id (a fresh UUID, the same on both hops, as the gateway does). On a machine
// where the client and the upstream share the cores with the proxy, every header costs them
// too; this second proxy lets the bench tell that cost from the gateway's own (ADR 0024).
//
//   node bench/minimal-proxy.mjs --upstream http://127.0.0.1:9001/v1 [--port N] [--wire JSON]
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values } = parseArgs({
  options: { upstream: { type: 'string' }, port: { type: 'string', default: '0' }, wire: { type: 'string' } },
});
if (values.upstream === undefined) {
  process.stderr.write('minimal-proxy: --upstream URL is required\n');
  process.exit(2);
}
const upstream = new URL(values.upstream);
const basePath = upstream.pathname.replace(/\/+$/, '');
const pool = new Pool(upstream.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
const wire = values.wire === undefined ? null : readWire(values.wire);

function readWire(text) {
  const parsed = JSON.parse(text);
  const pairs = (list, where) => {
    if (!Array.isArray(list)) throw new Error(`--wire: ${where} must be a list of [name, value] pairs`);
    return list.map(([name, value]) => [String(name), value === null ? null : String(value)]);
  };
  return { upstream: pairs(parsed.upstream ?? [], 'upstream'), response: pairs(parsed.response ?? [], 'response') };
}

/** The bare proxy: node:http in front, an undici pool behind, the body buffered and relayed, nothing else. */
function bare(req, res) {
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
}

/** The bare proxy, sending the gateway's headers on both hops. */
function sameWire(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    try {
      const id = randomUUID();
      const path = basePath + (req.url ?? '/').replace(/^\/v1/, '');
      const headers = { 'content-type': 'application/json' };
      for (const [name, value] of wire.upstream) headers[name] = value ?? id;
      const { statusCode, body } = await pool.request({ path, method: req.method ?? 'POST', headers, body: Buffer.concat(chunks) });
      const buffered = Buffer.from(await body.arrayBuffer());
      const out = ['content-type', 'application/json'];
      for (const [name, value] of wire.response) out.push(name, value ?? id);
      out.push('content-length', String(buffered.length));
      res.writeHead(statusCode, out);
      res.end(buffered);
    } catch (err) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    }
  });
}

const server = createServer({ keepAliveTimeout: 65_000 }, wire === null ? bare : sameWire);

server.listen(Number(values.port), '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`minimal proxy listening on http://127.0.0.1:${port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  void pool.close().finally(() => process.exit(0));
  server.closeAllConnections();
});
