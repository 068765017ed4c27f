import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AddressList, addressClass, invalidCidr, isPublicAddress } from '../../src/providers/index.js';

// The one classification of addresses the A2A push-URL rule and the provider probe share:
// what an address is, judged through its embedded IPv4 forms, and the allow lists of CIDRs.

describe('addressClass', () => {
  const cases: Array<[string, ReturnType<typeof addressClass>]> = [
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['[fd00:ec2::254]', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['169.254.1.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.255', 'shared'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['ff02::1', 'reserved'],
    ['::8.8.8.8', 'reserved'],
    ['localhost', 'reserved'],
    ['', 'reserved'],
    ['8.8.8.8', 'public'],
    ['100.63.255.255', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::808:808', 'public'],
  ];
  for (const [ip, expected] of cases) {
    it(`${ip || '""'} is ${expected}`, () => {
      assert.equal(addressClass(ip), expected);
      assert.equal(isPublicAddress(ip), expected === 'public');
    });
  }

  it('judges Teredo by the worse of its two embedded addresses', () => {
    // Server 65.54.227.120, client 10.0.0.1 (inverted in the last 32 bits).
    assert.equal(addressClass('2001:0:4136:e378:8000:63bf:f5ff:fffe'), 'private');
    // Server 65.54.227.120, client 8.8.8.8.
    assert.equal(addressClass('2001:0:4136:e378:8000:63bf:f7f7:f7f7'), 'public');
  });
});

describe('AddressList', () => {
  it('matches addresses and ranges of both families, and an IPv4 rule matches the IPv4-mapped form', () => {
    const list = new AddressList(['127.0.0.0/8', '::1', '10.1.0.0/16', 'fd00::/8']);
    for (const yes of ['127.0.0.1', '127.9.9.9', '::1', '[::1]', '10.1.2.3', '::ffff:127.0.0.1', 'fd12::5']) assert.ok(list.has(yes), yes);
    for (const no of ['128.0.0.1', '10.2.0.1', '::2', 'fe80::1', 'localhost', undefined]) assert.ok(!list.has(no), String(no));
  });

  it('an empty list matches nothing', () => {
    assert.equal(new AddressList([]).has('127.0.0.1'), false);
  });

  it('refuses an entry that is no address or range, naming the list', () => {
    assert.throws(
      () => new AddressList(['10.0.0.0/33'], 'server.admin_probe_allow entry'),
      /server.admin_probe_allow entry "10.0.0.0\/33"/,
    );
    assert.equal(invalidCidr('localhost'), '"localhost" is not an IP address');
    assert.equal(invalidCidr('fe80::1%eth0'), 'an IPv6 zone (%name) cannot be matched');
  });
});
