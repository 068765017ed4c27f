import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { publicOrigin, TrustedProxies } from '../../src/a2a/forwarded.js';
import { invalidCidr } from '../../src/providers/index.js';

const proxies = new TrustedProxies(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '::1']);
const plain = { secure: false } as const;

describe('TrustedProxies', () => {
  it('trusts addresses inside its networks and no others', () => {
    assert.equal(proxies.trusts('10.200.3.4'), true);
    assert.equal(proxies.trusts('192.168.1.7'), true);
    assert.equal(proxies.trusts('192.168.1.8'), false);
    assert.equal(proxies.trusts('11.0.0.1'), false);
    assert.equal(proxies.trusts('fd12:3456::1'), true);
    assert.equal(proxies.trusts('::1'), true);
    assert.equal(proxies.trusts('fe80::1'), false);
    assert.equal(proxies.trusts(undefined), false);
    assert.equal(proxies.trusts('not-an-address'), false);
  });

  it('matches an IPv4-mapped IPv6 peer against the IPv4 networks', () => {
    assert.equal(proxies.trusts('::ffff:10.1.2.3'), true);
    assert.equal(proxies.trusts('::FFFF:192.168.1.7'), true);
    assert.equal(proxies.trusts('::ffff:11.1.2.3'), false);
  });

  it('trusts nobody when it lists nothing', () => {
    assert.equal(new TrustedProxies([]).trusts('127.0.0.1'), false);
  });

  it('refuses an entry that is not a CIDR', () => {
    assert.throws(() => new TrustedProxies(['10.0.0.0/33']), /prefix length/);
  });
});

describe('invalidCidr', () => {
  it('accepts addresses and CIDRs of both families', () => {
    for (const ok of ['10.0.0.0/8', '0.0.0.0/0', '127.0.0.1', '::1', '2001:db8::/32', '::/0', ' 172.16.0.0/12 ']) {
      assert.equal(invalidCidr(ok), null, ok);
    }
  });

  it('says why an entry is refused', () => {
    assert.match(invalidCidr('10.0.0.0/33') ?? '', /0 to 32/);
    assert.match(invalidCidr('::/129') ?? '', /0 to 128/);
    assert.match(invalidCidr('10.0.0.0/x') ?? '', /prefix length/);
    assert.match(invalidCidr('10.0.0.0/') ?? '', /prefix length/);
    assert.match(invalidCidr('gw.example.com') ?? '', /not an IP address/);
    assert.match(invalidCidr('10.0.0.256') ?? '', /not an IP address/);
    assert.match(invalidCidr('10.0.0.0/8/8') ?? '', /more than one/);
    assert.match(invalidCidr('fe80::1%eth0') ?? '', /zone/);
  });
});

describe('publicOrigin', () => {
  const forwarded = {
    host: 'gateway-0.internal:8080',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'gw.example.com',
    'x-forwarded-prefix': '/switchyard',
  };

  it('takes scheme, host and prefix from the forwarding headers of a trusted proxy', () => {
    assert.equal(publicOrigin(forwarded, '10.1.1.1', proxies, plain), 'https://gw.example.com/switchyard');
    assert.equal(publicOrigin(forwarded, '::ffff:10.1.1.1', proxies, plain), 'https://gw.example.com/switchyard');
    assert.equal(publicOrigin(forwarded, 'fd00::5', proxies, plain), 'https://gw.example.com/switchyard');
  });

  it('ignores forwarding headers from an untrusted peer: Host and the listener scheme', () => {
    assert.equal(publicOrigin(forwarded, '203.0.113.9', proxies, plain), 'http://gateway-0.internal:8080');
    assert.equal(publicOrigin(forwarded, undefined, proxies, { secure: true }), 'https://gateway-0.internal:8080');
    assert.equal(publicOrigin(forwarded, '2001:db8::1', proxies, plain), 'http://gateway-0.internal:8080');
  });

  it('takes the first value of a list: the client side of the proxy chain', () => {
    const chain = { host: 'h', 'x-forwarded-proto': 'https, http', 'x-forwarded-host': 'gw.example.com, edge.internal:81' };
    assert.equal(publicOrigin(chain, '10.0.0.1', proxies, plain), 'https://gw.example.com');
    const repeated = { host: 'h', 'x-forwarded-host': ['gw.example.com', 'edge.internal'] as unknown as string };
    assert.equal(publicOrigin(repeated, '10.0.0.1', proxies, plain), 'http://gw.example.com');
  });

  it('reads RFC 7239 Forwarded proto and host, quoted or not, ahead of the X- headers', () => {
    const headers = {
      host: 'h',
      forwarded: 'for="[2001:db8::7]:4711";proto=https;host="gw.example.com:8443", for=10.0.0.1;proto=http;host=edge',
      'x-forwarded-host': 'other.example.com',
    };
    assert.equal(publicOrigin(headers, '10.0.0.1', proxies, plain), 'https://gw.example.com:8443');
    assert.equal(publicOrigin({ host: 'h', forwarded: 'Proto=HTTPS;Host=[2001:db8::1]' }, '::1', proxies, plain), 'https://[2001:db8::1]');
    // Forwarded without host: the X- header still says it.
    assert.equal(
      publicOrigin({ host: 'h', forwarded: 'for=1.2.3.4;proto=https', 'x-forwarded-host': 'gw.example.com' }, '::1', proxies, plain),
      'https://gw.example.com',
    );
  });

  it('drops a Forwarded element that is malformed or names a parameter twice', () => {
    const twice = { host: 'safe.example', forwarded: 'host=evil.example;host=gw.example.com' };
    assert.equal(publicOrigin(twice, '10.0.0.1', proxies, plain), 'http://safe.example');
    const unterminated = { host: 'safe.example', forwarded: 'proto=https;host="gw.example.com' };
    assert.equal(publicOrigin(unterminated, '10.0.0.1', proxies, plain), 'http://safe.example');
  });

  it('normalises case and a default port', () => {
    assert.equal(publicOrigin({ host: 'GW.Example.COM:80' }, '203.0.113.9', proxies, plain), 'http://gw.example.com');
    assert.equal(publicOrigin({ host: 'gw.example.com:443' }, undefined, proxies, { secure: true }), 'https://gw.example.com');
  });

  describe('refuses injection through the headers', () => {
    const trustedPeer = '10.0.0.1';
    const cases: [string, Record<string, string>, string][] = [
      ['a path in X-Forwarded-Host', { 'x-forwarded-host': 'evil.example/steal' }, 'http://safe.example'],
      ['userinfo in X-Forwarded-Host', { 'x-forwarded-host': 'gw.example.com@evil.example' }, 'http://safe.example'],
      ['a second URL in X-Forwarded-Host', { 'x-forwarded-host': 'evil.example?x=https://gw' }, 'http://safe.example'],
      ['a fragment in X-Forwarded-Host', { 'x-forwarded-host': 'evil.example#' }, 'http://safe.example'],
      ['a backslash in X-Forwarded-Host', { 'x-forwarded-host': 'evil.example\\gw' }, 'http://safe.example'],
      ['a bad port', { 'x-forwarded-host': 'gw.example.com:99999' }, 'http://safe.example'],
      ['an unbracketed IPv6 host', { 'x-forwarded-host': '2001:db8::1' }, 'http://safe.example'],
      ['a bracketed non-address', { 'x-forwarded-host': '[evil.example]' }, 'http://safe.example'],
      ['a scheme other than http(s)', { 'x-forwarded-proto': 'javascript' }, 'http://safe.example'],
      ['a scheme with a URL in it', { 'x-forwarded-proto': 'https://evil.example/' }, 'http://safe.example'],
      ['a protocol-relative prefix', { 'x-forwarded-prefix': '//evil.example' }, 'http://safe.example'],
      ['a dot-dot prefix', { 'x-forwarded-prefix': '/a/../..' }, 'http://safe.example'],
      ['an encoded prefix', { 'x-forwarded-prefix': '/%2e%2e/x' }, 'http://safe.example'],
      ['a prefix with a query', { 'x-forwarded-prefix': '/gw?next=https://evil.example' }, 'http://safe.example'],
      ['a Forwarded host with a path', { forwarded: 'host="evil.example/x"' }, 'http://safe.example'],
    ];
    for (const [label, headers, expected] of cases) {
      it(label, () => {
        assert.equal(publicOrigin({ host: 'safe.example', ...headers }, trustedPeer, proxies, plain), expected);
      });
    }

    it('a malformed Host falls back to the listener host, else localhost', () => {
      for (const host of ['evil.example/x', 'a@b', 'a b', '', 'x'.repeat(300)]) {
        assert.equal(publicOrigin({ host }, '203.0.113.9', proxies, { secure: true, host: '127.0.0.1:8443' }), 'https://127.0.0.1:8443');
        assert.equal(publicOrigin({ host }, '203.0.113.9', proxies, plain), 'http://localhost');
      }
      assert.equal(publicOrigin({}, '203.0.113.9', proxies, { secure: false, host: '[::1]:8080' }), 'http://[::1]:8080');
    });

    it('keeps a clean prefix without its trailing slash', () => {
      assert.equal(
        publicOrigin({ host: 'h.example', 'x-forwarded-prefix': '/team-a/gw/' }, trustedPeer, proxies, plain),
        'http://h.example/team-a/gw',
      );
      assert.equal(publicOrigin({ host: 'h.example', 'x-forwarded-prefix': '/' }, trustedPeer, proxies, plain), 'http://h.example');
    });
  });

  it('on a real socket, believes a loopback proxy and not an outsider', async () => {
    const server = createServer((req, res) => {
      const loopbackProxy = new TrustedProxies(req.headers['x-test-trust'] === 'yes' ? ['127.0.0.0/8', '::1'] : []);
      res.end(publicOrigin(req.headers, req.socket.remoteAddress, loopbackProxy, { secure: false }));
    });
    // Listening on :: makes an IPv4 peer appear as ::ffff:127.0.0.1 where the host is dual-stack.
    const host = await new Promise<string>((resolve) => {
      server.once('error', () => server.listen(0, '127.0.0.1', () => resolve('127.0.0.1')));
      server.listen(0, '::', () => resolve('127.0.0.1'));
    });
    const port = (server.address() as AddressInfo).port;
    const get = (trust: string) =>
      new Promise<string>((resolve, reject) => {
        const req = httpRequest(
          {
            host,
            port,
            path: '/',
            headers: {
              host: 'gw-internal:9000',
              'x-test-trust': trust,
              'x-forwarded-proto': 'https',
              'x-forwarded-host': 'gw.example.com',
            },
          },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => {
              body += c.toString();
            });
            res.on('end', () => resolve(body));
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      assert.equal(await get('yes'), 'https://gw.example.com');
      assert.equal(await get('no'), 'http://gw-internal:9000');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
