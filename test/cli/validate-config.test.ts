import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { MockProvider } from '../../src/mock/index.js';
import { aliasBombConfig, baseConfig, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { candidate, envelope, legacyOverlay } from '../support/overlay.js';
import { overlayConfig } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// `switchyard validate` as a real process: the exit code and what it prints for a config
// with a password in a URL, an overlay file that is valid, missing or not JSON, and a YAML
// alias bomb; and `--overlay FILE`, which judges another overlay file against the config
// with the gateway's verdict (refused: exit 1; unroutable candidates: warnings, exit 1 only
// under --strict).

const resources = fileResources('switchyard-validate-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('switchyard validate on the config and its overlay file', () => {
  function writeConfig(dir: string, config: object | string): string {
    const path = join(dir, 'gateway.yaml');
    writeFileSync(path, typeof config === 'string' ? config : stringify(config));
    return path;
  }

  it('a base_url with user:password@ fails validation at providers.east.base_url without printing the password', async () => {
    const dir = resources.tempDir();
    const password = 'sk-live-abcdefghijklmnopqrstuvwx';
    const path = writeConfig(
      dir,
      baseConfig({ east: `http://svc:${password}@127.0.0.1:${east.port}/v1` }, { m: { candidates: [{ provider: 'east' }] } }),
    );
    const { code, stdout, stderr } = await runCli(['validate', '--config', path]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /providers\.east\.base_url/);
    assert.ok(!(stdout + stderr).includes(password), 'the password is printed');
  });

  it('validate exits 0 on an overlay-mode config whose overlay file is valid', async () => {
    const dir = resources.tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, legacyOverlay('m'));
    const { code, stdout, stderr } = await runCli([
      'validate',
      '--config',
      writeConfig(dir, overlayConfig({ east: east.baseUrl }, { file })),
    ]);
    assert.equal(code, 0, stdout + stderr);
  });

  it('validate exits 1 on an overlay-mode config whose overlay file is missing, naming routing.overlay.file and the reason', async () => {
    const dir = resources.tempDir();
    const file = join(dir, 'no-such-overlay.json');
    const { code, stdout, stderr } = await runCli([
      'validate',
      '--config',
      writeConfig(dir, overlayConfig({ east: east.baseUrl }, { file })),
    ]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /routing\.overlay\.file/);
    assert.match(stderr, /missing|not found|ENOENT/i);
  });

  it('validate exits 1 on an overlay-mode config whose overlay file is not valid JSON, naming routing.overlay.file and the reason', async () => {
    const dir = resources.tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, '{"local_site": "east", "candidates": [');
    const { code, stdout, stderr } = await runCli([
      'validate',
      '--config',
      writeConfig(dir, overlayConfig({ east: east.baseUrl }, { file })),
    ]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /routing\.overlay\.file/);
    assert.match(stderr, /invalid_json|not valid JSON/i);
  });

  it('validate exits 1 on a YAML alias bomb with a message about aliases, not a crash', async () => {
    const dir = resources.tempDir();
    const { code, stdout, stderr } = await runCli(['validate', '--config', writeConfig(dir, aliasBombConfig(east.baseUrl))]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /alias/i);
    assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  });
});

describe('switchyard validate --overlay FILE: an overlay judged against the config', () => {
  const scope = { network: 'prod', local_site: 'east' };
  /** An overlay-mode config whose own overlay file does not exist: --overlay must replace it. */
  function configWithoutItsOverlay(dir: string): string {
    const path = join(dir, 'gateway.yaml');
    writeFileSync(path, stringify(overlayConfig({ east: east.baseUrl }, { file: join(dir, 'absent.json'), expected_scope: scope })));
    return path;
  }
  function overlayFile(dir: string, candidates: unknown[], options: Parameters<typeof envelope>[1] = {}): string {
    const path = join(dir, 'candidate-overlay.json');
    writeFileSync(path, JSON.stringify(envelope(candidates, { network: 'prod', localSite: 'east', ...options })));
    return path;
  }

  it("a valid overlay passes in place of the config's own file, printing its revision and candidate count", async () => {
    const dir = resources.tempDir();
    const overlay = overlayFile(dir, [candidate('m', 'east')]);
    const { code, stdout, stderr } = await runCli(['validate', '--config', configWithoutItsOverlay(dir), '--overlay', overlay]);
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /^overlay revision [0-9a-f]{64}: 1 candidate\(s\)$/m);
    assert.match(stdout, /with overlay .*candidate-overlay\.json: valid$/m);
    assert.equal(stderr, '');
  });

  it('a candidate whose cluster names no provider is a warning with exit 0, and exit 1 under --strict', async () => {
    const dir = resources.tempDir();
    const overlay = overlayFile(dir, [candidate('m', 'east'), candidate('m', 'nowhere')]);
    const config = configWithoutItsOverlay(dir);
    const lenient = await runCli(['validate', '--config', config, '--overlay', overlay]);
    assert.equal(lenient.code, 0, lenient.stdout + lenient.stderr);
    assert.match(lenient.stderr, /warning: overlay candidate \S+ \(model m\) names cluster "nowhere", which is not a configured provider/);
    assert.match(lenient.stdout, /valid \(1 warning\(s\)\)/);

    const strict = await runCli(['validate', '--config', config, '--overlay', overlay, '--strict']);
    assert.equal(strict.code, 1, strict.stdout + strict.stderr);
    assert.match(strict.stderr, /names cluster "nowhere"/);
    assert.match(strict.stderr, /1 warning\(s\), which --strict treats as errors/);
  });

  it('the gateway reaches the same verdict on that overlay: it starts, and reports the candidate as unroutable', async () => {
    const dir = resources.tempDir();
    const overlay = overlayFile(dir, [candidate('m', 'east'), candidate('m', 'nowhere')]);
    const gw = await startGatewayProcess(overlayConfig({ east: east.baseUrl }, { file: overlay, expected_scope: scope }), { dir });
    resources.addGateway(() => gw.stop());
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /^switchyard_overlay_unroutable_candidates 1$/m);
    assert.ok(
      gw.logs().some((l) => JSON.stringify(l).includes('names cluster \\"nowhere\\"')),
      `the gateway logs the warning:\n${gw.output.join('\n')}`,
    );
  });

  it('an overlay the gateway would refuse (another scope, a wrong digest) exits 1 naming the reason', async () => {
    const dir = resources.tempDir();
    const config = configWithoutItsOverlay(dir);
    const otherScope = overlayFile(dir, [candidate('m', 'east')], { network: 'staging' });
    const scoped = await runCli(['validate', '--config', config, '--overlay', otherScope]);
    assert.equal(scoped.code, 1, scoped.stdout + scoped.stderr);
    assert.match(scoped.stderr, /routing\.overlay\.file: scope_mismatch/);

    const tampered = envelope([candidate('m', 'east')], { network: 'prod', localSite: 'east' });
    (tampered.overlay as { candidates: Array<Record<string, unknown>> }).candidates[0]!.name = 'other';
    const file = join(dir, 'tampered.json');
    writeFileSync(file, JSON.stringify(tampered));
    const digest = await runCli(['validate', '--config', config, '--overlay', file, '--strict']);
    assert.equal(digest.code, 1, digest.stdout + digest.stderr);
    assert.match(digest.stderr, /routing\.overlay\.file: digest_mismatch/);
  });

  it('--overlay with a config that routes statically exits 1: no overlay would apply', async () => {
    const dir = resources.tempDir();
    const config = join(dir, 'static.yaml');
    writeFileSync(config, stringify(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } })));
    const { code, stdout, stderr } = await runCli(['validate', '--config', config, '--overlay', overlayFile(dir, [])]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /routing: an overlay file was given, but this config routes statically/);
  });
});
