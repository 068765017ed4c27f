import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type AuditFailure, type AuditNotice, AuditWriter } from '../../src/audit/index.js';
import { baseConfig, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { scrapeMetrics } from '../support/observe.js';
import { AuditDir, started } from './fixture.js';

// The audit log on real disks: a small tmpfs that really fills up (ENOSPC and short
// writes from the kernel), and a real gateway process starting on a file a crash left torn.
// `audit verify` is the real CLI (dist/cli.js; build it first).

const tmp = new AuditDir('switchyard-audit-disk-');

/** Every line of the file parses as one record, and the file ends with a newline: no torn or glued record. */
function assertWholeRecords(path: string): number {
  const text = readFileSync(path, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), 'the file ends at a whole record');
  const lines = text.split('\n').filter((l) => l !== '');
  for (const [i, l] of lines.entries()) {
    const r = JSON.parse(l) as Record<string, unknown>;
    assert.equal(typeof r.prev_hash, 'string', `line ${i + 1} is one record`);
    assert.equal(l.indexOf('"prev_hash"'), l.lastIndexOf('"prev_hash"'), `line ${i + 1} holds one record, not two glued`);
  }
  return lines.length;
}

/** A 64 KiB tmpfs, or null (and the test is skipped) where mounting is not allowed. */
function mountSmallTmpfs(): string | null {
  const mnt = join(tmp.path, 'small-disk');
  mkdirSync(mnt);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt], { stdio: 'pipe' });
    return mnt;
  } catch {
    return null;
  }
}

describe('the audit log on a disk that fills up', () => {
  let mnt: string | null = null;
  before(() => {
    mnt = mountSmallTmpfs();
  });
  after(() => {
    if (mnt !== null) execFileSync('umount', [mnt]);
  });

  it('stays whole records through ENOSPC and short writes; once space is freed the lost records are one gap, and verify passes and names it', async (t) => {
    if (mnt === null) {
      t.skip('cannot mount a tmpfs here (needs root and mount rights): the full-disk test needs a real small disk');
      return;
    }
    const path = join(mnt, 'audit.jsonl');
    // Most of the disk taken by something else, freed later, as an operator would.
    const filler = join(mnt, 'filler');
    writeFileSync(filler, Buffer.alloc(40 * 1024));
    const failures: AuditFailure[] = [];
    const notices: AuditNotice[] = [];
    const w = await AuditWriter.open({
      path,
      instance: 'disk-test',
      retryMs: 20,
      maxPending: 50,
      onFailure: (f) => failures.push(f),
      onNotice: (n) => notices.push(n),
    });
    let i = 0;
    // Bounded: the disk is 64 KiB and each burst adds about 5 KiB.
    for (let burst = 0; burst < 100 && w.failedWrites === 0; burst += 1) {
      for (let k = 0; k < 20; k += 1) w.append(started((i += 1)));
      await w.flush();
    }
    assert.ok(w.failedWrites > 0, 'the disk filled up');
    assert.ok(
      failures.some((f) => /ENOSPC|short write/.test(f.message)),
      failures.map((f) => f.message).join('\n'),
    );
    // The kernel took part of a batch before refusing: that part was cut back off.
    assert.ok(
      notices.some((n) => /cut back to its last whole record/.test(n.message)),
      'a short write happened and was undone',
    );
    const writtenBefore = assertWholeRecords(path);
    assert.equal(statSync(path).size, Buffer.byteLength(readFileSync(path, 'utf8')));

    // More than the backlog holds while the disk stays full: the oldest are dropped.
    for (let k = 0; k < 80; k += 1) w.append(started((i += 1)));
    await w.flush();
    assert.ok(w.dropped > 0, 'records were dropped');
    assertWholeRecords(path);

    rmSync(filler);
    for (let k = 0; k < 5; k += 1) w.append(started((i += 1)));
    await w.close();
    const total = assertWholeRecords(path);
    assert.ok(total > writtenBefore);
    const dropped = failures.filter((f) => f.kind === 'dropped').reduce((n, f) => n + f.records, 0);
    assert.equal(dropped, w.dropped);

    const r = await runCli(['audit', 'verify', path]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(
      r.stdout,
      new RegExp(`${total} record\\(s\\), chain intact, 1 gap\\(s\\): ${dropped} record\\(s\\) lost after seq \\d+ \\(line \\d+\\)`),
    );
  });
});

describe('a gateway whose audit file ends in a torn record', () => {
  it('starts, cuts the torn bytes, logs it, and continues the chain with a gap record naming cut_bytes; verify passes', async () => {
    const own = mkdtempSync(join(tmp.path, 'gw-'));
    const file = join(own, 'audit.jsonl');
    const w = await AuditWriter.open({ path: file, instance: 'before-the-crash' });
    for (let k = 0; k < 3; k += 1) w.append(started(k));
    await w.close();
    const torn = '{"id":"01KB2X3Y4Z","ts":"2026-12-02T00:00:00.000Z","instance":"before-the-crash","seq":4,"ev';
    appendFileSync(file, torn);

    const config = baseConfig({ east: 'http://127.0.0.1:9/v1' }, { m: { candidates: [{ provider: 'east' }] } }, { audit: { file } });
    const gw = await startGatewayProcess(config, { dir: own });
    try {
      const repaired = await gw.waitForLog((l) => l.msg === 'audit file repaired');
      assert.equal(repaired.level, 'warn');
      assert.match(String(repaired.detail), new RegExp(`cut ${Buffer.byteLength(torn)} byte\\(s\\).*after seq 3`));
      assert.match(await scrapeMetrics(gw.url), /^switchyard_audit_records_lost_total 0$/m);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
    assertWholeRecords(file);
    const records = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const g = records[3] as Record<string, unknown>;
    assert.deepEqual([g.event, g.reason, g.cut_bytes, g.after_seq, g.seq], ['gap', 'torn_tail', Buffer.byteLength(torn), 3, 4]);
    assert.ok(records.length > 4, 'the gateway wrote after the gap (its start-up reload)');

    const r = await runCli(['audit', 'verify', file]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(
      r.stdout,
      new RegExp(`1 gap\\(s\\): ${Buffer.byteLength(torn)} byte\\(s\\) of an incomplete record cut at start-up after seq 3 \\(line 4\\)`),
    );
  });
});
