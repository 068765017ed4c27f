import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type AuditFailure, type AuditNotice, AuditWriter, recordHash, verifyAuditFile, verifyAuditSet } from '../../src/audit/index.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { baseConfig, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';
import { AuditDir, lines, started } from './fixture.js';

// The rotation an operator drives (logrotate's postrotate: SIGUSR1, or POST
// /admin/audit/reopen), the rotation the writer does itself (audit.max_bytes), and what
// proves a set of rotated files whole: each file's anchor names the last record of the file
// before it, and a head taken earlier (/admin/status) shows a cut no file shows alone.
// Gateway processes run dist/cli.js (build it first).

const tmp = new AuditDir('switchyard-audit-reopen-');
let mock: MockProvider;
before(async () => {
  mock = await startMockProvider({ name: 'east' });
});
after(async () => {
  await mock.close();
});

const NOW = Date.UTC(2026, 11, 2, 1, 15, 0);
const fresh = (): string => tmp.fresh();

function record(line: string | undefined): Record<string, unknown> {
  return JSON.parse(line ?? 'null') as Record<string, unknown>;
}

async function writerWith(path: string, n: number, options: { maxBytes?: number } = {}) {
  const notices: AuditNotice[] = [];
  const w = await AuditWriter.open({ path, instance: 't', clock: () => NOW, onNotice: (x) => notices.push(x), ...options });
  for (let i = 1; i <= n; i += 1) w.append(started(i));
  await w.flush();
  return { w, notices };
}

describe('reopening the audit file at its path', () => {
  it('when the path still names the open file, nothing changes: no anchor, no new file', async () => {
    const path = fresh();
    const { w } = await writerWith(path, 3);
    const r = await w.reopen();
    await w.close();
    assert.deepEqual(r, { file: path, reopened: false, head: { seq: 3, hash: recordHash(Buffer.from(lines(path)[2] as string)) } });
    assert.equal(lines(path).length, 3);
  });

  it('after a rename, writes the anchor into a new file at once, tied to the renamed file last hash; the two verify as one set', async () => {
    const path = fresh();
    const { w } = await writerWith(path, 3);
    const last = lines(path)[2] as string;
    renameSync(path, `${path}.1`);
    const r = await w.reopen();
    // No record was appended: the anchor is written by the reopen itself.
    assert.deepEqual(lines(path).length, 1);
    const anchor = record(lines(path)[0]);
    assert.deepEqual(
      [anchor.event, anchor.reason, anchor.seq, anchor.previous_seq, anchor.previous_hash],
      ['anchor', 'file_deleted', 4, 3, recordHash(Buffer.from(last))],
    );
    assert.equal(r.reopened, true);
    assert.equal(r.head.seq, 4);
    w.append(started(4));
    await w.close();
    assert.equal(lines(`${path}.1`).length, 3, 'nothing more went to the renamed file');
    const set = await verifyAuditSet([path, `${path}.1`]);
    assert.ok(set.ok, JSON.stringify(set));
    assert.deepEqual(
      set.files.map((f) => [f.path, f.records]),
      [
        [`${path}.1`, 3],
        [path, 2],
      ],
    );
    assert.deepEqual(set.head?.seq, 5);
  });
});

describe('audit.max_bytes: the writer rotates the file itself', () => {
  it('renames the file to <file>.<UTC time> (a counter when that name is taken) before a write would pass the limit; every file is within it and the set is one chain', async () => {
    const path = fresh();
    const notices: AuditNotice[] = [];
    const w = await AuditWriter.open({ path, instance: 't', clock: () => NOW, maxBytes: 4096, onNotice: (x) => notices.push(x) });
    // One at a time, and then a burst that has to be split across files.
    for (let i = 1; i <= 20; i += 1) {
      w.append(started(i));
      await w.flush();
    }
    for (let i = 21; i <= 60; i += 1) w.append(started(i));
    await w.close();
    const name = (f: string) => f.slice(f.lastIndexOf('/') + 1);
    const rotated = readdirSync(tmp.path)
      .filter((f) => f.startsWith(`${name(path)}.`))
      .sort();
    assert.ok(rotated.length >= 3, rotated.join(' '));
    assert.equal(rotated[0], `${name(path)}.20261202T011500Z`);
    assert.equal(rotated[1], `${name(path)}.20261202T011500Z.1`);
    const all = [path, ...rotated.map((f) => join(tmp.path, f))];
    for (const f of all) assert.ok(statSync(f).size <= 4096, `${f} is ${statSync(f).size} bytes`);
    assert.deepEqual(
      notices.map((n) => [n.kind, n.level]),
      rotated.map(() => ['rotated', 'info']),
    );
    const firstOfNew = record(lines(path)[0]);
    assert.deepEqual([firstOfNew.event, firstOfNew.reason], ['anchor', 'file_rotated']);
    const set = await verifyAuditSet([...all].reverse());
    assert.ok(set.ok, JSON.stringify(set));
    // 60 records and one anchor per rotation; seq runs from 1 across the files.
    assert.equal(set.records, 60 + rotated.length);
    assert.equal(set.head?.seq, 60 + rotated.length);
    const requests = all.flatMap(lines).map((l) => record(l).request_id);
    assert.equal(new Set(requests.filter((x) => x !== undefined)).size, 60, 'every record is in one of the files');
  });
});

describe('audit verify over a set of rotated files', () => {
  it('a file left out of the middle breaks the link, naming the missing seqs', async () => {
    const path = fresh();
    const { w } = await writerWith(path, 2);
    renameSync(path, `${path}.2`);
    w.append(started(3));
    await w.flush();
    renameSync(path, `${path}.1`);
    w.append(started(4));
    await w.close();
    assert.ok((await verifyAuditSet([`${path}.2`, `${path}.1`, path])).ok);
    const r = await verifyAuditSet([path, `${path}.2`]);
    assert.equal(r.ok, false);
    assert.ok(!r.ok);
    assert.equal(r.path, path);
    assert.match(r.reason, /its anchor follows seq 4, but .* ends at seq 2: the records from seq 3 to 4 are missing/);
  });

  it('--head: cutting the last 3 records leaves the file intact alone, but it no longer reaches a head taken before the cut', async () => {
    const path = fresh();
    const { w } = await writerWith(path, 6);
    const head = w.head;
    await w.close();
    assert.ok((await verifyAuditSet([path], head)).ok, 'the uncut file reaches its head');
    const bad = await verifyAuditSet([path], { seq: 4, hash: head.hash });
    assert.ok(!bad.ok);
    assert.match(bad.reason, /the record at seq 4 hashes to [0-9a-f]{64}, not to/);
    writeFileSync(path, `${lines(path).slice(0, 3).join('\n')}\n`);
    assert.deepEqual(await verifyAuditFile(path), { ok: true, records: 3, gaps: [] });
    const cut = await verifyAuditSet([path], head);
    assert.ok(!cut.ok);
    assert.match(cut.reason, /the records end at seq 3, before the known head, seq 6: 3 record\(s\) after seq 3 were cut/);
  });
});

/** Waits until the gateway has written `n` lines to `file`. */
async function linesAtLeast(file: string, n: number): Promise<string[]> {
  for (let i = 0; i < 200; i += 1) {
    if (existsSync(file) && lines(file).length >= n) return lines(file);
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`${file} never held ${n} line(s)`);
}

/** A gateway process that writes its audit log to `audit.jsonl` in a folder of its own (with `audit`'s other settings). */
async function auditedGateway(audit: Record<string, unknown> = {}) {
  const own = mkdtempSync(join(tmp.path, 'gw-'));
  const file = join(own, 'audit.jsonl');
  const gw = await startGatewayProcess(
    baseConfig({ east: mock.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }, { audit: { file, ...audit } }),
    { dir: own },
  );
  return { own, file, gw };
}

async function traffic(url: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) assert.equal((await postChat(url, chatBody('m'))).status, 200);
}

describe('a gateway rotated by logrotate (create, then postrotate)', () => {
  it('SIGUSR1 after a rename reopens the path: the new file starts with an anchor, and both files verify, alone and as one set', async () => {
    const { file, gw } = await auditedGateway();
    try {
      await traffic(gw.url, 2);
      await linesAtLeast(file, 5); // the start-up reload record, and two records per request
      // logrotate's default: rename, then create an empty file at the path.
      renameSync(file, `${file}.1`);
      writeFileSync(file, '');
      gw.child.kill('SIGUSR1');
      const logged = await gw.waitForLog((l) => l.msg === 'audit file reopen');
      assert.deepEqual([logged.file, logged.reopened], [file, true]);
      assert.equal(lines(file).length, 1, 'the anchor is written at the reopen, before any traffic');
      await traffic(gw.url, 2);
      await linesAtLeast(file, 5);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
    const anchor = record(lines(file)[0]);
    assert.deepEqual([anchor.event, anchor.reason], ['anchor', 'file_replaced']);
    assert.equal(anchor.previous_hash, recordHash(Buffer.from(lines(`${file}.1`).at(-1) as string)));
    for (const f of [`${file}.1`, file]) {
      const r = await runCli(['audit', 'verify', f]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
    }
    const set = await runCli(['audit', 'verify', file, `${file}.1`]);
    assert.equal(set.code, 0, set.stderr + set.stdout);
    assert.match(set.stdout, /2 file\(s\), one chain: \d+ record\(s\), 1 gap\(s\), head seq \d+:[0-9a-f]{64}\n$/);
    assert.ok(set.stdout.indexOf(`${file}.1:`) < set.stdout.indexOf(`${file}:`), 'listed in chain order');
  });

  it('a real logrotate run (create, dateext, delaycompress, postrotate kill -USR1) leaves two files that verify as one chain', async (t) => {
    try {
      execFileSync('logrotate', ['--version'], { stdio: 'ignore' });
    } catch {
      t.skip('logrotate is not installed');
      return;
    }
    const { own, file, gw } = await auditedGateway();
    try {
      await traffic(gw.url, 2);
      await linesAtLeast(file, 5);
      const conf = join(own, 'logrotate.conf');
      writeFileSync(
        conf,
        `${file} {\n  daily\n  rotate 90\n  missingok\n  notifempty\n  dateext\n  create 0600\n  compress\n  delaycompress\n  postrotate\n    kill -USR1 ${gw.child.pid}\n  endscript\n}\n`,
        { mode: 0o644 },
      );
      execFileSync('logrotate', ['-f', '-s', join(own, 'logrotate.state'), conf]);
      await gw.waitForLog((l) => l.msg === 'audit file reopen');
      await traffic(gw.url, 1);
      await linesAtLeast(file, 3);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
    const rotated = readdirSync(own).filter((f) => /^audit\.jsonl-\d{8}$/.test(f));
    assert.equal(rotated.length, 1, readdirSync(own).join(' '));
    const set = await runCli(['audit', 'verify', file, join(own, rotated[0] as string)]);
    assert.equal(set.code, 0, set.stderr + set.stdout);
    assert.match(set.stdout, /2 file\(s\), one chain: \d+ record\(s\), 1 gap\(s\)/);
  });

  it('audit.max_bytes in the config: the gateway rotates the file itself, and the files verify as one chain', async () => {
    const { own, gw } = await auditedGateway({ max_bytes: 4096 });
    try {
      await traffic(gw.url, 12);
      await gw.waitForLog((l) => l.msg === 'audit file rotated');
    } finally {
      assert.equal(await gw.stop(), 0);
    }
    const files = readdirSync(own)
      .filter((f) => f.startsWith('audit.jsonl'))
      .map((f) => join(own, f));
    assert.ok(files.length >= 2, files.join(' '));
    for (const f of files) assert.ok(statSync(f).size <= 4096, `${f}: ${statSync(f).size} bytes`);
    const set = await runCli(['audit', 'verify', ...files]);
    assert.equal(set.code, 0, set.stderr + set.stdout);
    // The start-up reload record, two per request, and an anchor opening each new file.
    assert.match(set.stdout, new RegExp(`${files.length} file\\(s\\), one chain: ${25 + files.length - 1} record\\(s\\)`));
  });

  it('POST /admin/audit/reopen takes the admin token and answers with the file and head; without an audit log it is 404 not_found', async () => {
    const own = mkdtempSync(join(tmp.path, 'gw-'));
    const file = join(own, 'audit.jsonl');
    const tokenFile = join(own, 'admin-token');
    writeFileSync(tokenFile, 'admin-token-for-the-reopen-test\n');
    const auth = { authorization: 'Bearer admin-token-for-the-reopen-test' };
    const routes = { m: { candidates: [{ provider: 'east' }] } };
    const gw = await startGatewayProcess(
      baseConfig({ east: mock.baseUrl }, routes, { server: { admin_token: { file: tokenFile } }, audit: { file } }),
      { dir: own },
    );
    try {
      await linesAtLeast(file, 1);
      const refused = await fetch(`${gw.adminUrl}/admin/audit/reopen`, { method: 'POST' });
      assert.equal(refused.status, 401);
      const same = await fetch(`${gw.adminUrl}/admin/audit/reopen`, { method: 'POST', headers: auth });
      assert.equal(same.status, 200);
      const sameBody = (await same.json()) as Record<string, unknown>;
      assert.deepEqual([sameBody.file, sameBody.reopened, sameBody.head_seq], [file, false, 1]);
      renameSync(file, `${file}.1`);
      const moved = await fetch(`${gw.adminUrl}/admin/audit/reopen`, { method: 'POST', headers: auth });
      const movedBody = (await moved.json()) as Record<string, unknown>;
      assert.deepEqual([moved.status, movedBody.file, movedBody.reopened, movedBody.head_seq], [200, file, true, 2]);
      assert.equal(movedBody.head_hash, recordHash(Buffer.from(lines(file)[0] as string)));
    } finally {
      assert.equal(await gw.stop(), 0);
    }
    const bare = await startGatewayProcess(baseConfig({ east: mock.baseUrl }, routes));
    try {
      const none = await fetch(`${bare.adminUrl}/admin/audit/reopen`, { method: 'POST' });
      assert.equal(none.status, 404);
      const body = (await none.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'not_found');
      assert.match(body.error.message, /no audit log is configured/);
      const status = (await (await fetch(`${bare.adminUrl}/admin/status`)).json()) as Record<string, unknown>;
      assert.equal(status.audit, null);
      // SIGUSR1 without an audit log is logged, not Node's default (the inspector).
      bare.child.kill('SIGUSR1');
      await bare.waitForLog((l) => l.msg === 'SIGUSR1 ignored: no audit log is configured');
    } finally {
      assert.equal(await bare.stop(), 0);
    }
  });

  it('/admin/status and switchyard_audit_head_sequence give the head; verify --head with it catches the last 3 records cut, which plain verify cannot', async () => {
    const { file, gw } = await auditedGateway();
    let audit: { file: string; head_seq: number; head_hash: string; records_lost: number };
    try {
      await traffic(gw.url, 3);
      await linesAtLeast(file, 7);
      audit = ((await (await fetch(`${gw.adminUrl}/admin/status`)).json()) as { audit: typeof audit }).audit;
      assert.deepEqual([audit.file, audit.head_seq, audit.records_lost], [file, 7, 0]);
      assert.equal(audit.head_hash, recordHash(Buffer.from(lines(file)[6] as string)));
      assert.equal(metricValue(await scrapeMetrics(gw.url), 'switchyard_audit_head_sequence'), 7);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
    const head = `${audit.head_seq}:${audit.head_hash}`;
    const whole = await runCli(['audit', 'verify', file, '--head', head]);
    assert.equal(whole.code, 0, whole.stderr);
    assert.match(whole.stdout, /reaches the known head seq 7 unchanged/);
    copyFileSync(file, `${file}.uncut`);
    writeFileSync(file, `${lines(file).slice(0, -3).join('\n')}\n`);
    const plain = await runCli(['audit', 'verify', file]);
    assert.equal(plain.code, 0, 'a file cut at a record boundary is intact on its own');
    assert.equal(plain.stdout, `${file}: 4 record(s), chain intact\n`);
    const withHead = await runCli(['audit', 'verify', file, '--head', head]);
    assert.equal(withHead.code, 1);
    assert.equal(
      withHead.stderr,
      `${file}: the records end at seq 4, before the known head, seq 7: 3 record(s) after seq 4 were cut or are in a file not given\n`,
    );
    const malformed = await runCli(['audit', 'verify', file, '--head', '7']);
    assert.notEqual(malformed.code, 0);
    assert.match(malformed.stderr, /--head must be SEQ:HASH/);
  });
});

describe('a live audit file deleted under the writer', () => {
  it('records written to the deleted file are declared in a records_lost gap after the anchor of the new file, and reported as dropped', async () => {
    const path = fresh();
    const failures: AuditFailure[] = [];
    const w = await AuditWriter.open({ path, instance: 't', clock: () => NOW, onFailure: (f) => failures.push(f) });
    for (let i = 1; i <= 3; i += 1) w.append(started(i));
    await w.flush();
    // The deletion lands between the writer's look at the path and its next write: the
    // write goes to the unlinked inode. Only the next write is made to race.
    const handle = await open(path, 'r');
    const proto = Object.getPrototypeOf(handle) as { write: (...a: unknown[]) => Promise<unknown> };
    await handle.close();
    const write = proto.write;
    let raced = false;
    proto.write = function (this: unknown, ...args: unknown[]) {
      if (!raced) {
        raced = true;
        unlinkSync(path);
      }
      return write.apply(this, args);
    };
    try {
      for (let i = 4; i <= 6; i += 1) w.append(started(i));
      await w.flush();
    } finally {
      proto.write = write;
    }
    assert.ok(raced);
    w.append(started(7));
    await w.close();
    const [anchorLine, gapLine, ...rest] = lines(path).map(record);
    assert.deepEqual([anchorLine?.event, anchorLine?.reason, anchorLine?.previous_seq], ['anchor', 'file_deleted', 6]);
    assert.deepEqual([gapLine?.event, gapLine?.reason, gapLine?.after_seq], ['gap', 'records_lost', 3]);
    assert.ok((gapLine?.records as number) >= 3, `the gap counts the 3 records the deleted file took: ${JSON.stringify(gapLine)}`);
    assert.deepEqual(
      rest.map((r) => r.request_id),
      ['r7'],
    );
    const dropped = failures.filter((f) => f.kind === 'dropped');
    assert.equal(dropped.length, 1);
    assert.equal(dropped[0]?.records, gapLine?.records);
    assert.equal(w.dropped, gapLine?.records);
    assert.ok((await verifyAuditFile(path)).ok);
  });

  it('a renamed file keeps its records: no gap, only the anchor', async () => {
    const path = fresh();
    const failures: AuditFailure[] = [];
    const w = await AuditWriter.open({ path, instance: 't', clock: () => NOW, onFailure: (f) => failures.push(f) });
    for (let i = 1; i <= 3; i += 1) w.append(started(i));
    await w.flush();
    renameSync(path, `${path}.1`);
    w.append(started(4));
    await w.close();
    assert.deepEqual(
      lines(path).map((l) => record(l).event),
      ['anchor', 'request_started'],
    );
    assert.equal(lines(`${path}.1`).length, 3);
    assert.deepEqual(failures, []);
  });
});
