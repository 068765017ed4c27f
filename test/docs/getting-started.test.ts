import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { test } from 'node:test';

// docs/getting-started.md, run as written. Every ```sh block after the install step runs, in
// order, in one `sh -eu` (the page tells the reader to use one shell: later steps use the
// process ids earlier ones kept), in a fresh directory whose `dist` is this tree's build. A
// ```text block after a ```sh block is that block's expected output: each of its lines must
// match a line the block printed, `…` matching anything. The script runs in a process group of
// its own; the page's last step stops what it started, and the test checks that nothing of the
// group is left, then kills the group whatever happened.

const ROOT = resolve(import.meta.dirname, '../..');
const DOC = 'docs/getting-started.md';
const NOT_RUN = /<!--\s*getting-started:\s*not run\b/;
/** The ports the page uses: loopback only, none of the demo's. */
const PORTS = [8180, 9190, 9101, 9102];
const SCRIPT_TIMEOUT_MS = 120_000;

interface Step {
  readonly line: number;
  readonly command: string;
  readonly run: boolean;
  expected: string[] | null;
}

function steps(text: string): Step[] {
  const lines = text.split('\n');
  const found: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i] as string);
    if (open === null) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    assert.ok(end > i, `${DOC}:${i + 1}: a code block is never closed`);
    const body = lines.slice(i + 1, end);
    if (open[1] === 'sh') {
      const before = lines.slice(0, i).filter((l) => l.trim() !== '');
      found.push({ line: i + 1, command: body.join('\n'), run: !NOT_RUN.test(before.at(-1) ?? ''), expected: null });
    } else if (open[1] === 'text') {
      const owner = found.at(-1);
      assert.ok(owner !== undefined && owner.expected === null, `${DOC}:${i + 1}: an output block follows no command block of its own`);
      owner.expected = body;
    }
    i = end;
  }
  return found;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const server = createServer();
    server.once('error', () => res(false));
    server.listen(port, '127.0.0.1', () => server.close(() => res(true)));
  });
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

function matches(expected: string, actual: readonly string[]): boolean {
  const pattern = new RegExp(`^${expected.split('…').map(escapeRegExp).join('.*')}$`);
  return actual.some((line) => pattern.test(line));
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const all = steps(readFileSync(resolve(ROOT, DOC), 'utf8'));

test('only the install step is left out, and it is the first', () => {
  const skipped = all.filter((s) => !s.run);
  assert.equal(skipped.length, 1, `${DOC}: expected exactly one block marked "not run"`);
  assert.equal(skipped[0], all[0]);
  assert.match(skipped[0]?.command ?? '', /^npm ci$/m);
  assert.ok(all.filter((s) => s.run).length >= 8, `${DOC}: too few command blocks found`);
});

test('getting-started.md runs as written, from the first request to a live route switch, and leaves nothing running', async (t) => {
  const busy: number[] = [];
  for (const port of PORTS) if (!(await portFree(port))) busy.push(port);
  if (busy.length > 0) {
    t.skip(`the page's ports are in use here: ${busy.join(', ')}`);
    return;
  }
  assert.ok(existsSync(join(ROOT, 'dist/cli.js')), 'dist/cli.js is missing: npm run build first (npm test does)');

  const run = all.filter((s) => s.run);
  // Each marker starts on a line of its own, even after output with no final newline.
  const marker = (i: number): string => `printf '\\n@@step ${i}@@\\n'`;
  const script = ['set -eu', ...run.flatMap((s, i) => [marker(i), s.command]), marker(run.length)].join('\n');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-getting-started-'));
  symlinkSync(join(ROOT, 'dist'), join(dir, 'dist'));
  const child = spawn('sh', ['-c', script], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` },
  });
  const pgid = child.pid as number;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((res) => child.once('close', (code) => res(code)));
  // Background processes share the script's stderr, so 'close' waits for them too.
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  }, SCRIPT_TIMEOUT_MS);
  try {
    const code = await exited;
    const log = () => `stdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}`;
    const reached = [...stdout.matchAll(/^@@step (\d+)@@$/gm)].length - 1;
    assert.ok(!timedOut, `the page's commands, or what they left running, outlived ${SCRIPT_TIMEOUT_MS} ms\n${log()}`);
    assert.equal(code, 0, `the page's commands failed in the block at ${DOC}:${run[reached]?.line ?? '?'}\n${log()}`);

    const outputs = stdout.split(/^@@step \d+@@\n/m).slice(1);
    for (const [i, s] of run.entries()) {
      if (s.expected === null) continue;
      const actual = (outputs[i] ?? '').replace(/\r/g, '').split('\n');
      for (const line of s.expected)
        assert.ok(matches(line, actual), `${DOC}:${s.line}: no output line matches\n  ${line}\ngot:\n${actual.join('\n')}`);
    }
    assert.ok(await waitUntil(() => !groupAlive(pgid), 10_000), `the page's last step left processes running\n${log()}`);
  } finally {
    clearTimeout(timer);
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
