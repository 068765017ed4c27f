import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, CR, LF, OPEN_BRACE, OPEN_BRACKET, QUOTE, SPACE, TAB } from './ascii.js';

// Reading, counting and rewriting a JSON document's top-level members as bytes, without
// re-serialising it, so a forwarded body keeps every other byte: number spellings (`1.0`,
// integers beyond 2^53, which JSON.parse rounds), escapes, key order and spacing. A client
// body has been parsed before it gets here, so the scanner trusts its structure; on an
// upstream body nobody parsed, malformed input still ends the scan, and at worst gives a
// range that then fails to parse. Keys are compared decoded (`"mo\u0064el"` is `model`),
// as JSON.parse sees them.

function isSpace(b: number | undefined): boolean {
  return b === SPACE || b === LF || b === CR || b === TAB;
}

function skipSpace(raw: Buffer, i: number): number {
  while (isSpace(raw[i])) i++;
  return i;
}

/** Index just past the string that starts (with its quote) at `i`. */
function skipString(raw: Buffer, i: number): number {
  // Most strings are short (keys, roles): a byte loop beats indexOf's native call on them,
  // and indexOf wins on the long ones (message content).
  const near = Math.min(raw.length, i + 16);
  let j = i + 1;
  for (; j < near; j++) {
    const b = raw[j];
    if (b === QUOTE) return j + 1;
    if (b === BACKSLASH) j++;
  }
  for (;;) {
    const q = raw.indexOf(QUOTE, j);
    if (q === -1) return raw.length;
    let k = q - 1;
    while (raw[k] === BACKSLASH) k--;
    if ((q - k) % 2 === 1) return q + 1;
    j = q + 1;
  }
}

/** What a byte means to skipValue's walk over a nested value: 0 = nothing. */
const ROLE = new Uint8Array(256);
ROLE[QUOTE] = 1;
ROLE[OPEN_BRACE] = 2;
ROLE[OPEN_BRACKET] = 2;
ROLE[CLOSE_BRACE] = 3;
ROLE[CLOSE_BRACKET] = 3;

/** Index just past the value that starts at `i`. */
function skipValue(raw: Buffer, i: number): number {
  const first = raw[i];
  if (first === QUOTE) return skipString(raw, i);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (let j = i; j < raw.length; j++) {
      const role = ROLE[raw[j] as number];
      if (role === 0) continue;
      if (role === 1) j = skipString(raw, j) - 1;
      else if (role === 2) depth++;
      else if (--depth === 0) return j + 1;
    }
    return raw.length;
  }
  let j = i;
  while (j < raw.length && raw[j] !== COMMA && raw[j] !== CLOSE_BRACE && raw[j] !== CLOSE_BRACKET && !isSpace(raw[j])) j++;
  return j;
}

/** The key whose quoted form spans [start, end), decoded; null when its escapes are malformed. */
function decodeKey(raw: Buffer, start: number, end: number): string | null {
  for (let k = start + 1; k < end - 1; k++) {
    if (raw[k] !== BACKSLASH) continue;
    try {
      return JSON.parse(raw.toString('utf8', start, end)) as string;
    } catch {
      return null;
    }
  }
  return raw.toString('utf8', start + 1, end - 1);
}

/** Whether the quoted key spanning [start, end) is `key` (its UTF-8 bytes in `needle`), escapes decoded. */
function keyIs(raw: Buffer, start: number, end: number, needle: Buffer, key: string): boolean {
  if (end - start - 2 === needle.length) {
    let k = 0;
    while (k < needle.length && raw[start + 1 + k] === needle[k]) k++;
    if (k === needle.length) return true;
  }
  // Only a key with an escape can spell `key` in other bytes.
  for (let k = start + 1; k < end - 1; k++) if (raw[k] === BACKSLASH) return decodeKey(raw, start, end) === key;
  return false;
}

/**
 * One member of an object: its quoted key spans [keyStart, keyEnd) and its value
 * [valueStart, valueEnd). Returning true stops the walk.
 */
type MemberVisitor = (keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => boolean | undefined;

/**
 * Walks the members of the object whose `{` is at `open`, in order. Returns the index of
 * its `}`, or -1 when the bytes stop making sense (or the visitor stopped the walk).
 */
function walkMembers(raw: Buffer, open: number, visit: MemberVisitor): number {
  let i = skipSpace(raw, open + 1);
  if (raw[i] === CLOSE_BRACE) return i;
  while (raw[i] === QUOTE) {
    const keyStart = i;
    const keyEnd = skipString(raw, i);
    i = skipSpace(raw, keyEnd);
    if (raw[i] !== COLON) return -1;
    const valueStart = skipSpace(raw, i + 1);
    if (valueStart >= raw.length) return -1;
    const valueEnd = skipValue(raw, valueStart);
    if (visit(keyStart, keyEnd, valueStart, valueEnd) === true) return -1;
    i = skipSpace(raw, valueEnd);
    if (raw[i] === CLOSE_BRACE) return i;
    if (raw[i] !== COMMA) return -1;
    i = skipSpace(raw, i + 1);
  }
  return -1;
}

/** Index of the document's opening `{`, or -1 when it is not an object. */
function objectStart(raw: Buffer): number {
  const i = skipSpace(raw, 0);
  return raw[i] === OPEN_BRACE ? i : -1;
}

/** The value ranges of every member named `key` in the object at `open`, in order. */
function membersNamed(raw: Buffer, open: number, key: string): Array<readonly [number, number]> {
  const needle = Buffer.from(key);
  const found: Array<readonly [number, number]> = [];
  walkMembers(raw, open, (ks, ke, vs, ve) => {
    if (keyIs(raw, ks, ke, needle, key)) found.push([vs, ve]);
    return undefined;
  });
  return found;
}

/**
 * Where the value of top-level `key` lies in `raw`, as [start, end) byte offsets, or null
 * when the document has no such key. Only the top level is walked: nested values are
 * skipped whole, so a key of the same name inside them never matches. With duplicate keys
 * the last one counts, as in JSON.parse.
 */
export function topLevelValue(raw: Buffer, key: string): readonly [number, number] | null {
  const open = objectStart(raw);
  if (open === -1) return null;
  return membersNamed(raw, open, key).at(-1) ?? null;
}

/**
 * The number of members of the top-level object, counted as written (a key named twice
 * counts twice); -1 when the document is not an object. One pass, nothing decoded: set
 * against the parsed object's key count, it tells whether a key was named twice.
 */
export function topLevelMemberCount(raw: Buffer): number {
  const open = objectStart(raw);
  if (open === -1) return -1;
  let members = 0;
  walkMembers(raw, open, () => {
    members++;
    return undefined;
  });
  return members;
}

/** The first top-level key, decoded, that the document names a second time; null when none is. */
export function duplicateTopLevelKey(raw: Buffer): string | null {
  const open = objectStart(raw);
  if (open === -1) return null;
  const seen = new Set<string>();
  let duplicate: string | null = null;
  walkMembers(raw, open, (ks, ke) => {
    const key = decodeKey(raw, ks, ke);
    if (key === null) return undefined;
    if (seen.has(key)) duplicate = key;
    else seen.add(key);
    return duplicate !== null;
  });
  return duplicate;
}

/** `raw` with [start, end) replaced by `bytes`. */
function splice(raw: Buffer, start: number, end: number, bytes: Buffer): Buffer {
  return Buffer.concat([raw.subarray(0, start), bytes, raw.subarray(end)], raw.length - (end - start) + bytes.length);
}

/** A member to insert first in an object, as bytes: alone, or followed by a comma. Built once. */
export interface FirstMember {
  readonly alone: Buffer;
  readonly leading: Buffer;
}

export function firstMember(key: string, json: string): FirstMember {
  const member = `${JSON.stringify(key)}:${json}`;
  return { alone: Buffer.from(member), leading: Buffer.from(`${member},`) };
}

/** `member` made the first member of the object at `open`. */
function insertFirst(raw: Buffer, open: number, member: FirstMember): Buffer {
  const empty = raw[skipSpace(raw, open + 1)] === CLOSE_BRACE;
  return splice(raw, open + 1, open + 1, empty ? member.alone : member.leading);
}

/**
 * `raw` with every member named `key` of the object at `open` given the value `json` (a
 * JSON text), or `json` inserted as its first member when it has none. Every member, not
 * the last: a provider that reads the first of two keys must read the new value too.
 */
function withMember(raw: Buffer, open: number, key: string, json: string): Buffer {
  const found = membersNamed(raw, open, key);
  if (found.length === 0) return insertFirst(raw, open, firstMember(key, json));
  const value = Buffer.from(json);
  if (found.every(([s, e]) => e - s === value.length && raw.compare(value, 0, value.length, s, e) === 0)) return raw;
  const parts: Buffer[] = [];
  let from = 0;
  for (const [s, e] of found) {
    parts.push(raw.subarray(from, s), value);
    from = e;
  }
  parts.push(raw.subarray(from));
  return Buffer.concat(parts);
}

/**
 * `raw` with top-level `key` set to `json` (a JSON text): its value's bytes replaced, or
 * the member inserted first when the document has none. The same buffer when the value is
 * already those bytes; null when the document is not an object.
 */
export function withTopLevelMember(raw: Buffer, key: string, json: string): Buffer | null {
  const open = objectStart(raw);
  return open === -1 ? null : withMember(raw, open, key, json);
}

/**
 * `raw` with `member` inserted first in the top-level object, for a key the parsed
 * document is known not to have (nothing is scanned); null when it is not an object.
 */
export function withFirstMember(raw: Buffer, member: FirstMember): Buffer | null {
  const open = objectStart(raw);
  return open === -1 ? null : insertFirst(raw, open, member);
}

/**
 * `raw` with `member` set to `json` inside the object that is top-level `key`'s value
 * (`stream_options.include_usage`): the object is created when the document has no such
 * key, or when its value is not an object (null). The same buffer when nothing changes;
 * null when the document is not an object.
 */
export function withNestedMember(raw: Buffer, key: string, member: string, json: string): Buffer | null {
  const open = objectStart(raw);
  if (open === -1) return null;
  const found = membersNamed(raw, open, key);
  const fresh = `{${JSON.stringify(member)}:${json}}`;
  if (found.length === 0) return insertFirst(raw, open, firstMember(key, fresh));
  // With the top-level keys checked at the edge there is one; the parsed (last) one decides.
  const [start, end] = found.at(-1) as readonly [number, number];
  if (raw[start] !== OPEN_BRACE) return splice(raw, start, end, Buffer.from(fresh));
  const options = raw.subarray(start, end);
  const inner = withMember(options, 0, member, json);
  return inner === options ? raw : splice(raw, start, end, inner);
}
