import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminStatusBody } from '../support/admin.js';
import { runCli, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { candidate, envelope } from '../support/overlay.js';
import { overlayConfig } from '../support/overlay-gateway.js';

// Start-up rules for overlay mode, seen as a user sees them: `switchyard serve` on a config
// and an overlay file either starts, or exits 1 with a message that says what is wrong.

let mock: MockProvider;
let dir: string;
let n = 0;

function writeFiles(config: object, overlay?: unknown): string {
  n += 1;
  const configPath = join(dir, `gateway-${n}.yaml`);
  writeFileSync(configPath, stringify(config));
  if (overlay !== undefined) writeFileSync(join(dir, `overlay-${n}.json`), typeof overlay === 'string' ? overlay : JSON.stringify(overlay));
  return configPath;
}

/** The overlay path that writeFiles will use for its next call. */
function nextOverlayPath(): string {
  return join(dir, `overlay-${n + 1}.json`);
}

async function refusedAtStartup(configPath: string): Promise<string> {
  const run = await runCli(['serve', '--config', configPath]);
  assert.equal(run.code, 1, `serve should exit 1; stdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
  return run.stderr;
}

const legacyPayload = { network: 'test-net', local_site: 'east', candidates: [candidate('m', 'east')] };

describe('overlay mode at start-up', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    dir = mkdtempSync(join(tmpdir(), 'switchyard-overlay-startup-'));
  });

  after(async () => {
    await mock?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('routing.routes and routing.overlay together are a start-up error that says they are mutually exclusive', async () => {
    const file = nextOverlayPath();
    const config = overlayConfig({ east: mock.baseUrl }, { file }, { routing: { routes: { m: { candidates: [{ provider: 'east' }] } } } });
    const stderr = await refusedAtStartup(writeFiles(config, envelope([candidate('m', 'east')])));
    assert.match(stderr, /routing\.routes.*routing\.overlay.*mutually exclusive/);
  });

  it('neither routing.routes nor routing.overlay is a start-up error that names both', async () => {
    const config = { server: { listen: '127.0.0.1:0' }, providers: { east: { type: 'openai', base_url: mock.baseUrl } }, routing: {} };
    const stderr = await refusedAtStartup(writeFiles(config));
    assert.match(stderr, /routing\.routes/);
    assert.match(stderr, /routing\.overlay/);
  });

  it('routing.expected_scope or routing.reload outside an overlay block is rejected with a message', async () => {
    const config = {
      server: { listen: '127.0.0.1:0' },
      providers: { east: { type: 'openai', base_url: mock.baseUrl } },
      routing: {
        routes: { m: { candidates: [{ provider: 'east' }] } },
        expected_scope: { network: 'test-net' },
        reload: { enabled: true },
      },
    };
    const stderr = await refusedAtStartup(writeFiles(config));
    assert.match(stderr, /routing\.expected_scope: .*overlay/);
    assert.match(stderr, /routing\.reload: .*overlay/);
  });

  it('a missing overlay file at start-up exits 1 with the reason', async () => {
    const config = overlayConfig({ east: mock.baseUrl }, { file: join(dir, 'no-such-overlay.json') });
    const stderr = await refusedAtStartup(writeFiles(config));
    assert.match(stderr, /routing\.overlay\.file: missing/);
  });

  it('an invalid overlay at start-up exits 1 with the contract reason', async () => {
    const file = nextOverlayPath();
    const tampered = structuredClone(envelope([candidate('m', 'east')])) as { overlay: { candidates: Array<Record<string, unknown>> } };
    tampered.overlay.candidates[0]!.name = 'other-model';
    const stderr = await refusedAtStartup(writeFiles(overlayConfig({ east: mock.baseUrl }, { file }), tampered));
    assert.match(stderr, /routing\.overlay\.file: digest_mismatch/);
  });

  it('a legacy bare payload is accepted when no expected_scope is configured', async () => {
    const file = join(dir, 'legacy-overlay.json');
    writeFileSync(file, JSON.stringify(legacyPayload));
    const gw = await startGatewayProcess(overlayConfig({ east: mock.baseUrl }, { file }), { dir, fileName: 'legacy.yaml' });
    try {
      const r = await postChat(gw.url, chatBody('m'));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-switchyard-provider'), 'east');
      const status = await adminStatusBody(gw);
      assert.equal(status.overlay?.format, 'legacy');
      assert.equal(r.headers.get('x-switchyard-revision'), status.overlay?.serving_revision);
      assert.match(status.overlay?.serving_revision ?? '', /^[0-9a-f]{64}$/, 'a legacy payload still has a content revision');
    } finally {
      await gw.stop();
    }
  });

  it('a legacy bare payload is refused at start-up when expected_scope is configured, with the reason', async () => {
    const file = nextOverlayPath();
    const config = overlayConfig({ east: mock.baseUrl }, { file, expected_scope: { network: 'test-net' } });
    const stderr = await refusedAtStartup(writeFiles(config, legacyPayload));
    assert.match(stderr, /routing\.overlay\.file: legacy_with_expected_scope/);
  });
});
