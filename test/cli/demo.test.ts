import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { test } from 'node:test';
import OpenAI from 'openai';
import { tally, waitUntil } from '../support/observe.js';

// What `npm start` runs: `switchyard demo`, on its fixed ports, with its example config.
// The demo's ports are part of its promise (the printed curl commands use them), so the
// test skips rather than fails when another program holds one of them.

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const PORTS = [8080, 9090, 9001, 9002, 9003, 9004];

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const server = createServer();
    server.once('error', () => res(false));
    server.listen(port, '127.0.0.1', () => server.close(() => res(true)));
  });
}

test('the demo serves round-robin over its three mocks, prints how to use it, and stops on SIGINT', async (t) => {
  const busy: number[] = [];
  for (const port of PORTS) if (!(await portFree(port))) busy.push(port);
  if (busy.length > 0) {
    t.skip(`the demo's fixed ports are in use here: ${busy.join(', ')}`);
    return;
  }
  const child = spawn(process.execPath, [CLI, 'demo'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  try {
    await waitUntil(() => output.includes('Switchyard demo'), 'the demo printed its banner', 15_000);
    assert.match(output, /curl -s http:\/\/127\.0\.0\.1:8080\/v1\/chat\/completions/);
    assert.match(output, /new OpenAI\(\{ baseURL: 'http:\/\/127\.0\.0\.1:8080\/v1'/);
    // The snippet uses top-level await and import, which plain node runs only from a .mjs file.
    assert.match(output, /save as demo\.mjs, run node demo\.mjs/);
    assert.ok(output.includes(`kill -HUP ${child.pid}`), `the reload hint names the gateway's pid ${child.pid}:\n${output}`);

    const client = new OpenAI({ baseURL: 'http://127.0.0.1:8080/v1', apiKey: 'unused', maxRetries: 0 });
    const providers: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { response } = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      providers.push(response.headers.get('x-switchyard-provider') ?? '(none)');
    }
    assert.deepEqual(tally(providers), { east: 2, west: 2, central: 2 });
    const status = (await (await fetch('http://127.0.0.1:9090/admin/status')).json()) as { generation: { number: number } };
    assert.equal(status.generation.number, 1);

    // The MCP server's tools are served at /mcp, with the printed commands.
    assert.match(output, /curl -s -D - http:\/\/127\.0\.0\.1:8080\/mcp/);
    const mcp = (body: object, session?: string) =>
      fetch('http://127.0.0.1:8080/mcp', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(session ? { 'mcp-session-id': session } : {}),
        },
        body: JSON.stringify(body),
      });
    const init = await mcp({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const session = init.headers.get('mcp-session-id') ?? '';
    assert.notEqual(session, '');
    let echoed = '';
    await waitUntil(
      async () => {
        const call = (await (
          await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } }, session)
        ).json()) as {
          result?: { content: Array<{ text: string }> };
        };
        echoed = call.result?.content[0]?.text ?? '';
        return echoed !== '';
      },
      'the MCP server s tools are listed',
      10_000,
    );
    assert.equal(echoed, '[tools] hi');

    // The printed pid is the one that reloads: SIGHUP to it builds generation 2.
    process.kill(child.pid!, 'SIGHUP');
    await waitUntil(
      async () =>
        ((await (await fetch('http://127.0.0.1:9090/admin/status')).json()) as { generation: { number: number } }).generation.number === 2,
      'SIGHUP to the printed pid reloaded',
      10_000,
    );
  } finally {
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const code = await exited;
    clearTimeout(timer);
    assert.equal(code, 0, `the demo exits 0 on SIGINT:\n${output.slice(-2000)}`);
  }
});
