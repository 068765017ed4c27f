import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { readFileSlice } from '../../src/contract/index.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-read-slice-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('a slice reads at most maxBytes from a position and reports the file size', async () => {
  const file = join(dir, 'f');
  writeFileSync(file, '0123456789');
  const mid = await readFileSlice(file, 3, 4);
  assert.ok(mid.ok);
  assert.deepEqual([mid.bytes.toString(), mid.size], ['3456', 10]);
  const tail = await readFileSlice(file, 8, 100);
  assert.ok(tail.ok);
  assert.equal(tail.bytes.toString(), '89');
  const past = await readFileSlice(file, 20, 5);
  assert.ok(past.ok);
  assert.equal(past.bytes.length, 0);
});

test('a missing file or a directory is a rejection naming the path and what it is', async () => {
  const missing = await readFileSlice(join(dir, 'absent'), 0, 1, 'audit file');
  assert.deepEqual(missing.ok ? null : missing.reason, 'missing');
  assert.match(missing.ok ? '' : missing.message, /^audit file ".*absent"/);
  const directory = await readFileSlice(dir, 0, 1);
  assert.deepEqual(directory.ok ? null : directory.reason, 'unreadable');
});
