import assert from 'node:assert/strict';
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { Gateway } from '../../src/server/index.js';
import { startGateway } from '../../src/server/index.js';
import { adminStatusBody } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { waitUntil } from '../support/observe.js';
import type { EnvelopeOptions } from '../support/overlay.js';
import { candidate, envelope, kubeletWrite } from '../support/overlay.js';
import { overlayConfig, reloadLines, revisionOf, waitForReload, waitForServing, writeByRename } from '../support/overlay-gateway.js';

// The overlay watcher seen from outside: the writers a control plane really uses (the
// kubelet's ..data symlink swap, temp file + rename, in-place truncate and write), the
// start-up race, a deleted and recreated directory, and start/stop cycles that must leave
// nothing behind. Outcomes are polled for (reload log lines, /admin/status, responses).

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');

let mocks: MockProvider[] = [];
let providers: Record<string, string>;
const tempDirs: string[] = [];

function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `switchyard-overlay-${label}-`));
  tempDirs.push(dir);
  return dir;
}

function render(candidates: unknown[], o: EnvelopeOptions = {}): { text: string; revision: string } {
  const env = envelope(candidates, o);
  return { text: JSON.stringify(env), revision: revisionOf(env) };
}

async function served(gw: { url: string }, model: string): Promise<{ revision: string | null; provider: string | null }> {
  const r = await postChat(gw.url, chatBody(model));
  assert.equal(r.status, 200, r.text);
  return { revision: r.headers.get('x-switchyard-revision'), provider: r.headers.get('x-switchyard-provider') };
}

before(async () => {
  mocks = await Promise.all(['east', 'west', 'central'].map((name) => startMockProvider({ name })));
  providers = { east: mocks[0]!.baseUrl, west: mocks[1]!.baseUrl, central: mocks[2]!.baseUrl };
});

after(async () => {
  await Promise.all(mocks.map((m) => m.close()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('overlay watcher lifecycle', () => {
  it('10 start/stop cycles of a gateway process in overlay mode each exit 0 after SIGTERM', async () => {
    const dir = tempDir('cycles');
    const file = join(dir, 'routing-overlay.json');
    const first = render([candidate('m', 'east')]);
    writeFileSync(file, first.text);
    for (let i = 0; i < 10; i++) {
      const gw = await startGatewayProcess(overlayConfig(providers, { file, reload: { debounce_ms: 50, recheck_ms: 200 } }), {
        dir,
        fileName: `gateway-${i}.yaml`,
      });
      try {
        assert.equal((await served(gw, 'm')).revision, first.revision);
      } finally {
        const code = await gw.stop();
        assert.equal(code, 0, `cycle ${i}: exit code ${code}\n${gw.output.slice(-10).join('\n')}`);
      }
      assert.ok(
        gw.logs().some((l) => l.msg === 'stopped'),
        `cycle ${i}: the gateway logged its orderly stop`,
      );
    }
  });

  it('10 in-process startGateway/close cycles leave no watcher, timer, socket or listener behind', async () => {
    const dir = tempDir('inprocess');
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, render([candidate('m', 'east')], { sourceGeneration: 1 }).text);
    const configPath = join(dir, 'gateway.yaml');
    const config = overlayConfig(providers, { file, reload: { debounce_ms: 50, recheck_ms: 100 } });
    writeFileSync(configPath, stringify({ ...config, log: { level: 'silent', access: false } }));

    // Every async resource the gateway creates runs in this store's context (callbacks of a
    // resource inherit the context it was created in), so the test's own timers and client
    // sockets are never counted.
    const owner = new AsyncLocalStorage<string>();
    const tracked = new Set(['FSEVENTWRAP', 'Timeout', 'TCPSERVERWRAP', 'TCPWRAP', 'PIPEWRAP']);
    const alive = new Map<number, string>();
    const hook = createHook({
      init(id, type) {
        if (tracked.has(type) && owner.getStore() === 'gateway') alive.set(id, type);
      },
      destroy(id) {
        alive.delete(id);
      },
    });
    const kinds = (list: readonly string[]): Record<string, number> => {
      const out: Record<string, number> = {};
      for (const k of list) out[k] = (out[k] ?? 0) + 1;
      return out;
    };
    const resourcesBefore = kinds(process.getActiveResourcesInfo());

    hook.enable();
    try {
      for (let i = 0; i < 10; i++) {
        const gw: Gateway = await owner.run('gateway', () => startGateway({ configPath, env: process.env }));
        try {
          assert.ok(gw.services.holder.current().overlay !== null);
          assert.equal((await served(gw, 'm')).provider, 'east');
          // Exercise the watcher: an update must be applied before the gateway closes.
          const next = render([candidate('m', i % 2 === 0 ? 'west' : 'east')], { sourceGeneration: i + 2 });
          writeByRename(file, next.text);
          await waitUntil(() => gw.services.holder.current().overlay?.revision === next.revision, `cycle ${i}: the update is applied`);
        } finally {
          await owner.run('gateway', () => gw.close());
        }
        writeByRename(file, render([candidate('m', 'east')], { sourceGeneration: 1, sourceUid: `uid-cycle-${i}` }).text);
      }
      // Short-lived timers (undici's clock tick, node:http's date cache) end by themselves;
      // anything that outlives that (a re-check interval, a watcher, a socket) is a leak.
      await waitUntil(() => alive.size === 0, 'every resource the gateways created has been released', 10_000).catch(() => {
        assert.fail(`resources still alive after 10 cycles: ${JSON.stringify(kinds([...alive.values()]))}`);
      });
    } finally {
      hook.disable();
    }

    const resourcesAfter = kinds(process.getActiveResourcesInfo());
    for (const type of ['FSEventWrap', 'FSWatcher', 'StatWatcher', 'Timeout', 'TCPServerWrap', 'TCPSocketWrap']) {
      // Allow one for the test's own pending timer.
      const allowance = type === 'Timeout' ? 1 : 0;
      assert.ok(
        (resourcesAfter[type] ?? 0) <= (resourcesBefore[type] ?? 0) + allowance,
        `${type}: ${resourcesBefore[type] ?? 0} before, ${resourcesAfter[type] ?? 0} after 10 cycles`,
      );
    }
  });
});

describe('overlay writers', () => {
  let gw: GatewayProcess;
  let file: string;
  let kubeDir: string;
  let sourceGeneration = 1;

  before(async () => {
    const dir = tempDir('writers');
    kubeDir = join(dir, 'overlay');
    file = join(kubeDir, 'routing-overlay.json');
    kubeletWrite(kubeDir, { 'routing-overlay.json': render([candidate('m-0', 'east')], { sourceGeneration }).text });
    gw = await startGatewayProcess(overlayConfig(providers, { file }), { dir });
  });

  after(async () => {
    await gw?.stop();
  });

  it('30 consecutive kubelet ..data symlink swaps are each applied, and the 30th revision serves', async () => {
    const revisions: string[] = [];
    const from = reloadLines(gw).length;
    const clusters = ['east', 'west', 'central'];
    for (let i = 1; i <= 30; i++) {
      sourceGeneration += 1;
      // A different candidate set each time: a new model, and a rotating provider set.
      const set = [
        candidate(`m-${i}`, clusters[i % 3]!),
        candidate(`m-${i}`, clusters[(i + 1) % 3]!),
        candidate('shared', clusters[i % 3]!),
      ];
      const next = render(set.slice(0, 1 + (i % 3)), { sourceGeneration });
      kubeletWrite(kubeDir, { 'routing-overlay.json': next.text });
      const status = await waitForServing(gw, next.revision);
      assert.equal(status.overlay?.source_generation, sourceGeneration, `step ${i}`);
      revisions.push(next.revision);
    }
    const applied = reloadLines(gw)
      .slice(from)
      .filter((l) => l.result === 'applied')
      .map((l) => l.revision);
    assert.deepEqual(applied, revisions, 'each of the 30 revisions was applied once, in order');
    const rejected = reloadLines(gw)
      .slice(from)
      .filter((l) => l.result === 'rejected');
    assert.deepEqual(rejected, [], 'no reload saw a half-swapped volume');
    const last = await served(gw, 'm-30');
    assert.equal(last.revision, revisions[29]);
    const gone = await postChat(gw.url, chatBody('m-29'));
    assert.equal(gone.status, 404, 'a model only the previous revision had is withdrawn');
  });

  it('a plain temp-file + rename writer is applied', async () => {
    // The kubelet's path is a symlink into ..data; replace it with a regular file by rename.
    sourceGeneration += 1;
    const next = render([candidate('renamed', 'west')], { sourceGeneration });
    writeByRename(file, next.text);
    await waitForServing(gw, next.revision);
    assert.deepEqual(await served(gw, 'renamed'), { revision: next.revision, provider: 'west' });
  });

  it('an in-place truncate-and-write is rejected while half written, then the complete file is applied', async () => {
    const serving = (await adminStatusBody(gw)).overlay!.serving_revision;
    sourceGeneration += 1;
    const next = render([candidate('in-place', 'central')], { sourceGeneration });
    const bytes = Buffer.from(next.text);
    const half = Math.floor(bytes.length / 2);
    const from = reloadLines(gw).length;
    const fd = openSync(file, 'w');
    try {
      writeSync(fd, bytes, 0, half);
      await waitForReload(gw, from, (l) => l.result === 'rejected' && l.reason === 'invalid_json', 'the half-written file is rejected');
      const meanwhile = await postChat(gw.url, chatBody('renamed'));
      assert.equal(meanwhile.status, 200, 'the previous revision keeps serving while the file is half written');
      assert.equal(meanwhile.headers.get('x-switchyard-revision'), serving);
      const rest = reloadLines(gw).length;
      writeSync(fd, bytes, half, bytes.length - half);
      await waitForReload(gw, rest, (l) => l.result === 'applied' && l.revision === next.revision, 'the completed file is applied');
    } finally {
      closeSync(fd);
    }
    assert.deepEqual(await served(gw, 'in-place'), { revision: next.revision, provider: 'central' });
  });
});

describe('overlay start-up race', () => {
  it('the gateway reads the overlay once more after registering the watcher ("overlay_watch" right after "startup")', async () => {
    const dir = tempDir('startup');
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, render([candidate('m', 'east')]).text);
    const gw = await startGatewayProcess(overlayConfig(providers, { file }), { dir });
    try {
      const lines = reloadLines(gw);
      assert.ok(lines.length >= 2, JSON.stringify(lines));
      assert.equal(lines[0]!.trigger, 'startup');
      assert.equal(lines[0]!.result, 'applied');
      assert.equal(lines[1]!.trigger, 'overlay_watch', 'the re-read after the watch is registered');
      assert.equal(lines[1]!.result, 'unchanged', 'the same bytes: no new generation');
      assert.equal(lines[1]!.generation, lines[0]!.generation);
    } finally {
      await gw.stop();
    }
  });

  it('an update written as soon as the process has read its first overlay is picked up without a re-check', async () => {
    const dir = tempDir('race');
    const file = join(dir, 'routing-overlay.json');
    const first = render([candidate('m', 'east')], { sourceGeneration: 1 });
    const second = render([candidate('m', 'west')], { sourceGeneration: 2 });
    writeFileSync(file, first.text);
    const configPath = join(dir, 'gateway.yaml');
    // recheck_ms is an hour: only the watcher or the post-registration re-read can see the update.
    writeFileSync(configPath, stringify(overlayConfig(providers, { file, reload: { debounce_ms: 50, recheck_ms: 3_600_000 } })));

    const child = spawn(process.execPath, [CLI, 'serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const lines: Array<Record<string, unknown>> = [];
    let pending = '';
    let written = false;
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (c: Buffer) => {
      pending += c.toString();
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const part of parts) {
        try {
          const line = JSON.parse(part) as Record<string, unknown>;
          lines.push(line);
          // Write the update the moment the first read is reported: as close to the
          // read/watch window as an outside writer can get.
          if (!written && line.msg === 'reload' && line.trigger === 'startup') {
            written = true;
            writeByRename(file, second.text);
          }
        } catch {
          // not a log line
        }
      }
    });
    try {
      await waitUntil(() => lines.some((l) => l.msg === 'listening') || child.exitCode !== null, 'the gateway listens');
      const listening = lines.find((l) => l.msg === 'listening');
      assert.ok(listening !== undefined, `the gateway did not start: ${stderr}`);
      const startup = lines.find((l) => l.msg === 'reload' && l.trigger === 'startup')!;
      assert.equal(startup.revision, first.revision, 'the first read saw the first revision');
      const url = listening.url as string;
      let seen: string | null = null;
      await waitUntil(async () => {
        seen = (await served({ url }, 'm')).revision;
        return seen === second.revision;
      }, 'the update written during start-up serves').catch(() =>
        assert.fail(`still serving ${seen}; reload lines: ${JSON.stringify(lines.filter((l) => l.msg === 'reload'))}`),
      );
      assert.equal((await served({ url }, 'm')).provider, 'west');
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});

describe('overlay directory deleted and recreated', () => {
  let gw: GatewayProcess;
  let overlayDir: string;
  let file: string;

  before(async () => {
    const dir = tempDir('recreate');
    overlayDir = join(dir, 'overlay');
    file = join(overlayDir, 'routing-overlay.json');
    mkdirSync(overlayDir);
    writeFileSync(file, render([candidate('m', 'east')], { sourceGeneration: 1 }).text);
    gw = await startGatewayProcess(overlayConfig(providers, { file, reload: { debounce_ms: 50, recheck_ms: 300 } }), { dir });
  });

  after(async () => {
    await gw?.stop();
  });

  it('while the directory is missing the old revision serves; a recreated directory with a new overlay is applied', async () => {
    const old = (await adminStatusBody(gw)).overlay!.serving_revision;
    const from = reloadLines(gw).length;
    rmSync(overlayDir, { recursive: true });
    await waitForReload(gw, from, (l) => l.result === 'rejected' && l.reason === 'missing', 'the missing file is rejected');
    for (let i = 0; i < 3; i++) assert.deepEqual(await served(gw, 'm'), { revision: old, provider: 'east' });

    mkdirSync(overlayDir);
    const next = render([candidate('m', 'west')], { sourceGeneration: 2 });
    writeFileSync(file, next.text);
    await waitForServing(gw, next.revision);
    assert.deepEqual(await served(gw, 'm'), { revision: next.revision, provider: 'west' });
  });

  it('after the directory is recreated, file events in it trigger reloads again (the watch is re-attached)', async () => {
    // The re-check would also find these updates; what shows the watcher is back is a
    // reload triggered by a file event ("overlay_watch").
    const from = reloadLines(gw).length;
    for (let i = 0; i < 3; i++) {
      const next = render([candidate('m', i % 2 === 0 ? 'central' : 'west')], { sourceGeneration: 3 + i });
      writeByRename(file, next.text);
      await waitForServing(gw, next.revision);
    }
    const triggers = reloadLines(gw)
      .slice(from)
      .map((l) => l.trigger);
    assert.ok(
      triggers.includes('overlay_watch'),
      `no reload was triggered by a file event after the directory came back: ${triggers.join(',')}`,
    );
  });
});
