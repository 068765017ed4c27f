import assert from 'node:assert/strict';
import { createVerify, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { AwsSigner, awsKeySource, Credential, gcpTokenSource, type TokenEvent } from '../../src/providers/index.js';
import { startLocalSts } from '../support/local-sts.js';

// The cloud credential sources against local authorities: STS's web identity exchange
// (through the AWS SDK's own provider), Google's JWT-bearer grant and metadata server
// (through google-auth-library), and the SigV4 signature checked by a signer of its own.

function listen(
  handler: (req: IncomingMessage, body: string) => { status: number; body: unknown; headers?: Record<string, string> },
): Promise<{
  server: Server;
  url: string;
  hits: number[];
}> {
  const hits: number[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      hits.push(Date.now());
      const out = handler(req, body);
      res.writeHead(out.status, { 'content-type': 'application/json', ...out.headers });
      res.end(JSON.stringify(out.body));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits })),
  );
}

const close = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

describe('AWS keys', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sy-aws-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a web identity is exchanged at STS for temporary keys, with the role, the session name and the token file as it is now', async () => {
    const sts = await startLocalSts({ roleArn: 'arn:aws:iam::123456789012:role/gw', webIdentityToken: 'jwt-from-kubelet', durationS: 900 });
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'jwt-from-kubelet');
    const events: TokenEvent[] = [];
    const source = awsKeySource(
      {
        providerName: 'bedrock',
        kind: 'web_identity',
        region: 'us-east-1',
        roleArn: 'arn:aws:iam::123456789012:role/gw',
        tokenFile,
        sessionName: 'switchyard-bedrock',
        stsEndpoint: sts.url,
      },
      (e) => events.push(e),
    );
    try {
      await source.start();
      const keys = source.current();
      assert.ok(keys !== null, source.problem());
      assert.deepEqual(keys, sts.issued[0]);
      assert.equal(sts.requests[0]?.RoleSessionName, 'switchyard-bedrock');
      assert.equal(sts.requests[0]?.WebIdentityToken, 'jwt-from-kubelet');
      const fetched = events.find((e) => e.kind === 'fetched');
      assert.ok(fetched?.kind === 'fetched' && fetched.what === 'AWS credentials');
      // 15 minutes: refreshed 5 minutes before the end (at 10), which comes before 80% (12).
      assert.ok(fetched.lifetimeS !== null && fetched.lifetimeS > 600 && fetched.lifetimeS <= 900, String(fetched.lifetimeS));
      assert.equal(fetched.refreshInMs, Math.round((fetched.lifetimeS - 300) * 1000));
      for (const text of [JSON.stringify({ source }), inspect(source)]) {
        assert.ok(!text.includes(keys.secretAccessKey) && !text.includes(keys.sessionToken ?? '-'), text);
      }
    } finally {
      source.stop();
      await sts.close();
    }
  });

  it('a refused web identity leaves no keys, and the reason names STS answer, never the token', async () => {
    const sts = await startLocalSts({ roleArn: 'arn:aws:iam::123456789012:role/gw', webIdentityToken: 'the-right-one' });
    const tokenFile = join(dir, 'wrong');
    writeFileSync(tokenFile, 'a-stale-token');
    const source = awsKeySource(
      {
        providerName: 'b',
        kind: 'web_identity',
        region: 'us-east-1',
        roleArn: 'arn:aws:iam::123456789012:role/gw',
        tokenFile,
        sessionName: 's',
        stsEndpoint: sts.url,
      },
      () => {},
    );
    try {
      await source.start();
      assert.equal(source.current(), null);
      assert.match(
        source.problem(),
        /AWS credentials unavailable: STS AssumeRoleWithWebIdentity answered 400 \(InvalidIdentityToken(Exception)?\)/,
      );
      assert.ok(!source.problem().includes('a-stale-token'));
    } finally {
      source.stop();
      await sts.close();
    }
  });

  it('signs over the exact bytes, host and path sent: another signer with the same keys computes the same signature', async () => {
    const keys = awsKeySource(
      {
        providerName: 'b',
        kind: 'keys',
        accessKeyId: new Credential('AKIDEXAMPLE', 'env:AK'),
        secretAccessKey: new Credential('wJalrXUtnFEMI/K7MDENG', 'env:SK'),
        sessionToken: null,
      },
      () => {},
    );
    await keys.start();
    const signer = new AwsSigner(keys, 'eu-west-1', 'http://127.0.0.1:8443/prefix/');
    const body = '{"messages":[{"role":"user","content":[{"text":"hi é"}]}]}';
    const path = '/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse';
    const headers = { 'content-type': 'application/json', 'x-request-id': 'r1' };
    const signed = await signer.sign('POST', path, headers, Buffer.from(body));
    const auth = signed.authorization ?? '';
    assert.match(
      auth,
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    const date = signed['x-amz-date'] ?? '';
    const check = new SignatureV4({
      service: 'bedrock',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG' },
      sha256: Hash.bind(null, 'sha256'),
    });
    const again = await check.sign(
      {
        method: 'POST',
        protocol: 'http:',
        hostname: '127.0.0.1',
        port: 8443,
        path: `/prefix${path}`,
        query: {},
        headers: { host: '127.0.0.1:8443', 'content-type': 'application/json' },
        body,
      },
      {
        signingDate: new Date(
          `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
        ),
      },
    );
    assert.equal(again.headers.authorization, auth);
    const tampered = await signer.sign('POST', path, headers, Buffer.from(body.replace('hi', 'ho')));
    assert.notEqual(tampered.authorization?.split('Signature=')[1], auth.split('Signature=')[1]);
    keys.stop();
  });
});

describe('Google Cloud tokens', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sy-gcp-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a service account's JWT-bearer grant goes to the configured token_url, signed with its key", async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    let claims: Record<string, unknown> = {};
    const endpoint = await listen((req, body) => {
      const form = new URLSearchParams(body);
      const [h, c, sig] = (form.get('assertion') ?? '').split('.');
      const ok = createVerify('RSA-SHA256')
        .update(`${h}.${c}`)
        .verify(publicKey, Buffer.from(sig ?? '', 'base64url'));
      claims = JSON.parse(Buffer.from(c ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
      if (req.url !== '/token' || form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer' || !ok)
        return { status: 400, body: { error: 'invalid_grant' } };
      return { status: 200, body: { access_token: 'ya29.local', expires_in: 120, token_type: 'Bearer' } };
    });
    const source = gcpTokenSource(
      {
        providerName: 'vertex',
        kind: 'service_account',
        keyFile: join(dir, 'sa.json'),
        clientEmail: 'gw@proj.iam.gserviceaccount.com',
        privateKey: new Credential(pem, 'file:sa.json'),
        tokenUrl: `${endpoint.url}/token`,
      },
      () => {},
    );
    try {
      await source.start();
      assert.equal(source.bearer(), 'ya29.local', source.problem());
      assert.equal(claims.iss, 'gw@proj.iam.gserviceaccount.com');
      assert.equal(claims.scope, 'https://www.googleapis.com/auth/cloud-platform');
      assert.ok(!inspect(source).includes('ya29.local') && !JSON.stringify({ source }).includes('PRIVATE KEY'));
    } finally {
      source.stop();
      await close(endpoint.server);
    }
  });

  it('a token endpoint that refuses or is down leaves no token, once (no retries of its own), and says why', async () => {
    const endpoint = await listen(() => ({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } }));
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const spec = {
      providerName: 'vertex',
      kind: 'service_account' as const,
      keyFile: 'sa.json',
      clientEmail: 'gw@proj.iam.gserviceaccount.com',
      privateKey: new Credential(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 'file:sa.json'),
      tokenUrl: `${endpoint.url}/token`,
    };
    const refused = gcpTokenSource(spec, () => {});
    try {
      await refused.start();
      assert.equal(refused.bearer(), null);
      assert.match(refused.problem(), /Google Cloud token unavailable: the token endpoint answered 400, invalid_grant/);
      assert.equal(endpoint.hits.length, 1, 'the library did not retry on its own');
    } finally {
      refused.stop();
      await close(endpoint.server);
    }
    // The endpoint's port, now closed: nothing listens there.
    const down = gcpTokenSource({ ...spec, tokenUrl: `${endpoint.url}/token` }, () => {});
    await down.start();
    assert.match(down.problem(), /Google Cloud token unavailable: the token request failed \(ECONNREFUSED\)/);
    down.stop();
  });

  it("the metadata server's token (GKE workload identity), found through GCE_METADATA_HOST", async () => {
    const metadata = await listen((req) =>
      req.headers['metadata-flavor'] === 'Google' && req.url?.startsWith('/computeMetadata/v1/instance/service-accounts/default/token')
        ? {
            status: 200,
            body: { access_token: 'ya29.node', expires_in: 3599, token_type: 'Bearer' },
            headers: { 'metadata-flavor': 'Google' },
          }
        : { status: 404, body: {}, headers: { 'metadata-flavor': 'Google' } },
    );
    const before = process.env.GCE_METADATA_HOST;
    process.env.GCE_METADATA_HOST = metadata.url.slice('http://'.length);
    const source = gcpTokenSource({ providerName: 'vertex', kind: 'metadata_server' }, () => {});
    try {
      await source.start();
      assert.equal(source.bearer(), 'ya29.node', source.problem());
      assert.equal(source.source, 'gcp:metadata_server');
    } finally {
      source.stop();
      if (before === undefined) delete process.env.GCE_METADATA_HOST;
      else process.env.GCE_METADATA_HOST = before;
      await close(metadata.server);
    }
  });
});
