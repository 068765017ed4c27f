import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { MockProvider } from '../../src/mock/index.js';
import { aliasBombConfig, baseConfig, runCli } from '../support/gateway-process.js';
import { legacyOverlay } from '../support/overlay.js';
import { overlayConfig } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// `switchyard validate` as a real process: the exit code and what it prints for a config
// with a password in a URL, an overlay file that is valid, missing or not JSON, and a YAML
// alias bomb.

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
