import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { readOverlayFile } from '../../src/contract/index.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'switchyard-contract-read-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a missing overlay file is reported as missing, naming the path', async () => {
  const file = path.join(dir, 'absent.json');
  const result = await readOverlayFile(file, 1024);
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.equal(result.reason, 'missing');
  assert.ok(result.message.includes(file), result.message);
});

test('an empty overlay file is reported as empty', async () => {
  const file = path.join(dir, 'empty.json');
  await writeFile(file, '');
  const result = await readOverlayFile(file, 1024);
  assert.equal(result.ok ? 'ok' : result.reason, 'empty');
});

test('a file of exactly maxBytes is read whole, one byte more is too_large', async () => {
  const file = path.join(dir, 'sized.json');
  await writeFile(file, Buffer.alloc(100, 0x61));
  const fits = await readOverlayFile(file, 100);
  assert.ok(fits.ok);
  assert.equal(fits.bytes.length, 100);
  await writeFile(file, Buffer.alloc(101, 0x61));
  const over = await readOverlayFile(file, 100);
  assert.equal(over.ok ? 'ok' : over.reason, 'too_large');
});

test('a file far larger than maxBytes is refused as too_large', async () => {
  const file = path.join(dir, 'huge.json');
  await writeFile(file, Buffer.alloc(4 * 1024 * 1024, 0x20));
  const result = await readOverlayFile(file, 1024);
  assert.equal(result.ok ? 'ok' : result.reason, 'too_large');
});

test('a directory at the overlay path is unreadable, not missing', async () => {
  const result = await readOverlayFile(dir, 1024);
  assert.equal(result.ok ? 'ok' : result.reason, 'unreadable');
});

test('a FIFO at the overlay path is refused as unreadable instead of blocking the read', async (t) => {
  const fifo = path.join(dir, 'fifo.json');
  try {
    execFileSync('mkfifo', [fifo]);
  } catch {
    t.skip('mkfifo is not available');
    return;
  }
  const result = await readOverlayFile(fifo, 1024);
  assert.equal(result.ok ? 'ok' : result.reason, 'unreadable');
});

test('a kubelet-style ConfigMap symlink is read through as given, and follows a ..data swap', async () => {
  // The kubelet layout: key -> ..data/key, ..data -> ..<timestamp>/ (docs/overlay-format.md, "Deploying with Kubernetes").
  const volume = path.join(dir, 'configmap');
  const first = path.join(volume, '..2026_11_29_16_30_00.000000001');
  const second = path.join(volume, '..2026_11_29_16_31_00.000000002');
  await mkdir(first, { recursive: true });
  await mkdir(second);
  await writeFile(path.join(first, 'routing-overlay.json'), '{"v":1}');
  await writeFile(path.join(second, 'routing-overlay.json'), '{"v":2}');
  await symlink(path.basename(first), path.join(volume, '..data'));
  const key = path.join(volume, 'routing-overlay.json');
  await symlink('..data/routing-overlay.json', key);

  const before = await readOverlayFile(key, 1024);
  assert.ok(before.ok);
  assert.equal(before.bytes.toString(), '{"v":1}');

  await symlink(path.basename(second), path.join(volume, '..data_tmp'));
  await rename(path.join(volume, '..data_tmp'), path.join(volume, '..data'));
  await rm(first, { recursive: true });
  const afterSwap = await readOverlayFile(key, 1024);
  assert.ok(afterSwap.ok);
  assert.equal(afterSwap.bytes.toString(), '{"v":2}');
});

test('a dangling symlink is missing, reported under the path as given rather than its target', async () => {
  const link = path.join(dir, 'dangling.json');
  await symlink(path.join(dir, 'nowhere', 'target.json'), link);
  const result = await readOverlayFile(link, 1024);
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.equal(result.reason, 'missing');
  assert.ok(result.message.includes(link) && !result.message.includes('target.json'), result.message);
});

test('a negative or fractional maxBytes is a programming error', async () => {
  await assert.rejects(readOverlayFile(path.join(dir, 'x'), -1), RangeError);
  await assert.rejects(readOverlayFile(path.join(dir, 'x'), 1.5), RangeError);
});
