import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, it } from 'node:test';
import { type AuditNotice, AuditWriter, describeIntact, recordHash, verifyAuditFile } from '../../src/audit/index.js';
import { adminReload } from '../support/admin.js';
import { baseConfig, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { AuditDir, lines, started } from './fixture.js';

// Log rotation under a running writer: the file deleted, renamed and replaced, or copied
// and truncated. The writer must not go on appending to a file nobody reads, or onto a cut
// one: it reopens the path and anchors the new file to the last record of the old one, so
// the old and the new file read as one chain.

const tmp = new AuditDir('switchyard-audit-rotation-');

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const fresh = (): string => tmp.fresh();

/** A writer with three records written, and the notices it gives. */
async function writerWithThree(path: string): Promise<{ w: AuditWriter; notices: AuditNotice[]; lastLine: string }> {
  const notices: AuditNotice[] = [];
  const w = await AuditWriter.open({ path, instance: 't', clock: () => NOW, onNotice: (n) => notices.push(n) });
  for (let i = 1; i <= 3; i += 1) w.append(started(i));
  await w.flush();
  return { w, notices, lastLine: lines(path)[2] as string };
}

/** The old file followed by the new one verifies as one chain. */
async function assertOneChain(oldFile: string, newFile: string): Promise<void> {
  const joined = `${newFile}.joined`;
  writeFileSync(joined, Buffer.concat([readFileSync(oldFile), readFileSync(newFile)]));
  const r = await verifyAuditFile(joined);
  assert.ok(r.ok, JSON.stringify(r));
}

describe('a writer whose file is rotated away', () => {
  it('deleted: reopens the path, and the new file starts with an anchor to the old last record, which verify accepts and names', async () => {
    const path = fresh();
    const { w, notices, lastLine } = await writerWithThree(path);
    const old = readFileSync(path);
    rmSync(path);
    w.append(started(4));
    await w.close();
    const [first, second] = lines(path).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      [first?.event, first?.reason, first?.seq, first?.previous_seq, first?.previous_hash, first?.prev_hash],
      ['anchor', 'file_deleted', 4, 3, recordHash(Buffer.from(lastLine)), recordHash(Buffer.from(lastLine))],
    );
    assert.deepEqual([second?.request_id, second?.seq], ['r4', 5]);
    assert.deepEqual(
      notices.map((n) => [n.kind, n.level]),
      [['reopened', 'warn']],
    );
    assert.match(notices[0]?.message ?? '', /was deleted under the writer/);
    const r = await verifyAuditFile(path);
    assert.ok(r.ok);
    assert.equal(
      describeIntact(r),
      '2 record(s), chain intact, 1 gap(s): the writer went on here after its file was deleted; the file before ends at seq 3 (line 1)',
    );
    const oldCopy = `${path}.old`;
    writeFileSync(oldCopy, old);
    await assertOneChain(oldCopy, path);
  });

  it('renamed and replaced by a new empty file (logrotate create): writes to the new file, anchored; the rotated file stays whole', async () => {
    const path = fresh();
    const { w, notices } = await writerWithThree(path);
    renameSync(path, `${path}.1`);
    writeFileSync(path, '');
    w.append(started(4));
    await w.close();
    assert.equal(lines(`${path}.1`).length, 3, 'nothing more went to the rotated file');
    const first = JSON.parse(lines(path)[0] as string) as Record<string, unknown>;
    assert.deepEqual([first.event, first.reason, first.seq], ['anchor', 'file_replaced', 4]);
    assert.match(notices[0]?.message ?? '', /was replaced under the writer/);
    assert.deepEqual(await verifyAuditFile(`${path}.1`), { ok: true, records: 3, gaps: [] });
    assert.ok((await verifyAuditFile(path)).ok);
    await assertOneChain(`${path}.1`, path);
  });

  it('copied and truncated (copytruncate): logs an error, and the emptied file starts again with an anchor rather than records chained to bytes it no longer holds', async () => {
    const path = fresh();
    const { w, notices } = await writerWithThree(path);
    copyFileSync(path, `${path}.1`);
    truncateSync(path, 0);
    w.append(started(4));
    await w.close();
    const first = JSON.parse(lines(path)[0] as string) as Record<string, unknown>;
    assert.deepEqual([first.event, first.reason, first.seq], ['anchor', 'file_truncated', 4]);
    assert.equal(lines(path).length, 2);
    assert.deepEqual(
      notices.map((n) => [n.kind, n.level]),
      [['reopened', 'error']],
    );
    assert.ok((await verifyAuditFile(path)).ok);
    await assertOneChain(`${path}.1`, path);
  });

  it('cut part-way under it: moves what is left aside and starts a new anchored file, never appending to a cut record', async () => {
    const path = fresh();
    const { w, notices } = await writerWithThree(path);
    const whole = readFileSync(path);
    truncateSync(path, 100);
    w.append(started(4));
    await w.close();
    const aside = readdirSync(tmp.path).filter((f) => f.startsWith(`${basename(path)}.cut-`));
    assert.equal(aside.length, 1, readdirSync(tmp.path).join(' '));
    assert.deepEqual(readFileSync(join(tmp.path, aside[0] as string)), whole.subarray(0, 100), 'the cut file is kept as it was');
    const first = JSON.parse(lines(path)[0] as string) as Record<string, unknown>;
    assert.deepEqual([first.event, first.reason, first.seq], ['anchor', 'file_truncated', 4]);
    assert.equal(notices[0]?.level, 'error');
    assert.ok((await verifyAuditFile(path)).ok);
  });
});

describe('a gateway whose audit file is deleted while it runs', () => {
  it('logs a warning, recreates the file at the configured path with an anchor, and the new file verifies', async () => {
    const own = mkdtempSync(join(tmp.path, 'gw-'));
    const file = join(own, 'audit.jsonl');
    const config = baseConfig({ east: 'http://127.0.0.1:9/v1' }, { m: { candidates: [{ provider: 'east' }] } }, { audit: { file } });
    const gw = await startGatewayProcess(config, { dir: own });
    try {
      // Start-up writes a reload record; wait for it before taking the file away.
      for (let i = 0; i < 100 && !(existsSync(file) && readFileSync(file).length > 0); i += 1) await new Promise((r) => setTimeout(r, 50));
      const before = lines(file);
      assert.ok(before.length >= 1);
      rmSync(file);
      assert.equal((await adminReload(gw.adminUrl as string)).status, 200);
      const warned = await gw.waitForLog((l) => l.msg === 'audit file reopened');
      assert.equal(warned.level, 'warn');
      assert.match(String(warned.detail), /was deleted under the writer/);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
    const first = JSON.parse(lines(file)[0] as string) as Record<string, unknown>;
    assert.deepEqual([first.event, first.reason], ['anchor', 'file_deleted']);
    const r = await runCli(['audit', 'verify', file]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    // The start-up record may still be in its write's after-check (the writer stats the file
    // once a batch is written) when the test deletes the file: the writer cannot tell that
    // from a write that raced the deletion, and says so with a records-lost gap after the
    // anchor. Either way the chain is intact and the deletion gap comes first.
    assert.match(
      r.stdout,
      /chain intact, (1 gap\(s\)|2 gap\(s\)): the writer went on here after its file was deleted; the file before ends at seq \d+ \(line 1\)(; \d+ record\(s\) lost at the start of the file \(line 2\))?\n/,
    );
  });
});
