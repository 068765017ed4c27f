import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { baseConfig, configText, runCli } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';
import { createTestCa, issueTestCertificate } from '../support/test-ca.js';

// Upstream TLS with a private CA and mutual TLS, against a loopback HTTPS upstream
// whose CA, server and client certificates are made here with openssl, for this run only.

const resources = fileResources('switchyard-upstream-tls-');
let dir: string;
let upstream: Server;
let upstreamUrl: string;

/** A key and a certificate signed by the test CA, with the given names and purpose. */
function issue(name: string, cn: string, ext: string): void {
  issueTestCertificate(dir, name, cn, ext);
}

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-tls',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'over tls' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});

before(async () => {
  dir = resources.tempDir();
  createTestCa(dir, 'switchyard-test-ca');
  issue('server', 'upstream.test', 'subjectAltName=DNS:upstream.test\nextendedKeyUsage=serverAuth\n');
  issue('client', 'switchyard-gateway', 'extendedKeyUsage=clientAuth\n');
  const read = (f: string) => readFileSync(join(dir, f));
  // Mutual TLS: the upstream asks for a client certificate from the same CA and refuses others.
  upstream = createServer(
    { key: read('server.key'), cert: read('server.pem'), ca: read('ca.pem'), requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      req.resume();
      req.on('end', () => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        res.writeHead(200, { 'content-type': 'application/json', 'x-client-cn': String(peer.subject?.CN ?? '') });
        res.end(COMPLETION);
      });
    },
  );
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  resources.addUpstream(() => new Promise<void>((r) => upstream.close(() => r())));
});

function tlsConfig(tls: Record<string, unknown>): Record<string, unknown> {
  const config = baseConfig({ up: upstreamUrl }, { m: { candidates: [{ provider: 'up' }] } });
  const up = (config.providers as Record<string, Record<string, unknown>>).up!;
  up.tls = tls;
  // The upstream's witness of the client certificate it saw, passed on to the test.
  up.expose_headers = ['x-client-cn'];
  return config;
}

const file = (f: string) => ({ file: join(dir, f) });

describe('upstream TLS', () => {
  it("a private CA, a client certificate and server_name: the upstream sees the gateway's certificate and answers", async () => {
    const gw = await resources.startGw(
      tlsConfig({ ca: file('ca.pem'), cert: file('client.pem'), key: file('client.key'), server_name: 'upstream.test' }),
    );
    const r = await postChat(gw.url, chatBody('m'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-client-cn'), 'switchyard-gateway');
    assert.equal(r.json().id, 'chatcmpl-tls');
  });

  it('without the client certificate the upstream refuses the handshake, and without the CA the gateway refuses the server: 502, not a hang', async () => {
    for (const tls of [
      { ca: file('ca.pem'), server_name: 'upstream.test' },
      { cert: file('client.pem'), key: file('client.key'), server_name: 'upstream.test' },
    ]) {
      const gw = await resources.startGw(tlsConfig(tls));
      const r = await postChat(gw.url, chatBody('m'));
      assert.equal(r.status, 502, r.text);
      assert.equal(r.json().error.code, 'upstream_error');
    }
  });

  it('an unreadable TLS file, a cert without its key, or tls on an http base_url is refused with its path', async () => {
    const cases: Array<[Record<string, unknown>, RegExp, string?]> = [
      [{ ca: file('no-such-ca.pem') }, /providers\.up\.tls\.ca: .*not found/],
      [{ ca: file('ca.pem'), cert: file('client.pem') }, /providers\.up\.tls\.key: cert and key go together/],
    ];
    for (const [tls, message] of cases) {
      const path = join(dir, 'check.yaml');
      writeFileSync(path, configText(tlsConfig(tls)));
      const r = await runCli(['validate', '--config', path]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stdout + r.stderr, message);
    }
    const plain = baseConfig({ up: 'http://127.0.0.1:9/v1' }, { m: { candidates: [{ provider: 'up' }] } });
    (plain.providers as Record<string, Record<string, unknown>>).up!.tls = { ca: file('ca.pem') };
    const path = join(dir, 'plain.yaml');
    writeFileSync(path, configText(plain));
    const r = await runCli(['validate', '--config', path]);
    assert.equal(r.code, 1);
    assert.match(r.stdout + r.stderr, /providers\.up\.tls: applies to an https base_url only/);
  });
});
