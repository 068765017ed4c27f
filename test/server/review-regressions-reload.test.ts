import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { startMockProvider } from '../../src/mock/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startGateway } from '../../src/server/index.js';
import { createLogger } from '../../src/telemetry/index.js';
import { adminReload, adminStatus } from '../support/admin.js';
import { baseConfig, runCli, startGatewayProcess } from '../support/gateway-process.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics, waitUntil } from '../support/observe.js';
import { candidate } from '../support/overlay.js';
import { overlayConfig, writeByRename } from '../support/overlay-gateway.js';

// Regressions from the code review on the reload path and `switchyard validate`
// (findings 1, 3, 4, 5, 7, 8, 9). Real gateway processes, except for the coalescing cases,
// which drive one gateway in-process so that several triggers can be queued in one tick.

let east: MockProvider;
let west: MockProvider;
const cleanup: Array<() => Promise<unknown>> = [];
const dirs: string[] = [];

before(async () => {
  [east, west] = await Promise.all([startMockProvider({ name: 'east' }), startMockProvider({ name: 'west' })]);
});

after(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
  await Promise.all([east, west].map((m) => m?.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function startGw(config: object | string, options: Parameters<typeof startGatewayProcess>[1] = {}): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(config, options);
  cleanup.push(() => gw.stop());
  return gw;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'switchyard-review-reload-'));
  dirs.push(d);
  return d;
}

/** A legacy overlay payload: one candidate per model, each on cluster `east`. */
function legacyOverlay(...models: string[]): string {
  return JSON.stringify({ local_site: 'east', candidates: models.map((m) => candidate(m, 'east')) });
}

async function servedModels(gw: GatewayProcess): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/models`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { data: Array<{ id: string }> };
  return body.data.map((d) => d.id).sort();
}

// ---------------------------------------------------------------------------------------

describe('finding 1: a credential secretRef that escapes credential_mount_base', () => {
  it('a revision whose secretRef namespace is ".." is rejected as invalid_candidate; the previous revision keeps serving and the outside file is never sent', async () => {
    const dir = tempDir();
    const mount = join(dir, 'mount');
    mkdirSync(join(mount, 'team-a', 'creds'), { recursive: true });
    writeFileSync(join(mount, 'team-a', 'creds', 'token'), 'team-a-token\n');
    mkdirSync(join(dir, 'elsewhere'));
    writeFileSync(join(dir, 'elsewhere', 'private-key'), 'OUTSIDE-THE-MOUNT-SECRET\n');
    const file = join(dir, 'routing-overlay.json');
    const withRef = (secretRef: Record<string, string>): string =>
      JSON.stringify({ local_site: 'east', candidates: [candidate('m', 'east', { credential: { strategy: 'bearer_token', secretRef } })] });
    writeFileSync(file, withRef({ namespace: 'team-a', name: 'creds', key: 'token' }));
    const gw = await startGw(overlayConfig({ east: east.baseUrl }, { file, credential_mount_base: mount, reload: { enabled: false } }), { dir });

    east.reset();
    const before = await postChat(gw.url, chatBody('m'));
    assert.equal(before.status, 200, before.text);
    const revision = before.headers.get('x-switchyard-revision');
    assert.equal(east.stats().recent.at(-1)?.headers.authorization, 'Bearer team-a-token');

    writeByRename(file, withRef({ namespace: '..', name: 'elsewhere', key: 'private-key' }));
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.status, 422, reload.text);
    assert.equal(reload.body.result, 'rejected', reload.text);
    assert.equal(reload.body.reason, 'invalid_candidate', reload.text);
    assert.ok(reload.body.errors.some((e) => e.message.includes('credential.secretRef.namespace')), `the error names credential.secretRef.namespace: ${reload.text}`);

    const after = await postChat(gw.url, chatBody('m'));
    assert.equal(after.status, 200, after.text);
    assert.equal(after.headers.get('x-switchyard-revision'), revision, 'the previous revision keeps serving');
    assert.equal(east.stats().recent.at(-1)?.headers.authorization, 'Bearer team-a-token');
    const leaked = east.stats().recent.filter((r) => JSON.stringify(r.headers).includes('OUTSIDE-THE-MOUNT-SECRET'));
    assert.equal(leaked.length, 0, 'the file outside the mount was sent upstream');
    const status = await adminStatus(gw.adminUrl!);
    assert.ok(!status.text.includes('OUTSIDE-THE-MOUNT-SECRET'));
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 3: coalesced triggers never lose an explicit reload', () => {
  const silent = createLogger({ level: 'silent' });

  it('an admin reload that coalesces behind an overlay event, during an overlay re-check, still re-reads the config', async () => {
    const dir = tempDir();
    const overlayFile = join(dir, 'routing-overlay.json');
    writeFileSync(overlayFile, legacyOverlay('m'));
    const config = (withWest: boolean): string => stringify({
      server: { listen: '127.0.0.1:0' },
      providers: { east: { type: 'openai', base_url: east.baseUrl }, ...(withWest ? { west: { type: 'openai', base_url: west.baseUrl } } : {}) },
      routing: { overlay: { file: overlayFile, reload: { enabled: false } } },
    });
    const configPath = join(dir, 'gateway.yaml');
    writeFileSync(configPath, config(false));
    const gw = await startGateway({ configPath, logger: silent });
    cleanup.push(() => gw.close());
    assert.deepEqual(Object.keys(gw.services.holder.current().providers), ['east']);

    writeFileSync(configPath, config(true)); // the operator adds a provider, then asks for a reload
    const recheck = gw.reload('overlay_recheck'); // the safety-net timer: in flight
    const watch = gw.reload('overlay_watch'); // a file event during it: queued
    const admin = gw.reload('admin'); // POST /admin/reload during it
    const result = await admin;
    assert.ok(Object.keys(gw.services.holder.current().providers).includes('west'), `the admin caller's reload did not re-read the config: ${JSON.stringify({ trigger: result.trigger, result: result.result })}`);
    assert.equal(result.result, 'applied');
    await Promise.all([recheck, watch]);
  });

  it('an overlay event that coalesces into a queued config_watch reload is applied without waiting for the re-check', async () => {
    const dir = tempDir();
    const overlayFile = join(dir, 'routing-overlay.json');
    writeFileSync(overlayFile, legacyOverlay('m1'));
    const configPath = join(dir, 'gateway.yaml');
    const configText = stringify({
      server: { listen: '127.0.0.1:0' },
      providers: { east: { type: 'openai', base_url: east.baseUrl } },
      routing: { overlay: { file: overlayFile, reload: { enabled: false } } },
    });
    writeFileSync(configPath, configText);
    const gw = await startGateway({ configPath, logger: silent });
    cleanup.push(() => gw.close());

    // An editor's half-written save: the config event in flight is rejected before it
    // reads the overlay, so only the queued reload can pick up the new revision.
    writeFileSync(configPath, 'providers: [');
    const first = gw.reload('config_watch'); // in flight, rejected
    const queued = gw.reload('config_watch'); // the save completes: queued
    const overlay = gw.reload('overlay_watch'); // the control plane publishes: coalesces into it
    // Still in the same tick: the config is back to the serving bytes, the overlay is new.
    writeFileSync(configPath, configText);
    writeFileSync(overlayFile, legacyOverlay('m2'));
    const [firstResult, , result] = await Promise.all([first, queued, overlay]);
    assert.equal(firstResult.result, 'rejected', 'the reload in flight saw the half-written config');
    assert.deepEqual(Object.keys(gw.services.holder.current().routes), ['m2'], `the overlay change was not applied (the overlay_watch caller got ${result.trigger}/${result.result})`);
    assert.equal(result.result, 'applied');
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 4: routing.overlay.file is restart-only', () => {
  it('a reload that changes routing.overlay.file warns about it and keeps reading the start-up file', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, 'b'));
    const fileA = join(dir, 'a', 'routing-overlay.json');
    const fileB = join(dir, 'b', 'routing-overlay.json');
    writeFileSync(fileA, legacyOverlay('from-a-1'));
    writeFileSync(fileB, legacyOverlay('from-b-1'));
    const config = (file: string): Record<string, unknown> => overlayConfig({ east: east.baseUrl }, { file });
    const gw = await startGw(config(fileA), { dir });
    assert.deepEqual(await servedModels(gw), ['from-a-1']);

    gw.writeConfig(config(fileB));
    const reload = await adminReload(gw.adminUrl!);
    assert.ok(reload.body.warnings.some((w) => w.includes('routing.overlay.file')), `a warning names routing.overlay.file: ${reload.text}`);
    assert.deepEqual(await servedModels(gw), ['from-a-1'], 'the new file is not served');

    // Edits to the other file are not applied; edits to the start-up file are.
    writeByRename(fileB, legacyOverlay('from-b-2'));
    writeByRename(fileA, legacyOverlay('from-a-2'));
    let models: string[] = [];
    await waitUntil(async () => {
      models = await servedModels(gw);
      return models.includes('from-a-2');
    }, 'the edit to the start-up file is served').catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; serving: ${JSON.stringify(models)}`);
    });
    assert.deepEqual(models, ['from-a-2']);
  });
});

// ---------------------------------------------------------------------------------------

describe('findings 5, 7 and 8: switchyard validate', () => {
  function writeConfig(dir: string, config: object | string): string {
    const path = join(dir, 'gateway.yaml');
    writeFileSync(path, typeof config === 'string' ? config : stringify(config));
    return path;
  }

  it('a base_url with user:password@ fails validation at providers.east.base_url without printing the password', async () => {
    const dir = tempDir();
    const password = 'sk-live-abcdefghijklmnopqrstuvwx';
    const path = writeConfig(dir, baseConfig({ east: `http://svc:${password}@127.0.0.1:${east.port}/v1` }, { m: { candidates: [{ provider: 'east' }] } }));
    const { code, stdout, stderr } = await runCli(['validate', '--config', path]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /providers\.east\.base_url/);
    assert.ok(!(stdout + stderr).includes(password), 'the password is printed');
  });

  it('validate exits 0 on an overlay-mode config whose overlay file is valid', async () => {
    const dir = tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, legacyOverlay('m'));
    const { code, stdout, stderr } = await runCli(['validate', '--config', writeConfig(dir, overlayConfig({ east: east.baseUrl }, { file }))]);
    assert.equal(code, 0, stdout + stderr);
  });

  it('validate exits 1 on an overlay-mode config whose overlay file is missing, naming routing.overlay.file and the reason', async () => {
    const dir = tempDir();
    const file = join(dir, 'no-such-overlay.json');
    const { code, stdout, stderr } = await runCli(['validate', '--config', writeConfig(dir, overlayConfig({ east: east.baseUrl }, { file }))]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /routing\.overlay\.file/);
    assert.match(stderr, /missing|not found|ENOENT/i);
  });

  it('validate exits 1 on an overlay-mode config whose overlay file is not valid JSON, naming routing.overlay.file and the reason', async () => {
    const dir = tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, '{"local_site": "east", "candidates": [');
    const { code, stdout, stderr } = await runCli(['validate', '--config', writeConfig(dir, overlayConfig({ east: east.baseUrl }, { file }))]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /routing\.overlay\.file/);
    assert.match(stderr, /invalid_json|not valid JSON/i);
  });

  const bomb = (baseUrl: string): string => `server: { listen: "127.0.0.1:0", admin_listen: "127.0.0.1:0" }
providers:
  east: { type: openai, base_url: "${baseUrl}", headers: &h { a: b } }
  west: { type: openai, base_url: "http://127.0.0.1:2/v1", headers: &h2 { a: *h, b: *h, c: *h, d: *h, e: *h, f: *h, g: *h, h: *h, i: *h, j: *h, k: *h } }
  central: { type: openai, base_url: "http://127.0.0.1:3/v1", headers: { a: *h2, b: *h2, c: *h2, d: *h2, e: *h2, f: *h2, g: *h2, h: *h2, i: *h2, j: *h2, k: *h2 } }
routing: { routes: { m: { candidates: [ { provider: east } ] } } }
`;

  it('validate exits 1 on a YAML alias bomb with a message about aliases, not a crash', async () => {
    const dir = tempDir();
    const { code, stdout, stderr } = await runCli(['validate', '--config', writeConfig(dir, bomb(east.baseUrl))]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /alias/i);
    assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  });

  it('a reload onto a YAML alias bomb answers 422 rejected, is in /admin/status history and counted as rejected; SIGHUP survives it too', async () => {
    const gw = await startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    gw.writeConfig(bomb(east.baseUrl));
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.status, 422, reload.text);
    assert.equal(reload.body.result, 'rejected', reload.text);
    assert.ok(reload.body.errors.some((e) => /alias/i.test(e.message)), reload.text);

    gw.child.kill('SIGHUP');
    await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'sighup');

    const status = await adminStatus(gw.adminUrl!);
    const history = status.body.reloads.map((r) => `${r.trigger}:${r.result}`);
    assert.ok(history.includes('admin:rejected'), JSON.stringify(history));
    assert.ok(history.includes('sighup:rejected'), JSON.stringify(history));
    assert.equal(status.body.generation?.number, 1);
    const metrics = await scrapeMetrics(gw.url);
    assert.equal(metricValue(metrics, 'switchyard_reload_total', { trigger: 'admin', result: 'rejected' }), 1);
    assert.equal((await postChat(gw.url, chatBody('m'))).status, 200, 'still serving');
  });
});

// ---------------------------------------------------------------------------------------

describe('finding 9: safety-net re-checks that find nothing new stay out of the reload history', () => {
  it('with recheck_ms 100, a rejected admin reload is still in /admin/status history after more than 20 re-checks', async () => {
    const dir = tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, legacyOverlay('m'));
    const gw = await startGw(overlayConfig({ east: east.baseUrl }, { file, reload: { enabled: true, debounce_ms: 50, recheck_ms: 100 } }), { dir });
    gw.writeConfig('providers: [');
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.body.result, 'rejected', reload.text);

    // More re-checks than the history holds (20): counted where the counter shows them,
    // else bounded by the 100 ms re-check period.
    const rechecks = async (): Promise<number> => {
      const text = await scrapeMetrics(gw.url);
      return ['applied', 'unchanged', 'rejected'].reduce((n, result) => n + (metricValue(text, 'switchyard_reload_total', { trigger: 'overlay_recheck', result }) ?? 0), 0);
    };
    for (let i = 0; i < 60 && (await rechecks()) < 25; i++) await delay(50);
    if ((await rechecks()) < 25) await delay(1500);

    const status = await adminStatus(gw.adminUrl!);
    const history = status.body.reloads.map((r) => `${r.trigger}:${r.result}`);
    assert.ok(history.includes('admin:rejected'), `the rejected admin reload fell out of the history: ${JSON.stringify([...new Set(history)])}`);
    assert.ok(!history.includes('overlay_recheck:unchanged'), JSON.stringify([...new Set(history)]));
  });
});
