// Personal data in free text: each entity is found by a cheap candidate scan (a literal
// anchor or a regex whose every quantifier is bounded, so a match attempt costs at most the
// entity's reach and a scan is linear in the text), then kept only if it passes the entity's
// own validation (Luhn, the IBAN checksum, the SSN area rules, an address's octets). The
// candidates are deliberately loose and the validators strict: a near miss costs nothing.

import { isIP } from 'node:net';
import { getCountrySpecifications, isValidIBAN } from 'ibantools';
import { PII_ENTITIES, type PiiEntity } from '../../config/index.js';
import { type Finding, resolveOverlaps, scanCandidates } from './finding.js';
import { findPhones, PHONE_MAX_CHARS } from './phone.js';

// The entity names are the config's (guardrails.<name>.entities): one list, so a name the schema accepts is one a detector has.
export { PII_ENTITIES, type PiiEntity };

/** Every finding of the given entities in `text`, sorted and not overlapping. */
export function detectPii(text: string, entities: readonly PiiEntity[] = PII_ENTITIES): Finding[] {
  const out: Finding[] = [];
  const wanted = new Set(entities);
  // The structured entities first, then the numbers in what they left: a card scan that
  // read an IBAN's last digits and the card after it as one number would find a "card"
  // inside the IBAN, lose it to the longer IBAN, and miss the real card.
  for (const entity of STRUCTURED) if (wanted.has(entity)) finders[entity](text, out);
  const rest = out.length === 0 ? text : blanked(text, out);
  for (const entity of wanted) if (!STRUCTURED.includes(entity)) finders[entity](rest, out);
  return resolveOverlaps(out);
}

const STRUCTURED: readonly PiiEntity[] = ['iban', 'email'];

/** `text` with each finding's span replaced by NULs: the same offsets, and no word or digit for a later scan to run into. */
function blanked(text: string, findings: readonly Finding[]): string {
  let out = '';
  let at = 0;
  for (const f of [...findings].sort((a, b) => a.start - b.start)) {
    if (f.start < at) continue;
    out += text.slice(at, f.start) + '\u0000'.repeat(f.end - f.start);
    at = f.end;
  }
  return out + text.slice(at);
}

const finders: Record<PiiEntity, (text: string, out: Finding[]) => void> = {
  email: findEmails,
  phone: findPhones,
  credit_card: findCards,
  iban: findIbans,
  us_ssn: findSsns,
  ip_address: findIpAddresses,
};

/** The longest candidate the card pattern reads (a finding is at most 19 digits and 6 separators). */
const CARD_CANDIDATE_MAX = 19 + 6 * 9;
// RFC 5321's limits: 64 octets of local part, 253 of domain.
const LOCAL_MAX = 64;
const DOMAIN_MAX = 253;
/** IBANs are at most 34 characters; written in groups of 4 they gain a space per group. */
const IBAN_MAX = Math.max(...Object.values(getCountrySpecifications()).map((s) => s.chars ?? 0));
const IBAN_LENGTHS = new Map(
  Object.entries(getCountrySpecifications()).flatMap(([code, s]) => (s.chars ? [[code, s.chars] as const] : [])),
);

/** How many characters a match of each entity spans at most (the regexes' and scanners' bounds). */
export const PII_MAX_MATCH_CHARS: Readonly<Record<PiiEntity, number>> = {
  email: LOCAL_MAX + 1 + DOMAIN_MAX,
  phone: PHONE_MAX_CHARS,
  credit_card: CARD_CANDIDATE_MAX,
  iban: IBAN_MAX + Math.floor((IBAN_MAX - 1) / 4),
  us_ssn: 11,
  ip_address: 45,
};

/** A bare 9-digit SSN counts only with one of these words this many characters before it. */
export const SSN_CONTEXT_CHARS = 32;

const isLocalChar = (c: number) => isAlnum(c) || c === 0x2e || c === 0x5f || c === 0x25 || c === 0x2b || c === 0x2d;
const isDomainChar = (c: number) => isAlnum(c) || c === 0x2e || c === 0x2d;
function isAlnum(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

// Anchored on each '@' and expanded both ways within RFC 5321's bounds: a regex with an
// unanchored local part would retry at every letter of a long word.
function findEmails(text: string, out: Finding[]): void {
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    let end = at + 1;
    let dots = 0;
    while (end < text.length && end - at - 1 < DOMAIN_MAX && isDomainChar(text.charCodeAt(end))) {
      if (text.charCodeAt(end) === 0x2e) dots++;
      end++;
    }
    if (dots === 0) continue;
    // A sentence's full stop or a dash after the address is not part of it.
    while (end > at + 1 && (text.charCodeAt(end - 1) === 0x2e || text.charCodeAt(end - 1) === 0x2d)) end--;
    let start = at;
    while (start > 0 && at - start < LOCAL_MAX && isLocalChar(text.charCodeAt(start - 1))) start--;
    if (start > 0 && isLocalChar(text.charCodeAt(start - 1))) continue; // a local part longer than 64
    while (start < at && text.charCodeAt(start) === 0x2e) start++;
    if (start === at) continue;
    const local = text.slice(start, at);
    if (local.endsWith('.') || local.includes('..')) continue;
    if (isDomain(text.slice(at + 1, end))) out.push({ entity: 'email', start, end });
  }
}

function isDomain(domain: string): boolean {
  const labels = domain.split('.');
  if (labels.length < 2) return false;
  for (const label of labels) {
    if (label.length === 0 || label.length > 63 || label.startsWith('-') || label.endsWith('-')) return false;
  }
  return /^[A-Za-z]{2,24}$/.test(labels[labels.length - 1]!);
}

// 13–19 digits, optionally in groups split by one kind of separator: a first group of 3 or
// more digits (no card is written "4 1 1 1 …", and a run of single digits must not cost a
// candidate per digit), then groups of 2 to 8. The candidate may run into a following number
// ("… 1111 exp 12 30" stops at "exp", but "… 1111 2024" does not), so whole groups are
// dropped from the end until one validates.
const CARD = /(?<![\w.+-])\d{3,19}(?:[ -]\d{2,8}){0,6}(?!\w|[.-]\d)/g;

function findCards(text: string, out: Finding[]): void {
  scanCandidates(text, CARD, (m) => {
    const candidate = m[0];
    let digits = '';
    let sep = '';
    // Where each group of digits ends, in the candidate and in `digits`: the places a card may stop.
    const groupEnds: number[] = [];
    const digitCounts: number[] = [];
    let valid = true;
    for (let i = 0; i < candidate.length && valid; i++) {
      const c = candidate[i]!;
      if (c !== ' ' && c !== '-') {
        digits += c;
        continue;
      }
      // One kind of separator throughout, never two in a row.
      valid = (sep === '' || sep === c) && candidate[i - 1] !== ' ' && candidate[i - 1] !== '-';
      sep = c;
      groupEnds.push(i);
      digitCounts.push(digits.length);
    }
    if (!valid || digits.length < 13) return false;
    groupEnds.push(candidate.length);
    digitCounts.push(digits.length);
    for (let k = groupEnds.length - 1; k >= 0 && digitCounts[k]! >= 13; k--) {
      const number = digits.slice(0, digitCounts[k]);
      if (number.length <= 19 && knownIin(number) && luhn(number)) {
        out.push({ entity: 'credit_card', start: m.index, end: m.index + groupEnds[k]! });
        // Resume after the card, not after the candidate: the dropped groups may start another number.
        CARD.lastIndex = m.index + groupEnds[k]!;
        return true;
      }
    }
    return false;
  });
}

/** The Luhn check (ISO/IEC 7812-1): doubling every second digit from the right, the sum is a multiple of 10. */
export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = digits.length - 1, double = false; i >= 0; i--, double = !double) {
    let d = digits.charCodeAt(i) - 0x30;
    if (double) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

// The issuer ranges of the schemes in wide use, with each scheme's lengths: a Luhn-valid
// number outside them (1 in 10 random numbers passes Luhn) is more likely an order number.
function knownIin(d: string): boolean {
  const n = d.length;
  const p2 = Number(d.slice(0, 2));
  const p3 = Number(d.slice(0, 3));
  const p4 = Number(d.slice(0, 4));
  const p6 = Number(d.slice(0, 6));
  if (d[0] === '4') return n === 13 || n === 16 || n === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p6 >= 222100 && p6 <= 272099)) return n === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return n === 15; // American Express
  if (p4 === 6011 || (p3 >= 644 && p3 <= 649) || p2 === 65 || p2 === 62) return n >= 16; // Discover, UnionPay
  if (p4 >= 3528 && p4 <= 3589) return n >= 16; // JCB
  if ((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39) return n >= 14; // Diners Club
  return p2 === 50 || (p2 >= 56 && p2 <= 69); // Maestro
}

// A country code and check digits anchor the scan; the country's registered length (from
// ibantools' copy of the SWIFT registry) says how many characters to take, written either
// without spaces or in groups of 4, and ibantools checks the BBAN's format and mod-97.
// Upper case only, as IBANs are printed: lower-case runs are words far more often.
const IBAN_START = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}/g;

function findIbans(text: string, out: Finding[]): void {
  IBAN_START.lastIndex = 0;
  for (let m = IBAN_START.exec(text); m !== null; m = IBAN_START.exec(text)) {
    const length = IBAN_LENGTHS.get(m[0].slice(0, 2));
    if (length === undefined) continue;
    let i = m.index;
    let iban = '';
    let spaced: boolean | undefined;
    while (iban.length < length && i < text.length) {
      if (iban.length > 0 && iban.length % 4 === 0) {
        const gap = text.charCodeAt(i) === 0x20;
        spaced ??= gap;
        if (gap !== spaced) break;
        if (gap) i++;
      }
      const c = text.charCodeAt(i);
      if (!((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a))) break;
      iban += text[i];
      i++;
    }
    if (iban.length !== length || isAlnum(text.charCodeAt(i)) || !isValidIBAN(iban)) continue;
    out.push({ entity: 'iban', start: m.index, end: i });
    IBAN_START.lastIndex = i;
  }
}

// AAA-GG-SSSS, dashed or spaced (one separator throughout). A bare run of 9 digits is far
// more often an order or account number, so it counts only when "SSN" or "social security"
// stands within SSN_CONTEXT_CHARS before it.
const SSN = /(?<![\w-])(\d{3})([- ])(\d{2})\2(\d{4})(?!\w|-\d)/g;
const BARE_SSN = /(?<![\w-])(\d{3})(\d{2})(\d{4})(?!\w|-\d)/g;
const SSN_CONTEXT = /\bssn\b|social security/i;

function findSsns(text: string, out: Finding[]): void {
  const push = (m: RegExpExecArray) => out.push({ entity: 'us_ssn', start: m.index, end: m.index + m[0].length }) > 0;
  scanCandidates(text, SSN, (m) => ssnRules(m[1]!, m[3]!, m[4]!) && push(m));
  scanCandidates(
    text,
    BARE_SSN,
    (m) => ssnRules(m[1]!, m[2]!, m[3]!) && SSN_CONTEXT.test(text.slice(Math.max(0, m.index - SSN_CONTEXT_CHARS), m.index)) && push(m),
  );
}

/** The SSA's rules: no area 000, 666 or 900–999, no group 00, no serial 0000. */
function ssnRules(area: string, group: string, serial: string): boolean {
  return area !== '000' && area !== '666' && area[0] !== '9' && group !== '00' && serial !== '0000';
}

// IPv4 as a dotted quad (octets ≤ 255, no leading zeros, which some parsers read as octal);
// IPv6 as a run of hex digits, colons and dots that node:net accepts, with at least two
// groups and four hex digits, so that "a::b" in a C++ scope or "::1" alone is not taken for an address.
const IPV4 = /(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?!\w|\.\d)/g;
const IPV6 = /(?<![\w:.])(?=[0-9A-Fa-f]{0,4}:)[0-9A-Fa-f:.]{2,45}/y;

function isHexCode(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

function findIpAddresses(text: string, out: Finding[]): void {
  scanCandidates(text, IPV4, (m) => {
    if (!m.slice(1, 5).every((o) => Number(o) <= 255 && (o === '0' || o[0] !== '0'))) return false;
    return out.push({ entity: 'ip_address', start: m.index, end: m.index + m[0].length }) > 0;
  });
  // An IPv6 address has a colon within its first five characters: candidates are tried only
  // where one could start, the hex digits before each colon (scanning every word of a long
  // prompt for a colon ahead of it was most of this detector's time).
  let after = 0;
  for (let colon = text.indexOf(':'); colon !== -1; colon = text.indexOf(':', Math.max(colon + 1, after))) {
    let start = colon;
    while (start > 0 && colon - start < 4 && isHexCode(text.charCodeAt(start - 1))) start--;
    if (start < after) continue;
    IPV6.lastIndex = start;
    const m = IPV6.exec(text);
    if (m === null) continue;
    after = start + m[0].length;
    if (/\w/.test(text[m.index + m[0].length] ?? '')) continue;
    let token = m[0];
    while (token.endsWith('.')) token = token.slice(0, -1);
    if (token.endsWith(':') && !token.endsWith('::')) token = token.slice(0, -1);
    const groups = token.split(':').filter((g) => g !== '');
    const hexDigits = groups.reduce((n, g) => n + g.length, 0);
    if (groups.length >= 2 && hexDigits >= 4 && isIP(token) === 6)
      out.push({ entity: 'ip_address', start: m.index, end: m.index + token.length });
  }
}
