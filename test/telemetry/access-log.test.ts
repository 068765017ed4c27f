import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AccessLog } from '../../src/telemetry/index.js';

function tempFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'switchyard-access-')), 'access.log');
}

function lines(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('every line written reaches the destination as one JSON object, in order, once closed', () => {
  const file = tempFile();
  const log = new AccessLog({ level: 'info', destination: file, flushMs: 60_000 });
  for (let i = 0; i < 5000; i++) log.write({ request_id: `r${i}`, status: 200, model: 'm', note: i % 7 === 0 ? 'ünïcødé ✓' : undefined });
  log.close();
  const got = lines(file);
  assert.equal(got.length, 5000);
  assert.deepEqual(
    got.slice(0, 2).map((l) => [l.msg, l.level, l.service, l.request_id]),
    [
      ['request', 'info', 'switchyard', 'r0'],
      ['request', 'info', 'switchyard', 'r1'],
    ],
  );
  assert.equal(got[4999]?.request_id, 'r4999');
  assert.equal(got[7]?.note, 'ünïcødé ✓');
  assert.ok(!('note' in (got[1] as object)), 'undefined fields are left out');
});

test('lines are written in batches once 64 KiB are pending, before any timer or close', () => {
  const file = tempFile();
  const log = new AccessLog({ level: 'info', destination: file, flushMs: 60_000 });
  log.write({ request_id: 'first' });
  assert.equal(readFileSync(file, 'utf8'), '', 'one short line stays pending');
  for (let i = 0; i < 1000; i++) log.write({ request_id: `r${i}`, padding: 'x'.repeat(64) });
  assert.ok(lines(file).length > 0, 'a full batch was written');
  log.close();
  assert.equal(lines(file).length, 1001);
});

test('the access log is off below level info, and writes nothing after close', () => {
  const file = tempFile();
  const log = new AccessLog({ level: 'warn', destination: file, flushMs: 60_000 });
  log.write({ request_id: 'hidden' });
  log.setLevel('info');
  log.write({ request_id: 'shown' });
  log.close();
  log.write({ request_id: 'late' });
  assert.deepEqual(
    lines(file).map((l) => l.request_id),
    ['shown'],
  );
});
