import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseOverlay } from '../../src/contract/index.js';
import { runCli } from '../support/gateway-process.js';
import { waitUntil } from '../support/observe.js';

// `switchyard overlay render|publish|verify|diff` as users run them: exit codes and output.

let dir: string;

const inventory = (weight: number, extra = '') => `network: prod
gateway: edge-gw
namespace: ai
local_site: east
local_region: us-east
selection_policy: { mode: roundRobin }
providers:
  - cluster: east
    site: east
    region: us-east
    models: [gpt-4o-mini, llama-3.1-70b]
    weight: ${weight}
    credential: { name: east-cred, namespace: ai, key: token }
  - { cluster: west, site: west, region: us-west, models: [gpt-4o-mini] }
${extra}`;

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('switchyard overlay', () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-overlay-cli-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('render prints an envelope the contract accepts', async () => {
    const r = await runCli(['overlay', 'render', '--inventory', file('inv.yaml', inventory(50))]);
    assert.equal(r.code, 0, r.stderr);
    const parsed = parseOverlay(r.stdout);
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
    assert.equal(parsed.overlay.candidates.length, 3);
    assert.equal(parsed.overlay.provenance?.producer, 'switchyard-publisher');
  });

  it('render --out only renders: it writes the envelope, publishes nothing and keeps no state file', async () => {
    const out = join(dir, 'rendered', 'overlay.json');
    const inv = file('inv.yaml', inventory(50));
    for (let run = 0; run < 2; run++) {
      const r = await runCli(['overlay', 'render', '--inventory', inv, '--out', out]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /rendered revision [0-9a-f]{64}, 3 candidate\(s\); not published/);
      assert.doesNotMatch(r.stdout, /published revision|source_generation/);
      const parsed = parseOverlay(readFileSync(out));
      assert.ok(parsed.ok);
      assert.equal(parsed.overlay.provenance?.source_generation, 1, 'a render counts no generations');
    }
    assert.deepEqual(readdirSync(join(dir, 'rendered')), ['overlay.json'], 'no state file beside it');
  });

  it('publish writes once, then says the same revision is already published and writes nothing', async () => {
    const inv = file('inv.yaml', inventory(50));
    const out = join(dir, 'published');
    const first = await runCli(['overlay', 'publish', '--inventory', inv, '--dir', out, '--layout', 'kubelet']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /published revision/);
    const again = await runCli(['overlay', 'publish', '--inventory', inv, '--dir', out, '--layout', 'kubelet']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already published; nothing written/);
  });

  it('verify prints the revision and candidates per model; exit 1 with the reason when the scope is not the expected one', async () => {
    const out = join(dir, 'verify');
    await runCli(['overlay', 'publish', '--inventory', file('inv.yaml', inventory(50)), '--dir', out, '--layout', 'rename']);
    const target = join(out, 'routing-overlay.json');
    const ok = await runCli(['overlay', 'verify', target, '--expected-scope', 'network=prod,gateway=edge-gw']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /revision: [0-9a-f]{64}/);
    assert.match(ok.stdout, /gpt-4o-mini: 2\n\s+llama-3\.1-70b: 1/);
    const wrong = await runCli(['overlay', 'verify', target, '--expected-scope', 'gateway=other-gw']);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /scope_mismatch.*scope\.gateway/);
    const broken = await runCli(['overlay', 'verify', file('broken.json', '{"schema_version": "1.0.0"')]);
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /invalid_json/);
  });

  it('diff lists, per model, what was added, removed, changed in admission and reweighted', async () => {
    const a = join(dir, 'a.json');
    const b = join(dir, 'b.json');
    await runCli(['overlay', 'render', '--inventory', file('inv-a.yaml', inventory(50)), '--out', a]);
    const changed = inventory(7).replace(
      '{ cluster: west, site: west, region: us-west, models: [gpt-4o-mini] }',
      '{ cluster: west, site: west, region: us-west, models: [gpt-4o-mini], state: drain }',
    );
    await runCli([
      'overlay',
      'render',
      '--inventory',
      file('inv-b.yaml', `${changed}  - { cluster: north, site: north, region: ca, models: [llama-3.1-70b] }\n`),
      '--out',
      b,
    ]);
    const r = await runCli(['overlay', 'diff', a, b]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /model gpt-4o-mini:/);
    assert.match(r.stdout, /~ admission {2}west@west \([0-9a-f]{8}\): new_and_existing -> existing_only/);
    assert.match(r.stdout, /~ weight {5}east@east \([0-9a-f]{8}\): 50 -> 7/);
    assert.match(r.stdout, /model llama-3\.1-70b:\n(.*\n)*\s+\+ added {6}north@north/);
  });

  it('a bad inventory exits 1 with a stable code and the field path; a corrupt state file too', async () => {
    const bad = await runCli(['overlay', 'render', '--inventory', file('bad.yaml', inventory(5000))]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /inventory_invalid: .*providers\[0\]\.weight: must be a whole number 1-1000/);
    const out = join(dir, 'corrupt');
    await runCli(['overlay', 'publish', '--inventory', file('inv.yaml', inventory(50)), '--dir', out, '--layout', 'kubelet']);
    writeFileSync(join(out, '.routing-overlay.json.publisher-state.json'), '[]');
    const r = await runCli(['overlay', 'publish', '--inventory', file('inv2.yaml', inventory(51)), '--dir', out, '--layout', 'kubelet']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /state_invalid: state file .*: \(top level\)/);
    const layout = await runCli(['overlay', 'publish', '--inventory', file('inv.yaml', inventory(50)), '--dir', out, '--layout', 'zip']);
    assert.equal(layout.code, 1);
    assert.match(layout.stderr, /--layout must be one of: kubelet, rename/);
  });

  it('grid without --listen keeps running, publishes an inventory edit, and stops with exit 0 on SIGTERM', async () => {
    const inv = file('grid.yaml', inventory(50));
    const child = spawn(
      process.execPath,
      [resolve(import.meta.dirname, '../../dist/cli.js'), 'grid', '--inventory', inv, '--dir', join(dir, 'grid-out')],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await waitUntil(() => out.includes('"msg":"grid running"'), 'grid runs');
      writeFileSync(`${inv}.tmp`, inventory(60));
      renameSync(`${inv}.tmp`, inv);
      await waitUntil(() => (out.match(/"msg":"published"/g) ?? []).length === 2, `the edit is published:\n${out}`);
      assert.equal(child.exitCode, null);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
    assert.match(out, /"msg":"grid stopped"/);
  });

  it('a bad inventory gets every error in one run, one a line with its path, as validate prints a config', async () => {
    const bad = inventory(5000).replace('network: prod\n', '').replace('region: us-west,', 'region: us-west, colour: blue,');
    const r = await runCli(['overlay', 'render', '--inventory', file('many-bad.yaml', bad)]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /inventory_invalid: inventory file ".*many-bad\.yaml": 3 errors\n/);
    assert.match(r.stderr, /\n {2}network: required\n/);
    assert.match(r.stderr, /\n {2}providers\[0\]\.weight: must be a whole number 1-1000\n/);
    assert.match(r.stderr, /\n {2}providers\[1\]\.colour: unknown key\n/);
  });

  it('grid refuses to start on an invalid inventory: exit 1 with the code and the path', async () => {
    const r = await runCli([
      'grid',
      '--inventory',
      file('grid-bad.yaml', inventory(50).replace('namespace: ai', 'namespace: ai\nlocal_zone: x')),
      '--dir',
      join(dir, 'never'),
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /inventory_invalid: .*local_zone: unknown key/);
  });
});
