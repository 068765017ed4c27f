import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkPushUrl } from '../../src/a2a/push-url.js';
import { isPublicAddress } from '../../src/providers/index.js';

describe('isPublicAddress', () => {
  const nonPublic: [string, string][] = [
    ['0.0.0.0', 'this network'],
    ['0.1.2.3', 'this network'],
    ['10.1.2.3', 'private 10/8'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.1.1', 'link-local'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.10', 'TEST-NET-1'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['192.168.0.1', 'private 192.168/16'],
    ['198.18.0.1', 'benchmarking'],
    ['198.51.100.7', 'TEST-NET-2'],
    ['203.0.113.7', 'TEST-NET-3'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['fc00::1', 'unique local'],
    ['fd12:3456:789a::1', 'unique local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local (deprecated)'],
    ['ff02::1', 'multicast'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
    ['64:ff9b::10.0.0.1', 'NAT64 of a private address'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2002:a00:1::1', '6to4 of 10.0.0.1'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'Teredo of client 10.0.0.1'],
    ['2001:db8::1', 'documentation'],
    ['2001:10::1', 'ORCHID'],
    ['3fff::1', 'documentation (2024)'],
    ['100::1', 'discard-only'],
    ['fe80::1%eth0', 'scoped'],
    ['localhost', 'not an address'],
    ['127.1', 'not a canonical address'],
    ['', 'empty'],
  ];
  for (const [ip, label] of nonPublic) {
    it(`refuses ${ip || '""'} (${label})`, () => assert.equal(isPublicAddress(ip), false));
  }

  const publicOnes = [
    '8.8.8.8',
    '1.1.1.1',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.1',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '[2606:4700::1]',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
  ];
  for (const ip of publicOnes) {
    it(`accepts ${ip}`, () => assert.equal(isPublicAddress(ip), true));
  }
});

/** A resolver that answers from a table and records what it was asked. */
function table(answers: Record<string, string[]>) {
  const asked: string[] = [];
  const lookup = async (host: string): Promise<string[]> => {
    asked.push(host);
    const found = answers[host];
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
  return { lookup, asked };
}

describe('checkPushUrl', () => {
  const dns = table({
    'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'inside.example.com': ['10.0.0.5'],
    'metadata.example.com': ['169.254.169.254'],
    'mixed.example.com': ['93.184.216.34', '192.168.1.10'],
    'mapped.example.com': ['::ffff:127.0.0.1'],
    'empty.example.com': [],
  });

  it('accepts https to a name that resolves only to public addresses', async () => {
    assert.deepEqual(await checkPushUrl('https://hooks.example.com/a2a/cb?token=s3cret', [], dns.lookup), { ok: true });
  });

  it('accepts https to a public IP literal without resolving it', async () => {
    const fresh = table({});
    assert.deepEqual(await checkPushUrl('https://8.8.8.8/cb', [], fresh.lookup), { ok: true });
    assert.deepEqual(await checkPushUrl('https://[2606:4700:4700::1111]:8443/cb', [], fresh.lookup), { ok: true });
    assert.deepEqual(fresh.asked, []);
  });

  const refused: [string, string, RegExp][] = [
    ['http', 'http://hooks.example.com/cb?token=s3cret', /hooks\.example\.com must use https/],
    ['userinfo', 'https://user:pw@hooks.example.com/cb', /hooks\.example\.com carries credentials/],
    [
      'a name resolving to a private address',
      'https://inside.example.com/cb?token=s3cret',
      /inside\.example\.com resolves to a non-public address \(10\.0\.0\.5\)/,
    ],
    ['a name resolving to the metadata address', 'https://metadata.example.com/', /non-public address \(169\.254\.169\.254\)/],
    [
      'a name resolving to public and private addresses',
      'https://mixed.example.com/cb',
      /mixed\.example\.com resolves to a non-public address \(192\.168\.1\.10\)/,
    ],
    ['a name resolving to IPv4-mapped loopback', 'https://mapped.example.com/cb', /non-public address/],
    ['a name that does not resolve', 'https://nowhere.example.com/cb?token=s3cret', /nowhere\.example\.com does not resolve/],
    ['a name with no addresses', 'https://empty.example.com/cb', /empty\.example\.com does not resolve/],
    ['a loopback literal', 'https://127.0.0.1/cb', /127\.0\.0\.1 is not a public address/],
    ['a loopback literal written in hex', 'https://0x7f.1/cb', /127\.0\.0\.1 is not a public address/],
    ['a loopback literal as one number', 'https://2130706433/cb', /127\.0\.0\.1 is not a public address/],
    ['the metadata literal', 'https://169.254.169.254/latest/meta-data', /169\.254\.169\.254 is not a public address/],
    ['an IPv6 loopback literal', 'https://[::1]:9000/cb', /\[::1\]:9000 is not a public address/],
    ['an IPv4-mapped private literal', 'https://[::ffff:10.0.0.1]/cb', /is not a public address/],
    ['a unique-local literal', 'https://[fd00::1]/cb', /is not a public address/],
    ['a file URL', 'file:///etc/passwd', /must use https/],
    ['a relative URL', '/cb', /not an absolute URL/],
    ['garbage', 'ht tp://x', /not an absolute URL/],
  ];
  for (const [label, url, reason] of refused) {
    it(`refuses ${label}`, async () => {
      const check = await checkPushUrl(url, [], dns.lookup);
      assert.equal(check.ok, false);
      assert.ok(!check.ok);
      assert.match(check.reason, reason);
      assert.ok(!check.reason.includes('s3cret'), 'the reason never repeats the query');
      assert.ok(!check.reason.includes('/cb'), 'the reason never repeats the path');
    });
  }

  it('refuses a URL that is not a string', async () => {
    for (const url of [undefined, null, 42, { url: 'https://hooks.example.com' }]) {
      assert.deepEqual(await checkPushUrl(url, [], dns.lookup), { ok: false, reason: 'the push notification URL is not a string' });
    }
  });

  describe('operator prefixes', () => {
    const prefixes = ['http://hooks.internal:8080/a2a/', 'https://10.0.0.5/push/', 'not a url'];

    it('allow an http or private target under a listed prefix, without resolving it', async () => {
      const fresh = table({});
      assert.deepEqual(await checkPushUrl('http://hooks.internal:8080/a2a/task-1?t=x', prefixes, fresh.lookup), { ok: true });
      assert.deepEqual(await checkPushUrl('https://10.0.0.5/push/cb', prefixes, fresh.lookup), { ok: true });
      assert.deepEqual(fresh.asked, []);
    });

    it('compare normalised URLs: case and default ports do not matter', async () => {
      assert.deepEqual(await checkPushUrl('HTTP://HOOKS.internal:8080/a2a/x', prefixes, dns.lookup), { ok: true });
      assert.deepEqual(await checkPushUrl('https://10.0.0.5:443/push/x', prefixes, dns.lookup), { ok: true });
    });

    it('cannot be stepped out of with dot segments, another port, userinfo or a longer host', async () => {
      for (const url of [
        'http://hooks.internal:8080/a2a/../admin',
        'http://hooks.internal:8080/a2a/%2e%2e/admin',
        'http://hooks.internal:8081/a2a/x',
        'http://hooks.internal:8080@evil.internal/a2a/x',
        'http://hooks.internal.evil.example:8080/a2a/x',
        'http://hooks.internal:8080/a2',
        'https://10.0.0.5/pushed',
      ]) {
        const check = await checkPushUrl(url, prefixes, dns.lookup);
        assert.equal(check.ok, false, url);
      }
    });
  });
});
