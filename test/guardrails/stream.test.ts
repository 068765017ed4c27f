import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { GuardrailsConfig } from '../../src/config/index.js';
import {
  compileGuardrails,
  detectorReach,
  detectPii,
  type LocalGuardrail,
  Mapping,
  maskText,
  PII_ENTITIES,
  restoreText,
  SECRET_CATEGORIES,
  StreamMasker,
  StreamRestorer,
} from '../../src/guardrails/index.js';
import { seededRandom } from '../../src/routing/index.js';

// Masking and restoring across chunk boundaries: for texts with planted values split at
// random places, the stream releases exactly what masking the whole text would give, never
// a planted value, and restoring the masked stream gives back the original text.

const PLANTED = ['jane.doe@example.com', '4111 1111 1111 1111', 'DE89 3704 0044 0532 0130 00', '+44 20 7946 0958', '192.168.10.42'];
const WORDS = [
  'the',
  'invoice',
  'for',
  'order',
  'was',
  'sent',
  'to',
  'please',
  'call',
  'me',
  'at',
  'card',
  'on',
  'file:',
  'thanks,',
  'and',
];

function plantedText(random: () => number): string {
  const parts: string[] = [];
  const n = 20 + Math.floor(random() * 60);
  for (let i = 0; i < n; i++) {
    // A word between two planted values: a phone number followed by a bare number reads as one longer number.
    const plant = random() < 0.12 && i > 0 && !PLANTED.includes(parts[i - 1] as string);
    parts.push(plant ? (PLANTED[Math.floor(random() * PLANTED.length)] as string) : (WORDS[Math.floor(random() * WORDS.length)] as string));
  }
  return parts.join(' ');
}

function chunksOf(text: string, random: () => number): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    const size = 1 + Math.floor(random() * 12);
    out.push(text.slice(at, at + size));
    at += size;
  }
  return out;
}

const detectors = { detect: (text: string) => detectPii(text, PII_ENTITIES), reach: detectorReach(PII_ENTITIES) };

describe('masking and restoring inside a stream', () => {
  test('for random texts split at random places, the masked stream equals masking the whole text and holds no planted value', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const random = seededRandom(seed);
      const text = plantedText(random);
      const whole = maskText(text, detectPii(text, PII_ENTITIES), new Mapping());
      const mapping = new Mapping();
      const masker = new StreamMasker(detectors, (t, f) => maskText(t, f, mapping));
      let streamed = '';
      let pieces = 0;
      for (const chunk of chunksOf(text, random)) {
        const out = masker.push(chunk);
        if (out !== '') pieces += 1;
        streamed += out;
        // At most the reach, and the half reach a release waits for (fewer passes of the detectors).
        assert.ok(masker.held < detectors.reach + Math.max(32, detectors.reach >> 1), `seed ${seed}: held ${masker.held} characters`);
      }
      streamed += masker.end();
      assert.equal(streamed, whole, `seed ${seed}`);
      for (const value of PLANTED) assert.ok(!streamed.includes(value), `seed ${seed}: ${value} reached the upstream`);
      if (text.length > detectors.reach * 3) assert.ok(pieces > 1, `seed ${seed}: released in pieces, not one burst`);
      // Restored through a stream split at other places, the client gets the original text back.
      const restorer = new StreamRestorer((t) => restoreText(t, mapping), mapping.longestPlaceholder);
      let restored = '';
      for (const chunk of chunksOf(streamed, random)) restored += restorer.push(chunk);
      restored += restorer.end();
      assert.equal(restored, text, `seed ${seed}`);
    }
  });

  test('a placeholder split at every offset is restored whole, and a lone "<" is released', () => {
    const mapping = new Mapping();
    const masked = maskText('mail jane.doe@example.com now', detectPii('mail jane.doe@example.com now', ['email']), mapping);
    assert.equal(masked, 'mail <EMAIL_1> now');
    for (let cut = 0; cut <= masked.length; cut++) {
      const restorer = new StreamRestorer((t) => restoreText(t, mapping), mapping.longestPlaceholder);
      const out: string = restorer.push(masked.slice(0, cut)) + restorer.push(masked.slice(cut)) + restorer.end();
      assert.equal(out, 'mail jane.doe@example.com now', `cut at ${cut}`);
    }
    // A "<" that cannot open a placeholder any more (too far back, or closed) is not held.
    const restorer = new StreamRestorer((t) => restoreText(t, mapping), mapping.longestPlaceholder);
    const far = `a < b${' and so on'.repeat(5)}`;
    assert.equal(restorer.push(far), far);
    assert.equal(restorer.push('x <y> z'), 'x <y> z');
    assert.equal(restorer.push('then <EMA'), 'then ');
    assert.equal(restorer.end(), '<EMA');
  });
});

describe('the built-in guardrails hold back only what a match could still span', () => {
  const AWS = 'AKIAIOSFODNN7EXAMPLE';
  const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
  const PEM =
    '-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==\n-----END RSA PRIVATE KEY-----';
  const SECRET_PLANTS = [AWS, JWT, PEM, `aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`];
  const compiled = compileGuardrails({
    pii: {
      type: 'pii',
      entities: [...PII_ENTITIES],
      action: 'mask',
      restore: false,
      stream: 'window',
      window_chars: 400,
      on_error: 'fail_closed',
    },
    secrets: {
      type: 'secrets',
      categories: [...SECRET_CATEGORIES],
      entropy: { min_length: 32, min_entropy: 4 },
      action: 'mask',
      restore: false,
      stream: 'window',
      window_chars: 400,
    },
  } as unknown as GuardrailsConfig);

  for (const name of ['pii', 'secrets'] as const) {
    test(`${name}: for random texts split at random places, the stream masks exactly what the whole text masks, and releases text early`, () => {
      const g = compiled.get(name) as LocalGuardrail;
      let released = 0;
      let pushes = 0;
      for (let seed = 1; seed <= 300; seed++) {
        const random = seededRandom(seed);
        const parts: string[] = [];
        const n = 10 + Math.floor(random() * 40);
        for (let i = 0; i < n; i++) {
          const plant = random() < 0.15 && i > 0;
          const pool = name === 'pii' ? PLANTED : SECRET_PLANTS;
          parts.push(plant ? (pool[Math.floor(random() * pool.length)] as string) : (WORDS[Math.floor(random() * WORDS.length)] as string));
        }
        const text = parts.join(' ');
        const whole = maskText(text, g.detectors.detect(text), new Mapping());
        const mapping = new Mapping();
        const masker = new StreamMasker(g.detectors, (t, f) => maskText(t, f, mapping));
        let streamed = '';
        for (const chunk of chunksOf(text, random)) {
          const out = masker.push(chunk);
          pushes += 1;
          if (out !== '') released += 1;
          streamed += out;
        }
        streamed += masker.end();
        assert.equal(streamed, whole, `seed ${seed}: ${JSON.stringify(text)}`);
      }
      // Not one final burst: text goes out every few pushes (pieces of 1-12 characters here).
      assert.ok(released / pushes > 0.05, `${released} of ${pushes} pushes released text`);
    });
  }
});
