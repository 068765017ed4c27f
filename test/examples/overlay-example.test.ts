import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { parseOverlay } from '../../src/contract/index.js';
import { fileResources } from '../support/resources.js';

// examples/overlay.yaml starts as shipped: its overlay file is the sample beside it,
// a real contract v1 envelope in the config's expected scope, and the config's comment tells
// how to start it from the repository root. `validate` runs on the files exactly as shipped;
// `serve` runs on a copy whose only changes are free ports for its listeners and mocks (the
// shipped ones are fixed, and the demo's test uses them), so it can run beside other tests.

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = resolve(ROOT, 'dist/cli.js');
const CONFIG = 'examples/overlay.yaml';

interface ExampleConfig {
  server: Record<string, unknown>;
  providers: Record<string, { base_url: string }>;
  routing: { overlay: { file: string; expected_scope: { network: string; local_site: string } } };
}

const config = parse(readFileSync(resolve(ROOT, CONFIG), 'utf8')) as ExampleConfig;
const overlayPath = resolve(ROOT, config.routing.overlay.file);
const resources = fileResources('switchyard-example-');

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (code) => res({ code, stdout, stderr }));
  });
}

describe('examples/overlay.yaml starts as shipped', () => {
  it('names the sample overlay beside it, which passes the contract in the expected scope', () => {
    assert.equal(overlayPath, resolve(ROOT, 'examples/routing-overlay.json'));
    const parsed = parseOverlay(readFileSync(overlayPath), { expectedScope: config.routing.overlay.expected_scope });
    assert.ok(parsed.ok, parsed.ok ? '' : `${parsed.reason}: ${parsed.message}`);
    const clusters = new Set(parsed.overlay.candidates.map((c) => c.cluster));
    for (const cluster of clusters) assert.ok(cluster in config.providers, `the sample names cluster ${cluster}, not a provider`);
  });

  it('switchyard validate accepts the shipped config and its overlay with no warning', async () => {
    const { code, stdout, stderr } = await cli(['validate', '--config', CONFIG, '--strict']);
    assert.equal(code, 0, stdout + stderr);
    assert.equal(stderr, '');
    const revision = (JSON.parse(readFileSync(overlayPath, 'utf8')) as { revision: { value: string } }).revision.value;
    assert.match(stdout, new RegExp(`^overlay revision ${revision}: 4 candidate\\(s\\)$`, 'm'));
  });

  it('serve answers a first request from the overlay: gpt-4o-mini on east, with the revision', async () => {
    const east = await resources.startMock({ name: 'east' });
    const west = await resources.startMock({ name: 'west' });
    const copy = {
      ...config,
      server: { ...config.server, listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0' },
      providers: {
        east: { ...config.providers.east, base_url: east.baseUrl },
        west: { ...config.providers.west, base_url: west.baseUrl },
      },
      // The shipped path is relative to the repository root; the copy lives in a temp dir.
      routing: { ...config.routing, overlay: { ...config.routing.overlay, file: overlayPath } },
    };
    const gw = await resources.startGw(copy);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
    });
    const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(res.headers.get('x-switchyard-provider'), 'east');
    const revision = (JSON.parse(readFileSync(overlayPath, 'utf8')) as { revision: { value: string } }).revision.value;
    assert.equal(res.headers.get('x-switchyard-revision'), revision);
    assert.ok((body.choices?.[0]?.message.content ?? '') !== '');
  });
});
