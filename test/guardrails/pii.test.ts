import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, test } from 'node:test';
import { detectPii, type Finding, PII_ENTITIES, type PiiEntity, resolveOverlaps } from '../../src/guardrails/index.js';
import { seededRandom } from '../../src/routing/index.js';

// The pii detectors on real-looking values and their near misses: every entity must find
// the forms people write and leave alone what only looks like them.

/** The matched substrings of one entity in `text`. */
function found(text: string, entity: PiiEntity): string[] {
  return detectPii(text, [entity]).map((f) => text.slice(f.start, f.end));
}

describe('email', () => {
  test('addresses with dots, plus tags, subdomains and hyphens are found, without a sentence full stop', () => {
    const text = 'Write to jane.doe+billing@example.co.uk. Or bob_smith@mail-server.example.com, or X@EXAMPLE.ORG!';
    assert.deepEqual(found(text, 'email'), ['jane.doe+billing@example.co.uk', 'bob_smith@mail-server.example.com', 'X@EXAMPLE.ORG']);
  });
  test('handles, hosts without a dot, decorators and double dots are not addresses', () => {
    const text = 'ping @channel, user@localhost, @Component() x, a..b@example.com, git@github, me@-bad-.com, a@b.c1';
    assert.deepEqual(found(text, 'email'), []);
  });
});

describe('phone', () => {
  test('international E.164 forms with spaces, dashes, dots and a parenthesised group are found', () => {
    const text = 'Call +1 (415) 555-2671, +44 20 7946 0958, +49-30-1234567, +33.6.12.34.56.78 or +14155552671.';
    assert.deepEqual(found(text, 'phone'), [
      '+1 (415) 555-2671',
      '+44 20 7946 0958',
      '+49-30-1234567',
      '+33.6.12.34.56.78',
      '+14155552671',
    ]);
  });
  test('North American and trunk-prefixed national forms are found', () => {
    const text =
      'Office 415-555-2671, desk (212) 555 0100, fax 212.555.0199, London 020 7946 0958, Paris 06 12 34 56 78, Berlin 030 1234567.';
    assert.deepEqual(found(text, 'phone'), [
      '415-555-2671',
      '(212) 555 0100',
      '212.555.0199',
      '020 7946 0958',
      '06 12 34 56 78',
      '030 1234567',
    ]);
  });
  test('dates, versions, times, order numbers, short or long digit runs and card numbers are not phone numbers', () => {
    const text = [
      'on 2024-01-02 or 01-02-2024 or 01.02.2024 or 12/31/2024 at 10:30:00',
      'version 1.2.3 and 10.4.12, order 123456789012, ticket 5551234, +12 points',
      'card 4111 1111 1111 1111, code 055-12-2024, too long +1234567890123456',
      'NANP with a 1xx area code 123-555-2671, mixed separators 415-555.2671',
    ].join('\n');
    assert.deepEqual(found(text, 'phone'), []);
  });
});

describe('credit_card', () => {
  test('Luhn-valid numbers of the known schemes are found, spaced, dashed or bare', () => {
    const text = [
      'visa 4111 1111 1111 1111',
      'mastercard 5500-0000-0000-0004',
      'mastercard 2-series 2221000000000009',
      'amex 3782 822463 10005',
      'discover 6011111111111117',
      'jcb 3530 1113 3330 0000',
      'diners 3056 9309 0259 04',
    ].join('; ');
    assert.deepEqual(found(text, 'credit_card'), [
      '4111 1111 1111 1111',
      '5500-0000-0000-0004',
      '2221000000000009',
      '3782 822463 10005',
      '6011111111111117',
      '3530 1113 3330 0000',
      '3056 9309 0259 04',
    ]);
  });
  test('a number run into a following group stops at the last group that validates', () => {
    const text = 'paid with 4111 1111 1111 1111 2024 yesterday';
    assert.deepEqual(found(text, 'credit_card'), ['4111 1111 1111 1111']);
  });
  test('Luhn-invalid numbers, unknown issuers, mixed separators, long runs and decimals are not cards', () => {
    const text = [
      'bad check digit 4111 1111 1111 1112',
      'unknown issuer 1000 0000 0000 0009',
      'mixed 4111-1111 1111-1111',
      'doubled 4111  1111 1111 1111',
      'tracking 41111111111111110000000',
      'amount 4111111111111111.50',
      'order #12345678901234',
    ].join('; ');
    assert.deepEqual(found(text, 'credit_card'), []);
  });
});

describe('iban', () => {
  test('IBANs with a valid checksum and their country length are found, compact or in groups of 4', () => {
    const text = 'Pay DE89 3704 0044 0532 0130 00, GB82WEST12345698765432, FR14 2004 1010 0505 0001 3M02 606 or NL91ABNA0417164300.';
    assert.deepEqual(found(text, 'iban'), [
      'DE89 3704 0044 0532 0130 00',
      'GB82WEST12345698765432',
      'FR14 2004 1010 0505 0001 3M02 606',
      'NL91ABNA0417164300',
    ]);
  });
  test('a wrong check digit, a wrong length, irregular grouping, lower case and unknown countries are not IBANs', () => {
    const text = [
      'DE89 3704 0044 0532 0130 01',
      'GB82WEST1234569876543',
      'GB82WEST123456987654321',
      'DE89 37040044 0532 0130 00',
      'de89370400440532013000',
      'XX89370400440532013000',
      'AB12 is a part number',
    ].join('; ');
    assert.deepEqual(found(text, 'iban'), []);
  });
});

describe('us_ssn', () => {
  test('dashed and spaced SSNs, and a bare one after the word SSN, are found', () => {
    const text = 'Hers is 123-45-6789, his 219 09 9999. Applicant SSN: 078051120.';
    assert.deepEqual(found(text, 'us_ssn'), ['123-45-6789', '219 09 9999', '078051120']);
  });
  test('area 000, 666 or 9xx, group 00, serial 0000, mixed separators and bare runs without context are not SSNs', () => {
    const text = [
      '000-12-3456 666-12-3456 912-34-5678 123-00-4567 123-45-0000 123-45 6789',
      'order number 123456789 shipped',
      'part 123-45-67890 and 1123-45-6789',
    ].join('\n');
    assert.deepEqual(found(text, 'us_ssn'), []);
  });
  test('the context word must be within reach of a bare run', () => {
    const text = `SSN ${'x'.repeat(40)} 123456789`;
    assert.deepEqual(found(text, 'us_ssn'), []);
  });
});

describe('ip_address', () => {
  test('IPv4 dotted quads and IPv6 addresses (compressed, full, with an embedded IPv4) are found', () => {
    const text =
      'hosts 192.168.0.1, 10.0.0.255 and 2001:db8::8a2e:370:7334, fe80::1, 2001:0db8:0000:0000:0000:ff00:0042:8329, ::ffff:192.0.2.128.';
    assert.deepEqual(found(text, 'ip_address'), [
      '192.168.0.1',
      '10.0.0.255',
      '2001:db8::8a2e:370:7334',
      'fe80::1',
      '2001:0db8:0000:0000:0000:ff00:0042:8329',
      '::ffff:192.0.2.128',
    ]);
  });
  test('octets over 255, leading zeros, versions, five parts, times, MAC addresses and C++ scopes are not addresses', () => {
    const text =
      'bad 10.0.0.256 and 010.1.1.1, version 1.2.3 or v1.2.3.4, 1.2.3.4.5, at 12:30:45, mac 00:1A:2B:3C:4D:5E, std::vector, a::b, ::1';
    assert.deepEqual(found(text, 'ip_address'), []);
  });
  test('IPv6 candidates tried only before colons find what a scan of every position finds', () => {
    // The reference: the candidate pattern tried at every position, as the detector once did.
    const everywhere = /(?<![\w:.])(?=[0-9A-Fa-f]{0,4}:)[0-9A-Fa-f:.]{2,45}/g;
    const reference = (text: string): string[] => {
      const out: string[] = [];
      for (const m of text.matchAll(everywhere)) {
        if (/\w/.test(text[m.index + m[0].length] ?? '')) continue;
        let token = m[0];
        while (token.endsWith('.')) token = token.slice(0, -1);
        if (token.endsWith(':') && !token.endsWith('::')) token = token.slice(0, -1);
        const groups = token.split(':').filter((g) => g !== '');
        if (groups.length >= 2 && groups.join('').length >= 4 && isIP(token) === 6) out.push(token);
      }
      return out;
    };
    const random = seededRandom(7);
    const alphabet = ['a', 'f', '0', '9', 'db8', ':', '::', '.', ' ', 'g', 'x', '1', 'ffff', '192.0.2.1'];
    for (let run = 0; run < 2000; run++) {
      let text = '';
      const n = 1 + Math.floor(random() * 30);
      for (let i = 0; i < n; i++) text += alphabet[Math.floor(random() * alphabet.length)];
      const ipv6 = found(text, 'ip_address').filter((v) => v.includes(':'));
      assert.deepEqual(ipv6, reference(text), JSON.stringify(text));
    }
  });
});

describe('all entities', () => {
  test('only the requested entities are reported', () => {
    const text = 'mail a.b@example.com from 192.168.1.1';
    assert.deepEqual(
      detectPii(text, ['ip_address']).map((f) => f.entity),
      ['ip_address'],
    );
    assert.deepEqual(
      detectPii(text).map((f) => f.entity),
      ['email', 'ip_address'],
    );
  });
  test('offsets are UTF-16 code units, so text after an emoji is sliced right', () => {
    const text = '😀 naïve → jane@example.com';
    const [f] = detectPii(text);
    assert.equal(text.slice(f!.start, f!.end), 'jane@example.com');
  });
  test('findings are sorted and never overlap: the longer of two overlapping wins, then the earlier', () => {
    const findings: Finding[] = [
      { entity: 'b', start: 10, end: 14 },
      { entity: 'a', start: 0, end: 4 },
      { entity: 'long', start: 8, end: 20 },
      { entity: 'tie1', start: 30, end: 35 },
      { entity: 'tie2', start: 33, end: 38 },
    ];
    assert.deepEqual(
      resolveOverlaps(findings).map((f) => f.entity),
      ['a', 'long', 'tie1'],
    );
  });
  test('a card right after a spaced IBAN is found: the IBAN’s last digits never start a card of their own', () => {
    const text = 'GB82 WEST 1234 5698 7654 32 4111 1111 1111 1111 <';
    assert.deepEqual(
      detectPii(text).map((f) => [f.entity, text.slice(f.start, f.end)]),
      [
        ['iban', 'GB82 WEST 1234 5698 7654 32'],
        ['credit_card', '4111 1111 1111 1111'],
      ],
    );
  });
  test('a text full of every entity yields sorted, disjoint findings', () => {
    const text = 'jane@example.com +1 415 555 2671 4111111111111111 DE89370400440532013000 123-45-6789 10.1.2.3 '.repeat(20);
    const findings = detectPii(text, PII_ENTITIES);
    assert.equal(findings.length, 120);
    for (let i = 1; i < findings.length; i++) assert.ok(findings[i]!.start >= findings[i - 1]!.end);
  });
});
