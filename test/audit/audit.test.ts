import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  type AuditFailure,
  AuditFileError,
  AuditWriter,
  GENESIS_HASH,
  recordHash,
  reload,
  requestCompleted,
  UlidGenerator,
  verifyAuditFile,
} from '../../src/audit/index.js';
import { AuditDir, lines, started } from './fixture.js';

// The audit log: a hash chain over exact bytes, continued across writers, verified line by
// line. Time is injected.

const tmp = new AuditDir('switchyard-audit-');

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const fresh = (): string => tmp.fresh();

async function writeRecords(path: string, count: number, from = 0): Promise<void> {
  const w = await AuditWriter.open({ path, instance: 'test-1', clock: () => NOW });
  for (let i = 0; i < count; i += 1) w.append(started(from + i));
  await w.close();
}

describe('ULIDs', () => {
  it('are 26 Crockford base32 characters, monotonic within one millisecond', () => {
    const ids = new UlidGenerator(() => NOW);
    const list = Array.from({ length: 1000 }, () => ids.next());
    assert.match(list[0] as string, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual([...list].sort(), list);
    assert.equal(new Set(list).size, 1000);
    assert.equal((list[0] as string).slice(0, 10), '01M8P570G0', 'the time part encodes 2026-11-30T12:00:00Z (checked independently)');
  });

  it('never sort before an earlier id when the clock steps back', () => {
    let t = NOW;
    const ids = new UlidGenerator(() => t);
    const a = ids.next();
    t -= 5000;
    assert.ok(ids.next() > a);
  });
});

describe('audit writer', () => {
  it("writes one JSON record per line, chained from the genesis hash by the previous line's exact bytes", async () => {
    const path = fresh();
    await writeRecords(path, 3);
    const [first, second, third] = lines(path).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(first?.prev_hash, GENESIS_HASH);
    assert.equal(second?.prev_hash, recordHash(Buffer.from(lines(path)[0] as string)));
    assert.equal(third?.prev_hash, recordHash(Buffer.from(lines(path)[1] as string)));
    assert.equal(first?.instance, 'test-1');
    assert.equal(first?.ts, '2026-11-30T12:00:00.000Z');
    assert.equal(first?.event, 'request_started');
    assert.ok((first?.id as string) < (second?.id as string));
  });

  it('a second writer on the same file continues its chain', async () => {
    const path = fresh();
    await writeRecords(path, 3);
    await writeRecords(path, 2, 3);
    const all = lines(path);
    assert.equal(all.length, 5);
    assert.equal((JSON.parse(all[3] as string) as { prev_hash: string }).prev_hash, recordHash(Buffer.from(all[2] as string)));
    assert.deepEqual(await verifyAuditFile(path), { ok: true, records: 5, gaps: [] });
  });

  it('never chains onto half a record: a torn last line is cut before the next record', async () => {
    const path = fresh();
    await writeRecords(path, 2);
    const whole = readFileSync(path).length;
    appendFileSync(path, '{"id":"01');
    const w = await AuditWriter.open({ path, instance: 't' });
    await w.close();
    const all = lines(path);
    assert.equal(all.length, 3, 'two records and the gap record; no torn bytes');
    assert.equal(
      readFileSync(path).subarray(0, whole).toString(),
      all
        .slice(0, 2)
        .map((l) => `${l}\n`)
        .join(''),
    );
    assert.equal((JSON.parse(all[2] as string) as { prev_hash: string }).prev_hash, recordHash(Buffer.from(all[1] as string)));
  });

  it('refuses a file whose last record cannot be found (an incomplete line longer than any record)', async () => {
    const path = fresh();
    await writeRecords(path, 1);
    appendFileSync(path, 'x'.repeat(2 * 1024 * 1024 + 10));
    await assert.rejects(AuditWriter.open({ path, instance: 't' }), AuditFileError);
  });

  it('names the file when it cannot be opened', async () => {
    await assert.rejects(
      AuditWriter.open({ path: join(tmp.path, 'no-such-dir', 'audit.jsonl'), instance: 't' }),
      /audit file ".*no-such-dir.*": cannot open for appending \(ENOENT\)/,
    );
  });

  it('records only the named fields: no prompt, completion or key can reach the log', () => {
    const input = {
      requestId: 'r1',
      keyId: 'ci-bot',
      team: 'platform',
      model: 'gpt-4o-mini',
      provider: 'east',
      upstreamModel: 'gpt-4o-mini',
      stableId: 'abc',
      generation: 2,
      revision: 'rev',
      status: 200 as const,
      fallback: ['west:timeout'],
      partial: false,
      usage: { inputTokens: 10, outputTokens: 5 },
      usageEstimated: false,
      costMicroUsd: 12,
      pricingMissing: false,
      latencyMs: 12.34567,
      ttftMs: null,
      messages: [{ role: 'user', content: 'secret prompt' }],
      apiKey: 'sk-live-123',
    };
    const record = requestCompleted(input);
    assert.doesNotMatch(JSON.stringify(record), /secret prompt|sk-live-123/);
    assert.deepEqual(Object.keys(record), [
      'event',
      'request_id',
      'key_id',
      'team',
      'model',
      'provider',
      'upstream_model',
      'stable_id',
      'generation',
      'revision',
      'status',
      'fallback',
      'partial',
      'usage',
      'usage_estimated',
      'cost_micro_usd',
      'pricing_missing',
      'latency_ms',
      'ttft_ms',
    ]);
    assert.deepEqual(reload({ trigger: 'sighup', result: 'applied', generation: 4, revision: null, reason: null }), {
      event: 'reload',
      trigger: 'sighup',
      result: 'applied',
      generation: 4,
      revision: null,
      reason: null,
    });
  });

  it('a failed append is counted, reported and retried, and the chain stays whole', async () => {
    const path = fresh();
    const failures: AuditFailure[] = [];
    const real = await (await import('node:fs/promises')).open(path, 'a');
    let failing = true;
    const sink = {
      write: (b: Buffer, o: number, l: number) =>
        failing ? Promise.reject(new Error('ENOSPC: no space left on device')) : real.write(b, o, l),
      close: () => real.close(),
    };
    const w = AuditWriter.overSink(sink, GENESIS_HASH, { path, instance: 't', onFailure: (f) => failures.push(f), retryMs: 10 });
    w.append(started(1));
    w.append(started(2));
    await w.flush();
    assert.ok(w.failedWrites >= 1);
    assert.equal(failures[0]?.kind, 'write');
    assert.match(failures[0]?.message ?? '', /ENOSPC/);
    failing = false;
    w.append(started(3));
    await w.close();
    assert.equal(w.written, 3);
    assert.equal(w.dropped, 0);
    assert.deepEqual(await verifyAuditFile(path), { ok: true, records: 3, gaps: [] });
  });

  it('records still unwritten at close are reported as dropped, never lost silently', async () => {
    const failures: AuditFailure[] = [];
    const sink = { write: () => Promise.reject(new Error('EIO')), close: async () => undefined };
    const w = AuditWriter.overSink(sink, GENESIS_HASH, { path: 'x', instance: 't', onFailure: (f) => failures.push(f), retryMs: 10 });
    w.append(started(1));
    await w.close();
    assert.equal(w.dropped, 1);
    assert.deepEqual(failures.at(-1), { kind: 'dropped', records: 1, message: 'unwritten when the audit writer closed' });
  });
});

describe('audit verify', () => {
  it('passes on an intact file', async () => {
    const path = fresh();
    await writeRecords(path, 10);
    assert.deepEqual(await verifyAuditFile(path), { ok: true, records: 10, gaps: [] });
  });

  it('names the exact line after a one-byte edit anywhere in a middle record', async () => {
    const path = fresh();
    await writeRecords(path, 6);
    const original = readFileSync(path);
    const starts = [0];
    for (let i = 0; i < original.length - 1; i += 1) if (original[i] === 0x0a) starts.push(i + 1);
    const line4 = starts[3] as number;
    const line4End = (starts[4] as number) - 1;
    // Every byte position of line 4 whose change keeps the file line-structured.
    for (let pos = line4; pos < line4End; pos += 7) {
      const edited = Buffer.from(original);
      edited[pos] = (edited[pos] as number) === 0x41 ? 0x42 : 0x41;
      if (edited[pos] === original[pos]) continue;
      writeFileSync(path, edited);
      const r = await verifyAuditFile(path);
      assert.equal(r.ok, false, `byte ${pos - line4} of line 4`);
      if (!r.ok) assert.equal(r.line, 4, `byte ${pos - line4} of line 4: ${r.reason}`);
    }
  });

  it('names line 1 when the front of the file is cut off', async () => {
    const path = fresh();
    await writeRecords(path, 3);
    writeFileSync(
      path,
      lines(path)
        .slice(1)
        .map((l) => `${l}\n`)
        .join(''),
    );
    const r = await verifyAuditFile(path);
    assert.deepEqual(r.ok ? null : r.line, 1);
  });

  it('names a torn last record', async () => {
    const path = fresh();
    await writeRecords(path, 2);
    appendFileSync(path, '{"id":"01');
    const r = await verifyAuditFile(path);
    assert.deepEqual(r.ok ? null : [r.line, r.reason], [3, 'incomplete record (no final newline)']);
  });
});
