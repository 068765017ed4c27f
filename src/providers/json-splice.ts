// Finding one top-level value in a JSON document, and replacing a top-level string without
// re-serialising the document, so a forwarded body keeps every other byte: number
// spellings (`1.0`, integers beyond 2^53), escapes, key order and spacing. A client body
// has been parsed before it gets here, so the scanner trusts its structure; on an upstream
// body nobody parsed, malformed input still ends the scan, and at worst gives a range that
// then fails to parse.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isSpace(b: number | undefined): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** Index just past the string that starts (with its quote) at `i`. */
function skipString(raw: Buffer, i: number): number {
  for (let j = i + 1; j < raw.length; j++) {
    const b = raw[j];
    if (b === BACKSLASH) j++;
    else if (b === QUOTE) return j + 1;
  }
  return raw.length;
}

/** Index just past the value that starts at `i`. */
function skipValue(raw: Buffer, i: number): number {
  const first = raw[i];
  if (first === QUOTE) return skipString(raw, i);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    for (let j = i; j < raw.length; j++) {
      const b = raw[j];
      if (b === QUOTE) j = skipString(raw, j) - 1;
      else if (b === 0x7b || b === 0x5b) depth++;
      else if (b === 0x7d || b === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return raw.length;
  }
  let j = i;
  while (j < raw.length && raw[j] !== 0x2c && raw[j] !== 0x7d && raw[j] !== 0x5d && !isSpace(raw[j])) j++;
  return j;
}

function skipSpace(raw: Buffer, i: number): number {
  while (isSpace(raw[i])) i++;
  return i;
}

function unescapeKey(quoted: string): string | null {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return null;
  }
}

/**
 * Where the value of top-level `key` lies in `raw`, as [start, end) byte offsets, or null
 * when the document has no such key. Only the top level is walked: nested values are
 * skipped whole, so a key of the same name inside them never matches. With duplicate keys
 * the last one counts, as in JSON.parse.
 */
export function topLevelValue(raw: Buffer, key: string): readonly [number, number] | null {
  let i = skipSpace(raw, 0);
  if (raw[i] !== 0x7b) return null;
  i = skipSpace(raw, i + 1);
  let found: [number, number] | null = null;
  while (i < raw.length && raw[i] === QUOTE) {
    const keyEnd = skipString(raw, i);
    const rawKey = raw.toString('utf8', i, keyEnd);
    const name = rawKey.includes('\\') ? unescapeKey(rawKey) : rawKey.slice(1, -1);
    if (name === null) return null;
    i = skipSpace(raw, keyEnd);
    if (raw[i] !== 0x3a) return null;
    i = skipSpace(raw, i + 1);
    const valueEnd = skipValue(raw, i);
    if (name === key) found = [i, valueEnd];
    i = skipSpace(raw, valueEnd);
    if (raw[i] !== 0x2c) break;
    i = skipSpace(raw, i + 1);
  }
  return found;
}

/**
 * Returns `raw` with the string value of top-level `key` replaced by `value`, or null when
 * the document has no such top-level string.
 */
export function replaceTopLevelString(raw: Buffer, key: string, value: string): Buffer | null {
  const found = topLevelValue(raw, key);
  if (found === null || raw[found[0]] !== QUOTE) return null;
  return Buffer.concat([raw.subarray(0, found[0]), Buffer.from(JSON.stringify(value)), raw.subarray(found[1])]);
}
