import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AuditWriter, requestStarted } from '../../src/audit/index.js';
import { parseConfigText } from '../../src/config/index.js';
import { authenticate, buildKeyTable, hashKey } from '../../src/governance/index.js';
import { runCli } from '../support/gateway-process.js';

// `switchyard keys create` and `switchyard audit verify`, run as users run them
// (node dist/cli.js, built by npm test before the tests).

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-gov-cli-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE = `
providers:
  east: { type: openai, base_url: http://127.0.0.1:9001/v1 }
routing:
  routes:
    gpt-4o-mini: { candidates: [ { provider: east } ] }
teams:
  platform: {}
keys:
`;

describe('switchyard keys create', () => {
  it('prints a new key once and a config line holding its sha256, which validates as config and authenticates the key', async () => {
    const r = await runCli(['keys', 'create', '--team', 'platform', '--id', 'ci-bot']);
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout.split('\n');
    const key = out.find((l) => l.startsWith('sy-')) as string;
    const line = out.find((l) => l.startsWith('- {')) as string;
    assert.match(key, /^sy-[A-Za-z0-9_-]{43}$/);
    assert.equal(r.stdout.split(key).length - 1, 1, 'the key appears exactly once');
    assert.ok(line.includes(hashKey(key)));
    const parsed = parseConfigText(`${BASE}  ${line}\n`);
    assert.ok(parsed.ok, JSON.stringify(parsed));
    const k = parsed.config.keys?.[0];
    assert.deepEqual([k?.id, k?.team, k?.sha256], ['ci-bot', 'platform', [hashKey(key)]]);
    const table = buildKeyTable([{ id: 'ci-bot', team: 'platform', sha256: k?.sha256 ?? [], limits: {}, expiresAtMs: null }]);
    assert.ok(authenticate(table, { authorization: `Bearer ${key}` }, 0).ok);
  });

  it('makes a different key every time, and an id when none is given', async () => {
    const [a, b] = await Promise.all([runCli(['keys', 'create', '--team', 'platform']), runCli(['keys', 'create', '--team', 'platform'])]);
    assert.notEqual(a.stdout, b.stdout);
    assert.match(a.stdout, /id: "key-[0-9a-f]{8}"/);
  });

  it('refuses a missing team or an id config would refuse', async () => {
    assert.equal((await runCli(['keys', 'create'])).code, 1);
    const bad = await runCli(['keys', 'create', '--team', 'platform', '--id', 'no spaces']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--id must be/);
    assert.equal((await runCli(['keys', 'delete', '--team', 'x'])).code, 1);
  });
});

describe('switchyard audit verify', () => {
  it('exits 0 on an intact log and 1 naming the exact line after a one-byte edit', async () => {
    const path = join(dir, 'audit.jsonl');
    const w = await AuditWriter.open({ path, instance: 'cli-test' });
    for (let i = 0; i < 5; i += 1) {
      w.append(
        requestStarted({
          requestId: `r${i}`,
          keyId: 'ci-bot',
          team: 'platform',
          model: 'gpt-4o-mini',
          generation: 1,
          revision: null,
          decision: 'admitted',
          reason: null,
        }),
      );
    }
    await w.close();
    const ok = await runCli(['audit', 'verify', path]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /5 record\(s\), chain intact/);

    const bytes = readFileSync(path);
    const line3 = bytes.indexOf('"r2"');
    bytes[line3 + 2] = '3'.charCodeAt(0);
    writeFileSync(path, bytes);
    const broken = await runCli(['audit', 'verify', path]);
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /: line 3: /);
  });

  it('exits 1 for a missing file', async () => {
    const r = await runCli(['audit', 'verify', join(dir, 'absent.jsonl')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not found/);
  });
});
