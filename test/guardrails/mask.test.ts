import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  detectorReach,
  detectPii,
  detectSecrets,
  type Finding,
  MAX_MATCH_CHARS,
  Mapping,
  maskText,
  PII_ENTITIES,
  PLACEHOLDER_MAX_CHARS,
  restoreText,
  SECRET_CATEGORIES,
  type SecretCategory,
} from '../../src/guardrails/index.js';

// Masking and restoring, and the bounds a streaming masker relies on: how far a match
// reaches, and that a finding does not change once that much text follows it.

/** Every built-in detector at once, as a guardrail with both would run them. */
function detectAll(text: string): Finding[] {
  return [...detectPii(text), ...detectSecrets(text)].sort((a, b) => a.start - b.start);
}

const sample = [
  'Hi, I am Jane (jane.doe@example.com, +1 415 555 2671). My card is 4111 1111 1111 1111',
  'and my IBAN DE89 3704 0044 0532 0130 00; SSN 123-45-6789. Server 10.0.0.12, key AKIAIOSFODNN7EXAMPLE.',
  'Also bill 5500-0000-0000-0004, and again jane.doe@example.com please.',
].join('\n');

describe('maskText', () => {
  test('each finding becomes a typed placeholder, numbered per entity, and the same value keeps its placeholder', () => {
    const mapping = new Mapping();
    const masked = maskText(sample, detectAll(sample), mapping);
    assert.equal(
      masked,
      [
        'Hi, I am Jane (<EMAIL_1>, <PHONE_1>). My card is <CREDIT_CARD_1>',
        'and my IBAN <IBAN_1>; SSN <US_SSN_1>. Server <IP_ADDRESS_1>, key <AWS_ACCESS_KEY_1>.',
        'Also bill <CREDIT_CARD_2>, and again <EMAIL_1> please.',
      ].join('\n'),
    );
    assert.equal(mapping.size, 8);
  });
  test('a masked text holds nothing the detectors would find, placeholders included', () => {
    const mapping = new Mapping();
    const masked = maskText(sample, detectAll(sample), mapping);
    assert.deepEqual(detectAll(masked), []);
  });
  test('numbering continues across the texts of one request and restarts with a new mapping', () => {
    const mapping = new Mapping();
    maskText('a@example.com', detectPii('a@example.com'), mapping);
    assert.equal(maskText('b@example.com', detectPii('b@example.com'), mapping), '<EMAIL_2>');
    assert.equal(maskText('a@example.com', detectPii('a@example.com'), mapping), '<EMAIL_1>');
    assert.equal(maskText('b@example.com', detectPii('b@example.com'), new Mapping()), '<EMAIL_1>');
  });
  test('a text without findings is returned as it is', () => {
    assert.equal(maskText('nothing here', [], new Mapping()), 'nothing here');
  });
  test("a placeholder the caller wrote is never issued, so it is never restored to someone else's value", () => {
    const mapping = new Mapping();
    const texts = ['my template says <EMAIL_1>', 'write to c@example.com'];
    for (const t of texts) mapping.reserve(t);
    const masked = texts.map((t) => maskText(t, detectPii(t), mapping));
    assert.deepEqual(masked, ['my template says <EMAIL_1>', 'write to <EMAIL_2>']);
    assert.equal(restoreText('<EMAIL_1> and <EMAIL_2>', mapping), '<EMAIL_1> and c@example.com');
  });
});

describe('restoreText', () => {
  test('a masked text restores to the original', () => {
    const mapping = new Mapping();
    assert.equal(restoreText(maskText(sample, detectAll(sample), mapping), mapping), sample);
  });
  test('a placeholder the model repeats is restored each time, one it drops is simply absent', () => {
    const mapping = new Mapping();
    maskText(sample, detectAll(sample), mapping);
    const answer = 'I will charge <CREDIT_CARD_1>. Confirming <CREDIT_CARD_1> and mailing <EMAIL_1>.';
    assert.equal(
      restoreText(answer, mapping),
      'I will charge 4111 1111 1111 1111. Confirming 4111 1111 1111 1111 and mailing jane.doe@example.com.',
    );
  });
  test('placeholders the mapping did not issue, and look-alikes, stay as they are', () => {
    const mapping = new Mapping();
    maskText(sample, detectAll(sample), mapping);
    const answer = 'See <EMAIL_9>, <email_1>, <EMAIL_1 >, <EMAIL_01>, <CREDIT_CARD_1';
    assert.equal(restoreText(answer, mapping), answer);
  });
  test('an empty mapping restores nothing', () => {
    assert.equal(restoreText('<EMAIL_1>', new Mapping()), '<EMAIL_1>');
  });
  test('the longest placeholder issued is known, and bounded', () => {
    const mapping = new Mapping();
    assert.equal(mapping.longestPlaceholder, 0);
    maskText(sample, detectAll(sample), mapping);
    assert.equal(mapping.longestPlaceholder, '<AWS_ACCESS_KEY_1>'.length);
    assert.ok(mapping.longestPlaceholder <= PLACEHOLDER_MAX_CHARS);
  });
});

describe('reach', () => {
  // Planted values of every kind, each with its own surroundings, for the bounds below.
  const planted = [
    sample,
    `-----BEGIN PRIVATE KEY-----\n${randomBytes(600).toString('base64').replace(/.{64}/g, '$&\n')}\n-----END PRIVATE KEY-----`,
    `aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY and SSN: 078051120`,
    `token ${randomBytes(36).toString('base64url')} and fe80::1ff:fe23:4567:890a`,
  ].join('\n');

  test("no finding spans more than its entity's MAX_MATCH_CHARS", () => {
    const findings = detectAll(planted);
    assert.ok(findings.length >= 12);
    for (const f of findings) {
      assert.ok(f.end - f.start <= MAX_MATCH_CHARS[f.entity as keyof typeof MAX_MATCH_CHARS], `${f.entity} spans ${f.end - f.start}`);
    }
  });
  test('a finding is the same in any text that holds the reach before and after it', () => {
    const reach = detectorReach([...PII_ENTITIES, ...SECRET_CATEGORIES]);
    const whole = detectAll(planted);
    for (const f of whole) {
      // What a streaming masker sees: the reach before the finding, and the reach after its start.
      const from = Math.max(0, f.start - reach);
      const window = planted.slice(from, f.start + reach);
      const again = detectAll(window).find((g) => g.start + from === f.start);
      assert.deepEqual(again && { ...again, start: again.start + from, end: again.end + from }, f);
    }
  });
});

describe('reach, on random texts', () => {
  // Texts built of planted values, their near misses and the characters that join or cut
  // them, detector by detector with that detector's own (much shorter) reach.
  const fragments = [
    'jane@example.com',
    'a.b',
    '4111 1111 1111 1111',
    ' 1111',
    '+1 415 555 2671',
    'DE89 3704 0044 0532 0130 00',
    '123-45-6789',
    'SSN',
    '123456789',
    '10.0.0.1',
    'fe80::1ff:fe23:4567:890a',
    '2024-01-02',
    'version 1.2.3',
    'AKIAIOSFODNN7EXAMPLE',
    'aws_secret_access_key = ',
    'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    'ghp_',
    'glpat-',
    'xoxb-',
    'abcdefghij0123456789ABCDEFGHIJklmnop',
    '<EMAIL_1>',
    ' ',
    '\n',
    '.',
    '-',
    '1',
    '22',
    '0',
    '@',
    ':',
    '=',
    '+',
    'x',
    'lorem ipsum dolor sit amet '.repeat(8),
  ];
  const tokens: SecretCategory[] = ['aws_access_key', 'aws_secret_key', 'github_token', 'gitlab_token', 'slack_token'];
  const cases: [string, (text: string) => Finding[], number][] = [
    ['pii', (text) => detectPii(text), detectorReach(PII_ENTITIES)],
    ['token formats', (text) => detectSecrets(text, { categories: tokens }), detectorReach(tokens)],
  ];
  for (const [name, detect, reach] of cases) {
    test(`${name}: every finding is the same in a window of the reach around it, and masking round-trips`, () => {
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...fragments), { maxLength: 120 }), (parts) => {
          const text = parts.join('');
          const findings = detect(text);
          const mapping = new Mapping();
          assert.equal(restoreText(maskText(text, findings, mapping), mapping), text);
          for (const f of findings) {
            const from = Math.max(0, f.start - reach);
            const again = detect(text.slice(from, f.start + reach)).find((g) => g.start + from === f.start);
            assert.deepEqual(again && { ...again, start: again.start + from, end: again.end + from }, f);
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});

test('a megabyte through every detector finishes (time reported, not asserted)', { timeout: 60_000 }, (t) => {
  const parts = [sample, randomBytes(600).toString('base64'), 'plain words and numbers 12 345 6789 v1.2.3 '.repeat(20)];
  let text = '';
  for (let i = 0; text.length < 1_000_000; i++) text += `${parts[i % parts.length]}\n`;
  const started = performance.now();
  const findings = detectAll(text);
  const masked = maskText(text, findings, new Mapping());
  t.diagnostic(
    `${text.length} characters: ${findings.length} findings, detected and masked in ${(performance.now() - started).toFixed(1)} ms`,
  );
  assert.ok(masked.length > 0);
});

test('pathological inputs stay linear (times reported, not asserted)', { timeout: 60_000 }, (t) => {
  const inputs: Record<string, string> = {
    digits: '1'.repeat(1_000_000),
    'spaced digits': '1 '.repeat(500_000),
    'at signs': 'a@'.repeat(500_000),
    'one base64 run': 'Ab3+'.repeat(250_000),
    'BEGIN lines': '-----BEGIN RSA PRIVATE KEY-----\n'.repeat(32_000),
    'eyJ run': 'eyJ'.repeat(333_333),
    'hex and colons': 'ab:'.repeat(333_333),
    'unclosed placeholders': '<EMAIL_'.repeat(140_000),
  };
  for (const [name, text] of Object.entries(inputs)) {
    const started = performance.now();
    const mapping = new Mapping();
    restoreText(maskText(text, detectAll(text), mapping), mapping);
    t.diagnostic(`${name}: ${text.length} characters in ${(performance.now() - started).toFixed(1)} ms`);
  }
});
