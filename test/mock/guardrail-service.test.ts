import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type MockGuardrailService, startMockGuardrailService } from '../../src/mock/index.js';

// The mock guardrail service itself: its default rule, its control API (what a test in
// another process drives it with), its path table, a held answer ended by close, and the
// CLI that runs it alone.

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');

let mock: MockGuardrailService;

before(async () => {
  mock = await startMockGuardrailService({ behavior: { mode: 'rule', word: 'secret' } });
});
after(() => mock.close());
beforeEach(async () => {
  await post('/__mock/reset', {});
});

async function post(path: string, body: unknown, base = mock.url): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

describe('mock guardrail service', () => {
  it('by its rule blocks the trigger word, masks the mask word, and allows the rest, in both APIs', async () => {
    const nemo = (content: string) => post('/v1/guardrail/checks', { messages: [{ role: 'user', content }] });
    const webhook = (text: string) => post('/check', { phase: 'input', texts: [text] });
    assert.deepEqual((await nemo('hello')).json, { status: 'success', rails_status: { 'mock check': { status: 'success' } } });
    assert.deepEqual((await webhook('hello')).json, { action: 'allow' });
    assert.deepEqual((await nemo('a forbidden secret')).json, {
      status: 'blocked',
      rails_status: { 'mock check': { status: 'success' }, forbidden: { status: 'blocked' } },
    });
    assert.deepEqual((await webhook('a forbidden secret')).json, { action: 'block', categories: ['forbidden'] });
    assert.deepEqual((await nemo('my secret')).json, {
      status: 'modified',
      rails_status: { 'mock check': { status: 'success' }, masked: { status: 'modified' } },
      messages: [{ role: 'user', content: 'my [MASKED]' }],
    });
    assert.deepEqual((await webhook('my secret')).json, { action: 'mask', texts: ['my [MASKED]'], categories: ['masked'] });
  });

  it('records each check, readable over HTTP, and forgets them on reset', async () => {
    await fetch(`${mock.url}/check`, { method: 'POST', headers: { authorization: 'Bearer t' }, body: '{"texts":["hi"]}' });
    assert.equal(mock.received.length, 1);
    const listed = (await (await fetch(`${mock.url}/__mock/received`)).json()) as { received: typeof mock.received };
    assert.equal(listed.received[0]?.api, 'webhook');
    assert.equal(listed.received[0]?.headers.authorization, 'Bearer t');
    assert.deepEqual(listed.received[0]?.body, { texts: ['hi'] });
    await post('/__mock/reset', {});
    assert.equal(mock.received.length, 0);
  });

  it('refuses a behaviour it does not know, naming why, and keeps the one it had', async () => {
    for (const bad of [{ mode: 'explode' }, { mode: 'status', status: 99 }, { mode: 'block', categories: 'x' }, []]) {
      const r = await post('/__mock/behavior', bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
    }
    assert.deepEqual((await post('/check', { texts: ['hello'] })).json, { action: 'allow' });
  });

  it('answers 400 to a check of the wrong shape, 404 to an unknown path, 405 with Allow to a wrong method', async () => {
    assert.equal((await post('/check', { messages: [] })).status, 400);
    assert.equal((await post('/v1/guardrail/checks', { texts: ['x'] })).status, 400);
    assert.equal((await post('/nope', {})).status, 404);
    const res = await fetch(`${mock.url}/check`);
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    assert.equal(mock.received.length, 0);
  });

  it('ends an answer it holds when closed', { timeout: 15_000 }, async () => {
    const other = await startMockGuardrailService({ behavior: { mode: 'timeout', hold_ms: 600_000 } });
    const held = fetch(`${other.url}/check`, { method: 'POST', body: '{"texts":["x"]}' }).then(
      () => 'answered',
      () => 'cut',
    );
    while (other.received.length === 0) await new Promise((r) => setTimeout(r, 10));
    await other.close();
    assert.equal(await held, 'cut');
  });

  it('runs alone from the CLI, with its rule set by flags, and exits 0 on SIGTERM', { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, [CLI, 'mock-guardrail', '--port', '0', '--trigger', 'nope', '--mask-word', 'pin'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    try {
      const url = await new Promise<string>((res, rej) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m?.[1] !== undefined) res(m[1]);
        });
        void exited.then((code) => rej(new Error(`mock-guardrail exited (${code}) before listening:\n${out}`)));
      });
      assert.match(url, /^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
      assert.deepEqual((await post('/check', { texts: ['nope'] }, url)).json, { action: 'block', categories: ['forbidden'] });
      assert.deepEqual((await post('/check', { texts: ['my pin'] }, url)).json, {
        action: 'mask',
        texts: ['my [MASKED]'],
        categories: ['masked'],
      });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      clearTimeout(killer);
      assert.equal(code, 0, 'mock-guardrail did not exit 0 on SIGTERM');
    }
  });
});
