import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { detectSecrets, type SecretCategory, type SecretsOptions, shannonEntropy } from '../../src/guardrails/index.js';

// The secrets detectors: each token format on values shaped like real ones (built here, so
// no real credential sits in the repository), the labelled AWS secret, PEM blocks, JWTs, and
// the entropy rule against what prompts are full of: hashes, UUIDs, identifiers, encoded text.

/** `[category, matched text]` of every finding. */
function found(text: string, options?: SecretsOptions): [string, string][] {
  return detectSecrets(text, options).map((f) => [f.entity, text.slice(f.start, f.end)]);
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** A deterministic pseudo-random base62 string (a fixed seed keeps the tests repeatable). */
function base62(length: number, seed: number): string {
  let s = '';
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    s += BASE62[x % 62];
  }
  return s;
}

/** Deterministic pseudo-random bytes, for base64 tokens that are the same on every run. */
function bytes(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out[i] = x >> 16;
  }
  return out;
}

function jwt(header: object, payload: object): string {
  const h = Buffer.from(JSON.stringify(header)).toString('base64url');
  const p = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const sig = createHmac('sha256', 'k').update(`${h}.${p}`).digest('base64url');
  return `${h}.${p}.${sig}`;
}

describe('token formats', () => {
  test('AWS access key ids (AKIA, ASIA) are found; other prefixes and wrong lengths are not', () => {
    const text =
      'id AKIAIOSFODNN7EXAMPLE, session ASIAY34FZKBOKMUTVV7A; not AKIAIOSFODNN7EXAMPL, AKIAIOSFODNN7EXAMPLEX or ABCDIOSFODNN7EXAMPLE';
    assert.deepEqual(found(text, { categories: ['aws_access_key'] }), [
      ['aws_access_key', 'AKIAIOSFODNN7EXAMPLE'],
      ['aws_access_key', 'ASIAY34FZKBOKMUTVV7A'],
    ]);
  });
  test('an AWS secret key is found only where it is labelled, and only the key is reported', () => {
    const key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const text = `aws_secret_access_key = ${key}\nAWS_SECRET_ACCESS_KEY="${key}"\n"SecretAccessKey": "${key}"\nunlabelled ${key}`;
    assert.deepEqual(found(text, { categories: ['aws_secret_key'] }), [
      ['aws_secret_key', key],
      ['aws_secret_key', key],
      ['aws_secret_key', key],
    ]);
  });
  test('GitHub classic and fine-grained tokens, GitLab and Slack tokens are found', () => {
    const ghp = `ghp_${base62(36, 1)}`;
    const gho = `gho_${base62(36, 2)}`;
    const pat = `github_pat_${base62(22, 3)}_${base62(59, 4)}`;
    const glpat = `glpat-${base62(20, 5)}`;
    const slack = `xoxb-${'1234567890'}-${'9876543210'}-${base62(24, 6)}`;
    const text = `GH_TOKEN=${ghp} and ${gho}; pat ${pat}; gitlab ${glpat}. slack: ${slack}`;
    assert.deepEqual(found(text), [
      ['github_token', ghp],
      ['github_token', gho],
      ['github_token', pat],
      ['gitlab_token', glpat],
      ['slack_token', slack],
    ]);
  });
  test('near misses of the token formats are not tokens: short bodies, unknown prefixes, prefixes inside words', () => {
    const text = [
      `ghp_${base62(20, 1)}`,
      `ghx_${base62(36, 2)}`,
      `myghp_${base62(36, 3)}`,
      'glpat-short',
      'xoxz-1234567890-abc',
      'xoxb-123',
    ].join(' ');
    assert.deepEqual(found(text, { categories: ['github_token', 'gitlab_token', 'slack_token'] }), []);
  });
});

describe('private_key', () => {
  test('PKCS#8, PKCS#1, EC and OpenSSH private key blocks are found through their END line', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pkcs8 = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString().trim();
    const pkcs1 = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString().trim();
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'sec1', format: 'pem' }).toString().trim();
    const openssh = `-----BEGIN OPENSSH PRIVATE KEY-----\n${randomBytes(300).toString('base64')}\n-----END OPENSSH PRIVATE KEY-----`;
    const text = `key:\n${pkcs8}\nold:\n${pkcs1}\nec: ${ec}\nssh:\n${openssh}\nthe end`;
    assert.deepEqual(found(text, { categories: ['private_key'] }), [
      ['private_key', pkcs8],
      ['private_key', pkcs1],
      ['private_key', ec],
      ['private_key', openssh],
    ]);
  });
  test('a block cut off before its END line is found from BEGIN through its base64', () => {
    const body = randomBytes(120).toString('base64').replace(/.{64}/g, '$&\n');
    const text = `-----BEGIN PRIVATE KEY-----\n${body}\n\nthat is all I have`;
    assert.deepEqual(found(text, { categories: ['private_key'] }), [['private_key', `-----BEGIN PRIVATE KEY-----\n${body}`]]);
  });
  test('public keys and certificates are not private keys', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const text = `${publicKey.export({ type: 'spki', format: 'pem' })}\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----`;
    assert.deepEqual(found(text, { categories: ['private_key'] }), []);
  });
});

describe('jwt', () => {
  test('three base64url segments whose header names an algorithm are a JWT', () => {
    const hs = jwt({ alg: 'HS256', typ: 'JWT' }, { sub: '1234567890', name: 'Jane' });
    const none = `${jwt({ alg: 'none' }, { sub: 'x' }).split('.').slice(0, 2).join('.')}.`;
    const text = `Authorization: Bearer ${hs}. Unsigned: ${none} ok`;
    assert.deepEqual(found(text, { categories: ['jwt'] }), [
      ['jwt', hs],
      ['jwt', none],
    ]);
  });
  test('eyJ strings whose header is not JSON with "alg", or with two segments, are not JWTs', () => {
    const noAlg = jwt({ typ: 'JWT' }, { sub: 'x' });
    const twoParts = jwt({ alg: 'HS256' }, { sub: 'x' }).split('.').slice(0, 2).join('.');
    const notJson = `eyJub3QganNvbg.eyJzdWIiOiJ4In0.c2ln`;
    assert.deepEqual(found(`${noAlg} ${twoParts} ${notJson}`, { categories: ['jwt'] }), []);
  });
});

describe('high_entropy', () => {
  test('random tokens of 32+ characters (base62, base64, base64url) are found', () => {
    const a = base62(40, 7);
    const b = bytes(33, 1).toString('base64');
    const c = bytes(33, 2).toString('base64url');
    const text = `token ${a} and ${b} and ${c}.`;
    assert.deepEqual(
      found(text).map(([e]) => e),
      ['high_entropy', 'high_entropy', 'high_entropy'],
    );
  });
  test('a token after `=` is found without its label', () => {
    const value = base62(40, 8);
    assert.deepEqual(found(`api_key=${value}`), [['high_entropy', value]]);
  });
  test('git SHAs, SHA-256 digests and UUIDs (hex only) are not secrets', () => {
    const text = [
      'commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12',
      'sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      'id 123e4567-e89b-12d3-a456-426614174000-9f8e7d6c',
    ].join('\n');
    assert.deepEqual(found(text), []);
  });
  test('base64 of English text, identifiers, paths, words and numbers are not secrets', () => {
    const prose = Buffer.from('Please send the quarterly report to the finance team by Friday').toString('base64');
    const text = [
      prose,
      'AbstractSingletonProxyFactoryBean2Configuration',
      'getUserAccountSettingsV2ForOrganization',
      '/usr/lib/x86_64-linux-gnu/libssl3',
      'MY_SERVICE_CONFIG_VALUE_2_ENABLED_NOW',
      'internationalization_localization_settings',
      '12345678901234567890123456789012345678',
      'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1',
    ].join(' ');
    assert.ok(shannonEntropy(prose) >= 4, 'the encoded text passes the entropy test: something else must leave it out');
    assert.deepEqual(found(text), []);
  });
  test('a token a specific rule found is reported once, by that rule', () => {
    const ghp = `ghp_${base62(36, 9)}`;
    assert.deepEqual(found(`use ${ghp}`), [['github_token', ghp]]);
  });
  test('min_length and min_entropy are configurable', () => {
    // 24 characters: below the default length; the first seed whose token is clearly random.
    let seed = 10;
    while (shannonEntropy(base62(24, seed)) < 4.2 || !/\d/.test(base62(24, seed))) seed++;
    const token = base62(24, seed);
    assert.deepEqual(found(`t ${token}`), []);
    assert.deepEqual(found(`t ${token}`, { minLength: 20 }), [['high_entropy', token]]);
    assert.deepEqual(found(`t ${token}`, { minLength: 20, minEntropy: 6 }), []);
  });
  test('tokens longer than the bound (an inline blob) are data, not a credential', () => {
    assert.deepEqual(found(`data:image/png;base64,${randomBytes(4000).toString('base64')}`), []);
  });
});

describe('categories', () => {
  test('only the requested categories are reported', () => {
    const text = `AKIAIOSFODNN7EXAMPLE ${base62(40, 11)}`;
    const only = (categories: SecretCategory[]) => found(text, { categories }).map(([e]) => e);
    assert.deepEqual(only(['aws_access_key']), ['aws_access_key']);
    assert.deepEqual(only(['high_entropy']), ['high_entropy']);
    assert.deepEqual(only([]), []);
  });
});
