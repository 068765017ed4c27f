import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { hashKey } from '../../src/governance/index.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { baseConfig, type GatewayProcess, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';

// A managed Redis asks for a password, an ACL user or TLS, and the config gives them as
// references (governance.redis_password / redis_username) and files (governance.redis_tls).
// Each case runs real gateway processes against a private redis-server on a spare loopback
// port (never the shared one), with a team of rpm 1: a 200 then a 429 proves the store was
// reached and counts. A wrong password must fail by on_store_error (fail_closed: 503), and
// no password may reach a log line, the CLI's output or /admin/status.

const KEY = 'sy-redis-auth-test-key-0001';
const PREFIX = 'switchyard-test-auth:';
// Random, so a password found in some output can only have come from this test's config.
const PASSWORD = `sy-pw-${randomBytes(12).toString('hex')}`;
const WRONG_PASSWORD = `sy-wrong-${randomBytes(12).toString('hex')}`;
const ACL_PASSWORD = `sy-acl-${randomBytes(12).toString('hex')}`;
/** The name in the test server certificate's SAN: not 127.0.0.1, so server_name is what makes it verify. */
const SERVER_NAME = 'redis.switchyard.test';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-redis-auth-'));
const running: ChildProcess[] = [];
const gateways: GatewayProcess[] = [];
let mock: MockProvider;

function governanceConfig(governance: Record<string, unknown>): Record<string, unknown> {
  return baseConfig(
    { east: mock.baseUrl },
    { m: { candidates: [{ provider: 'east' }] } },
    {
      teams: { t: { rate_limit: { rpm: 1 } } },
      keys: [{ id: 'k', team: 't', sha256: hashKey(KEY) }],
      governance: { store: 'redis', key_prefix: PREFIX, on_store_error: 'fail_closed', ...governance },
    },
  );
}

async function gateway(governance: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(governanceConfig(governance), { env });
  gateways.push(gw);
  return gw;
}

async function redisOn(options: Parameters<typeof startRedis>[1] = {}): Promise<number> {
  const port = await freePort();
  running.push(await startRedis(port, options));
  return port;
}

const ask = (gw: GatewayProcess) => postChat(gw.url, chatBody('m'), { authorization: `Bearer ${KEY}` });

/** rpm 1: the first request is served and counted in Redis, so the second is refused. */
async function assertServesAndCounts(gw: GatewayProcess): Promise<void> {
  const first = await ask(gw);
  assert.equal(first.status, 200, first.text);
  const second = await ask(gw);
  assert.equal(second.status, 429, `rpm 1 holds, so the store counted the first: ${second.text}`);
}

/** Neither the gateway's output nor its /admin/status holds any of the secrets. */
async function assertNoSecretShown(gw: GatewayProcess, secrets: readonly string[]): Promise<void> {
  const status = await (await fetch(`${gw.adminUrl}/admin/status`)).text();
  for (const secret of secrets) {
    assert.ok(!gw.output.some((line) => line.includes(secret)), 'a password appears in the gateway output');
    assert.ok(!status.includes(secret), 'a password appears in /admin/status');
  }
}

function writeSecret(name: string, value: string): string {
  const path = join(dir, name);
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  return path;
}

function writeConfig(name: string, config: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, stringify(config));
  return path;
}

/** A CA, a server certificate for SERVER_NAME and a client certificate, or why they cannot be made. */
function makeCertificates(): { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string } | string {
  if (spawnSync('openssl', ['version']).status !== 0) return 'openssl is not installed';
  const file = (name: string): string => join(dir, name);
  const run = (args: string[]): string | null => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    return r.status === 0 ? null : `openssl ${args[0]} failed: ${r.stderr}`;
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  writeFileSync(file('server.ext'), `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`);
  writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
  const steps = [
    ['req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2', '-subj', '/CN=switchyard test CA'],
    ['req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', `/CN=${SERVER_NAME}`],
    ['x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-set_serial', '1'],
    ['req', ...ec, '-keyout', file('client.key'), '-out', file('client.csr'), '-subj', '/CN=switchyard gateway'],
    ['x509', '-req', '-in', file('client.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-set_serial', '2'],
  ];
  steps[2]?.push('-days', '2', '-extfile', file('server.ext'), '-out', file('server.pem'));
  steps[4]?.push('-days', '2', '-extfile', file('client.ext'), '-out', file('client.pem'));
  for (const step of steps) {
    const failed = run(step);
    if (failed !== null) return failed;
  }
  return {
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
  };
}

before(async () => {
  mock = await startMockProvider({ name: 'east' });
});

after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(running.map((r) => stopRedis(r)));
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a Redis that requires a password (requirepass)', () => {
  let port: number;
  let right: GatewayProcess;
  let wrong: GatewayProcess;
  const withPassword = (value: string) =>
    gateway(
      { redis_url: `redis://127.0.0.1:${port}`, redis_password: { env: 'SY_TEST_REDIS_PASSWORD' } },
      { SY_TEST_REDIS_PASSWORD: value },
    );

  before(async () => {
    port = await redisOn({ args: ['--requirepass', PASSWORD] });
    // Started together: a gateway whose store never connects waits out its start-up grace (5 s) before it listens.
    [right, wrong] = await Promise.all([withPassword(PASSWORD), withPassword(WRONG_PASSWORD)]);
  });

  it('the password from an {env} reference authenticates: the gateway serves and counts', async () => {
    await assertServesAndCounts(right);
    await assertNoSecretShown(right, [PASSWORD]);
  });

  it('a wrong password is a store failure: fail_closed answers 503 governance_unavailable, and no log line holds it', async () => {
    const refused = await ask(wrong);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.json<{ error: { code: string } }>().error.code, 'governance_unavailable');
    const refusalLogged = wrong
      .logs()
      .some((l) => typeof l.msg === 'string' && l.msg.startsWith('governance store') && String(l.detail ?? l.error).includes('WRONGPASS'));
    assert.ok(refusalLogged, `Redis's refusal is logged: ${wrong.output.slice(-10).join('\n')}`);
    await assertNoSecretShown(wrong, [WRONG_PASSWORD, PASSWORD]);
  });

  it('a password the environment lacks stops the start, naming governance.redis_password and not any value', async () => {
    const path = writeConfig(
      'missing-password.yaml',
      governanceConfig({ redis_url: `redis://127.0.0.1:${port}`, redis_password: { env: 'SY_TEST_REDIS_PASSWORD_UNSET' } }),
    );
    const run = await runCli(['serve', '--config', path], { SY_TEST_REDIS_PASSWORD_UNSET: '' });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /governance\.redis_password: environment variable SY_TEST_REDIS_PASSWORD_UNSET is not set/);
  });
});

describe('a Redis ACL user with only the commands and keys the store uses', () => {
  let port: number;
  before(async () => {
    // The default user is off, so only the ACL user gets in; its commands are the scripts'
    // calls, the store's EVALSHA/EVAL/SCRIPT LOAD/TIME, GET/SET/DEL for its response records
    // and ioredis's INFO ready check, and its keys are the prefix's (docs/governance.md lists the same).
    const commands = ['evalsha', 'eval', 'script|load', 'time', 'info', 'get', 'set', 'del']
      .concat(['exists', 'pexpire', 'hdel', 'hincrby', 'hkeys', 'hmget', 'hset'])
      .concat(['zadd', 'zcount', 'zmscore', 'zrange', 'zrangebyscore', 'zrem', 'zremrangebyscore'])
      .map((c) => `+${c}`);
    port = await redisOn({
      args: ['--user', 'default', 'off', '--user', 'sy-gateway', 'on', `>${ACL_PASSWORD}`, `~${PREFIX}*`, '-@all', ...commands],
    });
  });

  it('redis_username and a redis_password from a {file} reference authenticate as that user: the gateway serves and counts', async () => {
    const gw = await gateway(
      {
        redis_url: `redis://127.0.0.1:${port}`,
        redis_username: { env: 'SY_TEST_REDIS_USER' },
        redis_password: { file: writeSecret('acl-password', ACL_PASSWORD) },
      },
      { SY_TEST_REDIS_USER: 'sy-gateway' },
    );
    await assertServesAndCounts(gw);
    await assertNoSecretShown(gw, [ACL_PASSWORD]);
  });
});

describe('a Redis that speaks TLS only (rediss://)', () => {
  const certs = makeCertificates();
  let skip: string | null = typeof certs === 'string' ? `no test certificates: ${certs}` : null;
  let verified: GatewayProcess;
  let systemCas: GatewayProcess;
  let mutual: GatewayProcess;

  before(async () => {
    if (typeof certs === 'string') return;
    const tls = { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca };
    let serverOnlyPort: number;
    let mutualPort: number;
    try {
      serverOnlyPort = await redisOn({ tls: { ...tls, authClients: false }, args: ['--requirepass', PASSWORD] });
      mutualPort = await redisOn({ tls: { ...tls, authClients: true } });
    } catch (err) {
      skip = `redis-server cannot serve TLS here (built without it?): ${(err as Error).message.slice(0, 300)}`;
      return;
    }
    const password = { redis_password: { env: 'SY_TEST_REDIS_PASSWORD' } };
    const env = { SY_TEST_REDIS_PASSWORD: PASSWORD };
    [verified, systemCas, mutual] = await Promise.all([
      gateway(
        { redis_url: `rediss://127.0.0.1:${serverOnlyPort}`, ...password, redis_tls: { ca: { file: certs.ca }, server_name: SERVER_NAME } },
        env,
      ),
      gateway({ redis_url: `rediss://127.0.0.1:${serverOnlyPort}`, ...password }, env),
      gateway({
        redis_url: `rediss://127.0.0.1:${mutualPort}`,
        redis_tls: { ca: { file: certs.ca }, cert: { file: certs.clientCert }, key: { file: certs.clientKey }, server_name: SERVER_NAME },
      }),
    ]);
  });

  it('redis_tls.ca and server_name verify the server: the gateway serves and counts (with a password, over TLS)', async (t) => {
    if (skip !== null) return t.skip(skip);
    await assertServesAndCounts(verified);
    await assertNoSecretShown(verified, [PASSWORD]);
  });

  it('a rediss:// URL without redis_tls verifies against the system CAs, so a private CA is refused (503)', async (t) => {
    if (skip !== null) return t.skip(skip);
    const refused = await ask(systemCas);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.json<{ error: { code: string } }>().error.code, 'governance_unavailable');
    // The refusal is the certificate check's, not a plain connection failure.
    const unverified = systemCas.logs().some((l) => l.msg === 'governance store error' && /certificate/.test(String(l.detail)));
    assert.ok(unverified, `the certificate is refused: ${systemCas.output.slice(-5).join('\n')}`);
  });

  it('redis_tls.cert and key give the client certificate a Redis with tls-auth-clients yes requires', async (t) => {
    if (skip !== null) return t.skip(skip);
    await assertServesAndCounts(mutual);
  });

  it('an unreadable redis_tls file stops the start, naming its key', async () => {
    const path = writeConfig(
      'missing-ca.yaml',
      governanceConfig({ redis_url: 'rediss://127.0.0.1:1', redis_tls: { ca: { file: join(dir, 'no-such-ca.pem') } } }),
    );
    const run = await runCli(['serve', '--config', path]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /governance\.redis_tls\.ca: governance\.redis_tls\.ca file ".*no-such-ca\.pem"/);
  });
});

describe('switchyard validate on the store settings', () => {
  it('refuses a password inside redis_url, naming governance.redis_url and pointing at governance.redis_password', async () => {
    const path = writeConfig('password-in-url.yaml', governanceConfig({ redis_url: `redis://:${PASSWORD}@127.0.0.1:6390` }));
    const run = await runCli(['validate', '--config', path]);
    assert.equal(run.code, 1, run.stdout);
    assert.match(run.stderr, /governance\.redis_url: must not contain a password: give it as governance\.redis_password/);
    assert.ok(!`${run.stdout}${run.stderr}`.includes(PASSWORD), 'the password is not echoed');
  });

  it('refuses redis_tls over redis:// and a redis_username without a redis_password, each by its key', async () => {
    const path = writeConfig(
      'tls-over-plain.yaml',
      governanceConfig({ redis_url: 'redis://127.0.0.1:6390', redis_tls: { server_name: SERVER_NAME }, redis_username: { env: 'U' } }),
    );
    const run = await runCli(['validate', '--config', path]);
    assert.equal(run.code, 1, run.stdout);
    assert.match(run.stderr, /governance\.redis_tls: applies to a rediss:\/\/ URL only/);
    assert.match(run.stderr, /governance\.redis_password: is required with governance\.redis_username/);
  });

  it('reports a password reference that does not resolve, naming governance.redis_password, before any serve', async () => {
    const path = writeConfig(
      'validate-missing-password.yaml',
      governanceConfig({ redis_url: 'redis://127.0.0.1:6390', redis_password: { env: 'SY_TEST_REDIS_PASSWORD_UNSET' } }),
    );
    const run = await runCli(['validate', '--config', path], { SY_TEST_REDIS_PASSWORD_UNSET: '' });
    assert.equal(run.code, 1, run.stdout);
    assert.match(run.stderr, /governance\.redis_password: environment variable SY_TEST_REDIS_PASSWORD_UNSET is not set/);
  });
});
