import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, configText, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { closedPort } from '../support/observe.js';

// Invariant 7: secrets never appear in a log line, an admin view or an error message; config
// carries references only, and a literal key in config is refused. The values are distinctive
// fakes so that a leak anywhere is found by a plain substring search.

const EAST_KEY = 'test-secret-value-0123456789';
const DEAD_KEY = 'test-secret-dead-provider-4242424242';
const FILE_KEY = 'test-secret-file-value-9876543210';
const ROTATED_FILE_KEY = 'test-secret-file-rotated-1357913579';
const ADMIN_TOKEN = 'test-secret-admin-token-2468024680';
const SECRETS = [EAST_KEY, DEAD_KEY, FILE_KEY, ROTATED_FILE_KEY, ADMIN_TOKEN];

let east: MockProvider;
let west: MockProvider;
let gw: GatewayProcess;
let dir: string;
let secretFile: string;
let config: Record<string, any>;
/** Everything the gateway returned to a client or an operator: checked for secrets at the end. */
const returned: string[] = [];

function leaks(text: string): string[] {
  return SECRETS.filter((s) => text.includes(s));
}

function lastAuthorization(mock: MockProvider): unknown {
  const recent = mock.stats().recent.filter((r) => r.path === '/v1/chat/completions');
  return recent[recent.length - 1]?.headers.authorization;
}

async function remember(res: Response): Promise<{ status: number; text: string; headers: Headers }> {
  const text = await res.text();
  returned.push(text, JSON.stringify([...res.headers]));
  return { status: res.status, text, headers: res.headers };
}

async function chat(model: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const r = await postChat(gw.url, chatBody(model), headers);
  returned.push(r.text, JSON.stringify([...r.headers]));
  return r;
}

function admin(path: string, init: RequestInit = {}, token: string | null = ADMIN_TOKEN): Promise<Response> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  return fetch(`${gw.adminUrl}${path}`, { ...init, headers });
}

describe('secrets', () => {
  before(async () => {
    [east, west] = await Promise.all([startMockProvider({ name: 'east' }), startMockProvider({ name: 'west' })]);
    dir = mkdtempSync(join(tmpdir(), 'switchyard-secrets-'));
    secretFile = join(dir, 'west-api-key');
    writeFileSync(secretFile, `${FILE_KEY}\n`);
    const deadPort = await closedPort();
    config = baseConfig(
      { east: east.baseUrl, west: west.baseUrl, dead: `http://127.0.0.1:${deadPort}/v1` },
      {
        'east-model': { candidates: [{ provider: 'east' }] },
        'west-model': { candidates: [{ provider: 'west' }] },
        'fail-model': { policy: 'ordered', candidates: [{ provider: 'dead' }, { provider: 'east' }] },
      },
      {
        server: { admin_token: { env: 'SWITCHYARD_TEST_ADMIN_TOKEN' } },
        // Every failure must reach every candidate here; breakers are tested elsewhere.
        resilience: { breaker: { failure_threshold: 1000 } },
        // The most verbose level: a secret must not appear at any level.
        log: { level: 'trace' },
      },
    );
    config.providers.east.api_key = { env: 'SWITCHYARD_TEST_EAST_KEY' };
    config.providers.dead.api_key = { env: 'SWITCHYARD_TEST_DEAD_KEY' };
    config.providers.west.api_key = { file: secretFile };
    gw = await startGatewayProcess(config, {
      dir,
      env: { SWITCHYARD_TEST_EAST_KEY: EAST_KEY, SWITCHYARD_TEST_DEAD_KEY: DEAD_KEY, SWITCHYARD_TEST_ADMIN_TOKEN: ADMIN_TOKEN },
    });
  });

  after(async () => {
    await gw?.stop();
    await Promise.all([east?.close(), west?.close()]);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("a provider with api_key {env: NAME} sends Authorization: Bearer <value> upstream, not the client's header", async () => {
    const r = await chat('east-model', { authorization: 'Bearer client-supplied-token' });
    assert.equal(r.status, 200, r.text);
    assert.equal(lastAuthorization(east), `Bearer ${EAST_KEY}`);
  });

  it("a provider with api_key {file: PATH} sends the file's value without its trailing newline", async () => {
    const r = await chat('west-model');
    assert.equal(r.status, 200, r.text);
    assert.equal(lastAuthorization(west), `Bearer ${FILE_KEY}`);
  });

  it('an all-upstreams-failed 502 says what failed and holds no secret', async () => {
    east.addFault({ mode: 'status', status: 500, count: 1 });
    const r = await chat('fail-model');
    assert.equal(r.status, 502, r.text);
    const body = JSON.parse(r.text) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'upstream_error');
    assert.match(body.error.message, /dead/);
    assert.match(body.error.message, /east/);
    assert.deepEqual(leaks(r.text), []);
    assert.equal(lastAuthorization(east), `Bearer ${EAST_KEY}`, 'the failed attempt still authenticated');
  });

  it('client errors (unknown model, bad JSON, unknown path) hold no secret', async () => {
    const r = await chat('no-such-model');
    assert.equal(r.status, 404);
    const bad = await remember(await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: '{not json' }));
    assert.equal(bad.status, 400);
    const missing = await remember(await fetch(`${gw.url}/nothing`));
    assert.equal(missing.status, 404);
    for (const text of [r.text, bad.text, missing.text]) assert.deepEqual(leaks(text), []);
  });

  it('/admin/status shows credential references, never their values', async () => {
    const r = await remember(await admin('/admin/status'));
    assert.equal(r.status, 200, r.text);
    const status = JSON.parse(r.text) as { providers: Array<{ name: string; credential: string | null }> };
    const credentials = Object.fromEntries(status.providers.map((p) => [p.name, p.credential]));
    assert.deepEqual(credentials, {
      east: 'env:SWITCHYARD_TEST_EAST_KEY',
      west: `file:${secretFile}`,
      dead: 'env:SWITCHYARD_TEST_DEAD_KEY',
    });
    assert.deepEqual(leaks(r.text), []);
  });

  it('the admin API refuses a missing or wrong token without echoing the right one', async () => {
    for (const token of [null, 'wrong-token']) {
      const r = await remember(await admin('/admin/status', {}, token));
      assert.equal(r.status, 401, r.text);
      assert.equal(JSON.parse(r.text).error.code, 'unauthorized');
      assert.deepEqual(leaks(r.text), []);
    }
  });

  it('/metrics on both listeners holds no secret', async () => {
    const api = await remember(await fetch(`${gw.url}/metrics`));
    const adm = await remember(await admin('/metrics'));
    for (const r of [api, adm]) {
      assert.equal(r.status, 200);
      assert.match(r.text, /switchyard_requests_total/);
      assert.deepEqual(leaks(r.text), []);
    }
  });

  it('a reload by the admin API and by SIGHUP picks up a rotated file secret and shows neither value', async () => {
    writeFileSync(secretFile, `${ROTATED_FILE_KEY}\n`);
    const r = await remember(await admin('/admin/reload', { method: 'POST' }));
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).result, 'applied');
    assert.deepEqual(leaks(r.text), []);
    const served = await chat('west-model');
    assert.equal(served.status, 200, served.text);
    assert.equal(lastAuthorization(west), `Bearer ${ROTATED_FILE_KEY}`);

    gw.child.kill('SIGHUP');
    await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'sighup');
  });

  it('a reload refused for a missing secret names the reference, keeps serving, and shows no value', async () => {
    const broken = structuredClone(config);
    broken.providers.east.api_key = { env: 'SWITCHYARD_TEST_UNSET_KEY' };
    gw.writeConfig(broken);
    const r = await remember(await admin('/admin/reload', { method: 'POST' }));
    assert.equal(r.status, 422, r.text);
    const result = JSON.parse(r.text) as { result: string; errors: Array<{ path: string; message: string }> };
    assert.equal(result.result, 'rejected');
    assert.ok(
      result.errors.some((e) => e.path === 'providers.east.api_key' && e.message.includes('SWITCHYARD_TEST_UNSET_KEY')),
      r.text,
    );
    assert.deepEqual(leaks(r.text), []);
    const served = await chat('east-model');
    assert.equal(served.status, 200, served.text);
    assert.equal(lastAuthorization(east), `Bearer ${EAST_KEY}`, 'the serving generation kept its credential');
    gw.writeConfig(config);
  });

  it('a request that failed on every upstream is logged with what failed, and that line holds no secret', async () => {
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.model === 'fail-model', 2000).catch(() => undefined);
    assert.ok(line !== undefined, 'the all-candidates-failed request (502) wrote no log line');
    assert.equal(line.status, 502);
    assert.deepEqual(leaks(JSON.stringify(line)), []);
  });

  it('no response body or header returned to a client or operator held a secret', () => {
    assert.ok(returned.length > 10);
    const found = returned.filter((t) => leaks(t).length > 0);
    assert.deepEqual(found, []);
  });

  it('no line the gateway wrote, from start-up to shutdown, holds a secret', async () => {
    const code = await gw.stop();
    assert.equal(code, 0);
    const logs = gw.logs();
    // The checks below mean something only if these lines were written.
    assert.ok(
      logs.some((l) => l.msg === 'request' && l.provider === 'east'),
      'no access log line',
    );
    assert.ok(
      logs.some((l) => l.msg === 'reload' && l.result === 'rejected'),
      'no rejected-reload line',
    );
    assert.ok(
      logs.some((l) => l.msg === 'reload' && l.trigger === 'sighup'),
      'no SIGHUP reload line',
    );
    const leaked = gw.output.filter((line) => leaks(line).length > 0);
    assert.deepEqual(leaked, [], 'secret values in gateway output');
  });
});

describe('a literal secret in config', () => {
  const LITERAL = 'test-literal-key-value-5555555555';
  let literalDir: string;
  let path: string;

  before(() => {
    literalDir = mkdtempSync(join(tmpdir(), 'switchyard-literal-'));
    path = join(literalDir, 'gateway.yaml');
    const c = baseConfig({ east: 'http://127.0.0.1:9/v1' }, { m: { candidates: [{ provider: 'east' }] } });
    (c.providers as Record<string, Record<string, unknown>>).east!.api_key = LITERAL;
    writeFileSync(path, configText(c));
  });

  after(() => rmSync(literalDir, { recursive: true, force: true }));

  for (const command of ['serve', 'validate']) {
    it(`is refused by ${command} with exit 1, naming providers.<name>.api_key and asking for a reference, without echoing it`, async () => {
      const r = await runCli([command, '--config', path]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stderr, /providers\.east\.api_key: .*reference/);
      assert.match(r.stderr, /\{env: NAME\}/);
      assert.ok(!r.stdout.includes(LITERAL) && !r.stderr.includes(LITERAL), 'the literal value was echoed');
    });
  }
});
