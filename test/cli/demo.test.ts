import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { test } from 'node:test';
import OpenAI from 'openai';
import { tally, waitUntil } from '../support/observe.js';

// What `npm start` runs: `switchyard demo`, on its default ports, with its example config.
// The demo's ports are part of its promise (the printed curl commands use them), so the
// first test skips rather than fails when another program holds one of them; the others
// choose ports with --port, as a user whose 8080 is taken does.

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

/** A base N with N to N+5 all free on 127.0.0.1 (the demo's --port takes six). */
async function freeBase(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    let free = true;
    for (let p = base; p < base + 6 && free; p++) free = await portFree(p);
    if (free) return base;
  }
  throw new Error('no six free ports in a row were found');
}

test('npm start -- --port N runs the demo on N, admin on N+1, the mocks from N+2, and prints only those ports', async () => {
  const n = await freeBase();
  const ours = new Set([n, n + 1, n + 2, n + 3, n + 4, n + 5].map(String));
  // --ignore-scripts skips prestart's build (the tests build first); the start script itself runs.
  const child = spawn('npm', ['start', '--ignore-scripts', '--silent', '--', '--port', String(n)], {
    cwd: resolve(import.meta.dirname, '../..'),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  try {
    await waitUntil(() => output.includes('Switchyard demo'), `the demo printed its banner:\n${output}`, 30_000);
    await waitUntil(() => output.includes('console.log('), 'the demo printed all of its text', 5_000);
    const text = output.slice(output.indexOf('Switchyard demo'));
    assert.ok(text.includes(`gateway on http://127.0.0.1:${n}, admin on http://127.0.0.1:${n + 1}`), text);
    assert.ok(text.includes(`east :${n + 2}, west :${n + 3}, central :${n + 4}; MCP server tools :${n + 5}`), text);
    assert.ok(text.includes(`new OpenAI({ baseURL: 'http://127.0.0.1:${n}/v1'`), text);
    const printed = [...text.matchAll(/127\.0\.0\.1:(\d+)/g)].map((m) => m[1] as string);
    assert.ok(printed.length > 10);
    assert.deepEqual(
      printed.filter((p) => !ours.has(p)),
      [],
      'every printed address uses the chosen ports',
    );

    const client = new OpenAI({ baseURL: `http://127.0.0.1:${n}/v1`, apiKey: 'unused', maxRetries: 0 });
    const providers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { response } = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      providers.push(response.headers.get('x-switchyard-provider') ?? '(none)');
    }
    assert.deepEqual(tally(providers), { east: 1, west: 1, central: 1 });
    // The printed fault command reaches east on N+2: gpt-4o then fails over to west.
    const fault = await fetch(`http://127.0.0.1:${n + 2}/__mock/faults`, {
      method: 'POST',
      body: JSON.stringify({ mode: 'status', status: 500, count: 1 }),
    });
    assert.equal(fault.ok, true);
    const { response } = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(response.headers.get('x-switchyard-provider'), 'west');
    const status = (await (await fetch(`http://127.0.0.1:${n + 1}/admin/status`)).json()) as { generation: { number: number } };
    assert.equal(status.generation.number, 1);
  } finally {
    // npm's process group: npm, its shell and the demo.
    if (child.exitCode === null) process.kill(-(child.pid as number), 'SIGINT');
    const timer = setTimeout(() => process.kill(-(child.pid as number), 'SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
  const config = /^Config: (.+)$/m.exec(output)?.[1] ?? '';
  assert.match(config, /switchyard-demo-.*demo\.yaml$/);
  assert.equal(existsSync(config), false, 'the written config is removed when the demo stops');
});

test('a demo whose gateway port is taken says so first, names the address, tells of --port, and exits 1', async () => {
  const n = await freeBase();
  const holder = createServer();
  await new Promise<void>((res) => holder.listen(n, '127.0.0.1', res));
  try {
    const child = spawn(process.execPath, [CLI, 'demo', '--port', String(n)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((res) => child.once('exit', (c) => res(c)));
    clearTimeout(timer);
    assert.equal(code, 1, `${stdout}${stderr}`);
    assert.equal(stdout, '', 'nothing is announced before the failure');
    const lines = stderr.split('\n');
    assert.match(lines[0] ?? '', /^switchyard: cannot start with .*demo\.yaml:$/);
    assert.equal(
      lines[1],
      `  server.listen: cannot listen on 127.0.0.1:${n}: the address is already in use by another process (EADDRINUSE)`,
    );
    assert.match(lines[2] ?? '', /choose others with --port N \(switchyard demo --port N, or npm start -- --port N\)/);
    // The mocks it had started were closed: their ports are free again.
    assert.equal(await portFree(n + 2), true);
  } finally {
    holder.close();
  }
});
