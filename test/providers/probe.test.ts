import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SwitchyardError } from '../../src/errors.js';
import { AddressList, Credential, judgeAddress, probeProvider } from '../../src/providers/index.js';
import { createTestCa, issueTestCertificate } from '../support/test-ca.js';

// The probe's address pin, on a real loopback server: the name is resolved once, judged by
// that answer, and the connection goes to that address with the name kept as the Host, so a
// resolver that answers differently later (DNS rebinding) is never asked again.

let port: number;
const seen: IncomingHttpHeaders[] = [];
const server = createServer((req, res) => {
  seen.push(req.headers);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ object: 'list', data: [{ id: 'pinned-model' }] }));
});
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const LOOPBACK = new AddressList(['127.0.0.0/8']);

function draft(host: string) {
  return {
    config: { type: 'openai' as const, base_url: `http://${host}:${port}/v1` },
    credential: new Credential('sk-pinned', 'env:PINNED'),
    headers: { 'x-team': 'probe' },
    connectTimeoutMs: 2000,
    answerTimeoutMs: 2000,
  };
}

describe('probeProvider', () => {
  it('connects to the address the name resolved to once, with the name as Host', async () => {
    let lookups = 0;
    const answer = await probeProvider(draft('models.internal.example'), LOOPBACK, async () => {
      lookups += 1;
      return lookups === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '169.254.169.254', family: 4 }];
    });
    assert.equal(lookups, 1);
    assert.deepEqual(answer, { reachable: true, tls: 'none', auth: 'accepted', latency_ms: answer.latency_ms, models: ['pinned-model'] });
    const headers = seen.at(-1);
    assert.equal(headers?.host, `models.internal.example:${port}`);
    assert.equal(headers?.authorization, 'Bearer sk-pinned');
    assert.equal(headers?.['x-team'], 'probe');
  });

  it('refuses a name that resolves to a metadata address before connecting', async () => {
    const count = seen.length;
    await assert.rejects(
      probeProvider(draft('rebind.example'), new AddressList(['169.254.0.0/16']), async () => [{ address: '169.254.169.254', family: 4 }]),
      (err: unknown) =>
        err instanceof SwitchyardError && err.code === 'probe_address_not_allowed' && /resolves to 169.254.169.254/.test(err.message),
    );
    assert.equal(seen.length, count);
  });

  it('answers a name that does not resolve as unreachable', async () => {
    const answer = await probeProvider(draft('nowhere.example'), LOOPBACK, async () => {
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    });
    assert.equal(answer.reachable, false);
    assert.equal(answer.auth, null);
    assert.match(answer.error ?? '', /does not resolve \(ENOTFOUND\)/);
  });
});

describe('probeProvider over https', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-probe-tls-'));
  let tlsPort: number;
  let ca: string;
  const tlsServer = createHttpsServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":[{"id":"tls-model"}]}');
  });
  before(async () => {
    createTestCa(dir, 'probe test CA');
    // The certificate names the host only: a check against the pinned IP would fail.
    issueTestCertificate(dir, 'models', 'models.test', 'subjectAltName=DNS:models.test');
    ca = readFileSync(join(dir, 'ca.pem'), 'utf8');
    tlsServer.setSecureContext({ key: readFileSync(join(dir, 'models.key')), cert: readFileSync(join(dir, 'models.pem')) });
    await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
    tlsPort = (tlsServer.address() as AddressInfo).port;
  });
  after(async () => {
    await new Promise<void>((resolve) => tlsServer.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const secured = (host: string, withCa: boolean) => ({
    config: { type: 'openai' as const, base_url: `https://${host}:${tlsPort}/v1` },
    credential: null,
    headers: {},
    ...(withCa ? { tls: { ca } } : {}),
    connectTimeoutMs: 2000,
    answerTimeoutMs: 2000,
  });
  const toLoopback = async () => [{ address: '127.0.0.1', family: 4 }];

  it('verifies the certificate against the name, at the pinned address', async () => {
    const answer = await probeProvider(secured('models.test', true), LOOPBACK, toLoopback);
    assert.equal(answer.tls, 'verified');
    assert.deepEqual(answer.models, ['tls-model']);
  });

  it('reports a certificate it cannot verify, or one for another name, as a failed TLS, unreachable', async () => {
    const unknownCa = await probeProvider(secured('models.test', false), LOOPBACK, toLoopback);
    assert.match(unknownCa.tls, /^failed: /);
    assert.equal(unknownCa.reachable, false);
    assert.equal(unknownCa.auth, null);
    const otherName = await probeProvider(secured('other.test', true), LOOPBACK, toLoopback);
    assert.equal(otherName.tls, 'failed: ERR_TLS_CERT_ALTNAME_INVALID');
  });
});

describe('judgeAddress', () => {
  it('lets a public address through with no list, and names the class of a refused one', () => {
    assert.doesNotThrow(() => judgeAddress('example.com', '93.184.215.14', new AddressList([])));
    assert.throws(() => judgeAddress('10.0.0.1', '10.0.0.1', new AddressList([])), /the host 10.0.0.1 is a private address, which/);
    assert.throws(() => judgeAddress('[fe80::1]', 'fe80::1', LOOPBACK), /the host \[fe80::1\] is a link-local address: never probed/);
  });
});

describe('probeProvider with an Entra ID token endpoint', () => {
  const got: Array<{ path: string; host: string | undefined; authorization: string | undefined }> = [];
  const cloud = createServer((req, res) => {
    got.push({ path: req.url ?? '', host: req.headers.host, authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          req.method === 'POST'
            ? { token_type: 'Bearer', expires_in: 3600, access_token: 'entra-pinned-token' }
            : { object: 'list', data: [{ id: 'gpt-4o' }] },
        ),
      );
    });
  });
  let cloudPort: number;
  before(async () => {
    await new Promise<void>((resolve) => cloud.listen(0, '127.0.0.1', resolve));
    cloudPort = (cloud.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => cloud.close(() => resolve())));

  function entraDraft(authorityName: string) {
    return {
      config: { type: 'azure_openai' as const, base_url: `http://resource.example:${cloudPort}`, api_version: '2024-10-21' },
      credential: null,
      headers: {},
      connectTimeoutMs: 2000,
      answerTimeoutMs: 2000,
      cloud: {
        kind: 'entra' as const,
        spec: {
          providerName: 'draft',
          // An http authority, which the config schema refuses: here only to see the pinned connection's Host in clear.
          authorityHost: `http://${authorityName}:${cloudPort}`,
          tenantId: 'tenant-1',
          clientId: 'app-1',
          clientSecret: new Credential('entra-secret', 'env:ENTRA_SECRET'),
          assertionFile: null,
        },
      },
    };
  }

  it('resolves the authority once, judges it and fetches the token from that address, then calls with it', async () => {
    const lookups: Record<string, number> = {};
    const answer = await probeProvider(entraDraft('login.example'), LOOPBACK, async (host) => {
      lookups[host] = (lookups[host] ?? 0) + 1;
      return lookups[host] === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '169.254.169.254', family: 4 }];
    });
    assert.deepEqual(lookups, { 'resource.example': 1, 'login.example': 1 });
    assert.equal(answer.auth, 'accepted', answer.error);
    assert.deepEqual(answer.models, ['gpt-4o']);
    const [grant, call] = got.slice(-2);
    assert.deepEqual(grant, { path: '/tenant-1/oauth2/v2.0/token', host: `login.example:${cloudPort}`, authorization: undefined });
    assert.equal(call?.host, `resource.example:${cloudPort}`);
    assert.equal(call?.authorization, 'Bearer entra-pinned-token');
  });

  it('refuses an authority that resolves to a metadata address before sending anything, naming auth.authority_host', async () => {
    const count = got.length;
    await assert.rejects(
      probeProvider(entraDraft('rebind.example'), LOOPBACK, async (host) =>
        host === 'rebind.example' ? [{ address: '169.254.169.254', family: 4 }] : [{ address: '127.0.0.1', family: 4 }],
      ),
      (err: unknown) => err instanceof SwitchyardError && err.code === 'probe_address_not_allowed' && err.param === 'auth.authority_host',
    );
    assert.equal(got.length, count, 'neither the authority nor the resource was asked');
  });
});
