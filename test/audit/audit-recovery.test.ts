import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { describe, it } from 'node:test';
import {
  type AuditFailure,
  type AuditNotice,
  type AuditSink,
  AuditWriter,
  describeIntact,
  GENESIS_HASH,
  recordHash,
  verifyAuditFile,
} from '../../src/audit/index.js';
import { AuditDir, started } from './fixture.js';

// How the audit file stays a sequence of whole records when writes fail part-way, when a
// crash leaves a torn last line, and when records are lost: each loss is repaired or cut,
// and declared in a chained gap record that verify names. Time is injected.

const tmp = new AuditDir('switchyard-audit-recovery-');

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const fresh = (): string => tmp.fresh();

async function writeRecords(path: string, count: number): Promise<void> {
  const w = await AuditWriter.open({ path, instance: 'test-1', clock: () => NOW });
  for (let i = 0; i < count; i += 1) w.append(started(i));
  await w.close();
}

function records(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const enospc = (): Error => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });

/**
 * A real append-only file whose disk can be made to take only part of the next write and
 * then refuse (what a full disk does), or refuse outright.
 */
async function flakyFile(path: string): Promise<{ sink: AuditSink; mode: { value: 'ok' | 'short' | 'refuse' } }> {
  const real = await open(path, 'a');
  const mode = { value: 'ok' as 'ok' | 'short' | 'refuse' };
  const sink: AuditSink = {
    async write(b, o, l) {
      if (mode.value === 'ok') return real.write(b, o, l);
      if (mode.value === 'short') {
        mode.value = 'refuse';
        return real.write(b, o, Math.floor(l / 2));
      }
      throw enospc();
    },
    truncate: (n) => real.truncate(n),
    close: () => real.close(),
  };
  return { sink, mode };
}

describe('a write that fails part-way', () => {
  it('is cut back to the last whole record before any retry, so no line ever holds a torn or glued record', async () => {
    const path = fresh();
    const { sink, mode } = await flakyFile(path);
    const failures: AuditFailure[] = [];
    const notices: AuditNotice[] = [];
    const w = AuditWriter.overSink(
      sink,
      GENESIS_HASH,
      { path, instance: 't', clock: () => NOW, retryMs: 10, onFailure: (f) => failures.push(f), onNotice: (n) => notices.push(n) },
      { size: 0, seq: 0 },
    );
    w.append(started(1));
    w.append(started(2));
    await w.flush();
    const whole = statSync(path).size;

    mode.value = 'short';
    w.append(started(3));
    w.append(started(4));
    await w.flush();
    assert.ok(w.failedWrites >= 1);
    assert.match(failures[0]?.message ?? '', /ENOSPC/);
    // The half batch the disk took is gone again: the file ends at the last whole record.
    assert.equal(statSync(path).size, whole, 'cut back to the length before the failed write');
    assert.ok(readFileSync(path, 'utf8').endsWith('\n'));
    assert.ok(notices.some((n) => /cut back to its last whole record/.test(n.message)));

    mode.value = 'ok';
    await w.close();
    assert.equal(w.written, 4);
    assert.equal(w.dropped, 0);
    assert.deepEqual(
      records(path).map((r) => [r.seq, r.request_id]),
      [
        [1, 'r1'],
        [2, 'r2'],
        [3, 'r3'],
        [4, 'r4'],
      ],
    );
    assert.deepEqual(await verifyAuditFile(path), { ok: true, records: 4, gaps: [] });
  });
});

describe('records that could not be written', () => {
  it('are counted as dropped, and once writing works again one gap record says how many were lost after which seq', async () => {
    const path = fresh();
    const { sink, mode } = await flakyFile(path);
    const failures: AuditFailure[] = [];
    const w = AuditWriter.overSink(
      sink,
      GENESIS_HASH,
      { path, instance: 't', clock: () => NOW, retryMs: 10, maxPending: 3, onFailure: (f) => failures.push(f) },
      { size: 0, seq: 0 },
    );
    w.append(started(1));
    w.append(started(2));
    await w.flush();
    mode.value = 'refuse';
    w.append(started(3));
    await w.flush();
    // The backlog holds 3: of 3..7 the two oldest go.
    for (let i = 4; i <= 7; i += 1) w.append(started(i));
    assert.equal(w.dropped, 2);
    assert.equal(
      failures.filter((f) => f.kind === 'dropped').reduce((n, f) => n + f.records, 0),
      2,
      'every lost record is reported, for switchyard_audit_records_lost_total',
    );
    mode.value = 'ok';
    await w.close();
    const all = records(path);
    assert.deepEqual(
      all.map((r) => [r.seq, r.event, r.request_id ?? r.records]),
      [
        [1, 'request_started', 'r1'],
        [2, 'request_started', 'r2'],
        [3, 'gap', 2],
        [4, 'request_started', 'r5'],
        [5, 'request_started', 'r6'],
        [6, 'request_started', 'r7'],
      ],
    );
    assert.equal(all[2]?.reason, 'records_lost');
    assert.equal(all[2]?.after_seq, 2);
    const result = await verifyAuditFile(path);
    assert.deepEqual(result, {
      ok: true,
      records: 6,
      gaps: [{ line: 3, reason: 'records_lost', afterSeq: 2, records: 2, cutBytes: null }],
    });
    assert.equal(result.ok && describeIntact(result), '6 record(s), chain intact, 1 gap(s): 2 record(s) lost after seq 2 (line 3)');
  });
});

describe('a torn last line at start-up', () => {
  it('is cut off, and the chain continues with a gap record naming the bytes cut after the last whole seq', async () => {
    const path = fresh();
    await writeRecords(path, 3);
    const torn = '{"id":"01M8P570G0","ts":"2026-11-30T12:00:00.000Z","instance":"t","seq":4,"event":"requ';
    appendFileSync(path, torn);
    const notices: AuditNotice[] = [];
    const w = await AuditWriter.open({ path, instance: 'test-2', clock: () => NOW, onNotice: (n) => notices.push(n) });
    w.append(started(9));
    await w.close();
    const all = records(path);
    assert.deepEqual(
      all.map((r) => [r.seq, r.event]),
      [
        [1, 'request_started'],
        [2, 'request_started'],
        [3, 'request_started'],
        [4, 'gap'],
        [5, 'request_started'],
      ],
    );
    const g = all[3] as Record<string, unknown>;
    assert.equal(g.reason, 'torn_tail');
    assert.equal(g.cut_bytes, Buffer.byteLength(torn));
    assert.equal(g.cut_sha256, recordHash(Buffer.from(torn)), 'the cut bytes stay identifiable');
    assert.equal(g.after_seq, 3);
    assert.equal(notices[0]?.level, 'warn');
    assert.match(notices[0]?.message ?? '', new RegExp(`cut ${Buffer.byteLength(torn)} byte\\(s\\)`));
    const result = await verifyAuditFile(path);
    assert.ok(result.ok);
    assert.equal(
      describeIntact(result),
      `5 record(s), chain intact, 1 gap(s): ${Buffer.byteLength(torn)} byte(s) of an incomplete record cut at start-up after seq 3 (line 4)`,
    );
  });

  it('that is the whole file leaves a file that starts from the genesis hash with the gap record', async () => {
    const path = fresh();
    writeFileSync(path, '{"id":"01M8P5');
    const w = await AuditWriter.open({ path, instance: 't', clock: () => NOW });
    await w.close();
    const [g] = records(path);
    assert.equal(g?.prev_hash, GENESIS_HASH);
    assert.deepEqual([g?.seq, g?.event, g?.cut_bytes, g?.after_seq], [1, 'gap', 13, 0]);
    const result = await verifyAuditFile(path);
    assert.ok(result.ok);
    assert.match(describeIntact(result), /13 byte\(s\) of an incomplete record cut at start-up at the start of the file \(line 1\)/);
  });
});

describe('seq', () => {
  /** A correctly chained file of the given records (fields before prev_hash). */
  function chained(path: string, fields: Array<Record<string, unknown>>): void {
    let hash = GENESIS_HASH;
    let text = '';
    fields.forEach((f, i) => {
      const line = JSON.stringify({
        id: `01M8P570G00000000000000${String(i).padStart(3, '0')}`,
        ts: '2026-11-30T12:00:00.000Z',
        ...f,
        prev_hash: hash,
      });
      hash = recordHash(Buffer.from(line));
      text += `${line}\n`;
    });
    writeFileSync(path, text);
  }

  it('counts from 1 at the genesis record, one more per record, across writers', async () => {
    const path = fresh();
    await writeRecords(path, 2);
    await writeRecords(path, 2);
    assert.deepEqual(
      records(path).map((r) => r.seq),
      [1, 2, 3, 4],
    );
  });

  it('a file from before seq still verifies, and a new writer continues it from its line count', async () => {
    const path = fresh();
    chained(path, [{ event: 'reload' }, { event: 'request_started' }, { event: 'request_started' }]);
    assert.deepEqual(await verifyAuditFile(path), { ok: true, records: 3, gaps: [] });
    await writeRecords(path, 2);
    assert.deepEqual(
      records(path).map((r) => r.seq),
      [undefined, undefined, undefined, 4, 5],
    );
    assert.deepEqual(await verifyAuditFile(path), { ok: true, records: 5, gaps: [] });
  });

  it('verify names a record whose seq does not follow the one before, even when the hashes chain', async () => {
    const path = fresh();
    chained(path, [
      { seq: 1, event: 'reload' },
      { seq: 2, event: 'request_started' },
      { seq: 4, event: 'request_started' },
    ]);
    assert.deepEqual(await verifyAuditFile(path), { ok: false, line: 3, reason: 'its seq 4 is not 3' });
  });

  it('verify names a record without seq after records with one', async () => {
    const path = fresh();
    chained(path, [{ seq: 1, event: 'reload' }, { event: 'request_started' }]);
    assert.deepEqual(await verifyAuditFile(path), { ok: false, line: 2, reason: 'it has no seq, but the record before it has one' });
  });
});
