// The catch-all for credentials no specific rule knows: a long token of base64/base64url
// characters whose characters are spread out enough (Shannon entropy per character) to look
// random. It is tuned against what a prompt is full of: identifiers, paths, hashes, encoded text.

import type { Finding } from './finding.js';

export interface EntropyOptions {
  /** The shortest token considered, in characters (default 32). */
  readonly minLength?: number;
  /** The least Shannon entropy, in bits per character (default 4.0). */
  readonly minEntropy?: number;
}

export const DEFAULT_MIN_LENGTH = 32;
export const DEFAULT_MIN_ENTROPY = 4.0;
/**
 * Longer tokens are data (an inline image, a file in base64), not a credential; without the
 * bound a stream would have to hold back a whole blob. A token is judged only once it is
 * known to be at most this long, so a stream holding back this much sees what a whole text does.
 */
export const HIGH_ENTROPY_MAX_CHARS = 4096;

/** Shannon entropy of the string's UTF-16 code units, in bits per character. */
export function shannonEntropy(s: string): number {
  if (s.length === 0) return 0;
  const counts = new Map<number, number>();
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

// The first `minLength` characters of a run, tried only where a run starts (the lookbehind);
// the rest of the run is walked in code, since a regex's open-ended `{32,}` keeps a backtrack
// entry per character and slows to a crawl on a megabyte-long run. One regex per minimum length.
const tokenPatterns = new Map<number, RegExp>();
function tokenPattern(minLength: number): RegExp {
  let pattern = tokenPatterns.get(minLength);
  if (pattern === undefined) {
    pattern = new RegExp(`(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{${minLength}}`, 'g');
    tokenPatterns.set(minLength, pattern);
  }
  return pattern;
}

function isTokenChar(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    c === 0x2b ||
    c === 0x2f ||
    c === 0x3d ||
    c === 0x5f ||
    c === 0x2d
  );
}

// `=` inside a run is an assignment (`api_key=…`), at its end base64 padding.
const PART = /[^=]+(?:=+$)?/g;

/**
 * Finds high-entropy tokens in `text` that overlap none of `taken` (sorted findings of the
 * specific rules: a GitHub token is reported as one, not also as entropy).
 */
export function findHighEntropy(text: string, taken: readonly Finding[], options: EntropyOptions = {}): Finding[] {
  const minLength = Math.max(1, Math.floor(options.minLength ?? DEFAULT_MIN_LENGTH));
  const minEntropy = options.minEntropy ?? DEFAULT_MIN_ENTROPY;
  const out: Finding[] = [];
  let t = 0;
  const pattern = tokenPattern(minLength);
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    let runEnd = pattern.lastIndex;
    while (runEnd < text.length && isTokenChar(text.charCodeAt(runEnd))) runEnd++;
    pattern.lastIndex = runEnd;
    if (runEnd - m.index > HIGH_ENTROPY_MAX_CHARS) continue;
    for (const part of text.slice(m.index, runEnd).matchAll(PART)) {
      const start = m.index + part.index;
      const end = start + part[0].length;
      while (t < taken.length && taken[t]!.end <= start) t++;
      if (t < taken.length && taken[t]!.start < end) continue;
      if (looksSecret(part[0], minLength, minEntropy)) out.push({ entity: 'high_entropy', start, end });
    }
  }
  return out;
}

function looksSecret(token: string, minLength: number, minEntropy: number): boolean {
  if (token.length < minLength) return false;
  // Random strings of this length all but always mix letters and digits (a 32-character
  // base62 string lacks a digit with probability 0.4%); identifiers and paths rarely do.
  // A number alone is pii's (cards, IBAN digits), never a secret here.
  if (!/[0-9]/.test(token) || !/[A-Za-z]/.test(token)) return false;
  // Hex alone, with or without dashes, is a hash, a git SHA or a UUID: identifiers that fill
  // logs and code. Hex tops out at 4 bits per character anyway, so at the default threshold
  // only a perfectly even string could pass; it is left out on purpose, not by accident.
  if (/^[0-9A-Fa-f-]+$/.test(token)) return false;
  if (shannonEntropy(token) < minEntropy) return false;
  return !isMadeOfWords(token) && !isEncodedProse(token);
}

// One word of a camelCase, snake_case or path-like name: a capital and small letters, a run
// of capitals, a number, or punctuation. Each alternative is a plain run, so a scan is linear.
const WORD = /[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+|[^A-Za-z0-9]+/g;

// Identifiers and paths (`AbstractProxyFactoryBean2Config`, `/usr/lib/x86_64-linux-gnu`)
// pass 4 bits per character easily. Their letters come in words of 3 or more; a random
// string's mostly do not (in 32 base62 characters, about a fifth of the letters are in such
// runs), so a token whose letters are 80% words is a name.
function isMadeOfWords(token: string): boolean {
  let letters = 0;
  let inWords = 0;
  for (const [word] of token.matchAll(WORD)) {
    if (!/^[A-Za-z]/.test(word)) continue;
    letters += word.length;
    if (word.length >= 3) inWords += word.length;
  }
  return inWords >= 0.8 * letters;
}

// Base64 of ordinary text (a document pasted in encoded) has high entropy too. Decoded, it
// is printable and has words; a credential that decodes to printable text has no spaces.
function isEncodedProse(token: string): boolean {
  const body = token.replace(/=+$/, '');
  if (/[^A-Za-z0-9+/_-]/.test(body) || (/[+/]/.test(body) && /[_-]/.test(body))) return false;
  const bytes = Buffer.from(body.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  let spaces = 0;
  for (const b of bytes) {
    if (b === 0x20) spaces++;
    else if (b < 0x20 ? b !== 0x09 && b !== 0x0a && b !== 0x0d : b > 0x7e) return false;
  }
  return spaces >= 2;
}
