// An upstream response's headers as undici delivers them to a raw handler: a flat list of
// Buffers, name, value, name, value, …, names in the case the provider sent. The relay
// needs a few of them by name and passes an allow-list on; turning every name into a
// string to look it up costs a native call each (a provider such as OpenAI sends 20 or
// more headers, most of which stay at the gateway). So names are compared as bytes, and
// only what passes becomes a string.

/**
 * The upstream response headers a client gets: the body's type, encoding and caching, the
 * provider's request ids (what its support asks for) and its rate-limit headers. Anything
 * else a provider sends (its internals, cookies, hop-by-hop headers) stays at the gateway
 * unless the provider's `expose_headers` names it.
 */
export const PASSED_HEADERS: readonly string[] = Object.freeze([
  'content-type',
  'content-encoding',
  // An SSE response's no-cache keeps intermediaries from buffering or storing it.
  'cache-control',
  'x-request-id',
  'request-id',
  'apim-request-id',
  'retry-after',
  'retry-after-ms',
]);

/** A provider's rate-limit headers: OpenAI's and Azure's, Anthropic's, and the IETF draft's. */
const RATE_LIMIT_PREFIXES = ['x-ratelimit-', 'anthropic-ratelimit-'].map((p) => Buffer.from(p, 'latin1'));
const RATE_LIMIT_NAMES = ['ratelimit', 'ratelimit-policy'].map((p) => Buffer.from(p, 'latin1'));

/** PASSED_HEADERS by length, each with its lower-case bytes: a name is compared with those of its length only. */
const PASSED_BY_LENGTH: ReadonlyArray<ReadonlyArray<{ readonly bytes: Buffer; readonly name: string }> | undefined> = (() => {
  const table: Array<Array<{ bytes: Buffer; name: string }> | undefined> = [];
  for (const name of PASSED_HEADERS) (table[name.length] ??= []).push({ bytes: Buffer.from(name, 'latin1'), name });
  return table;
})();

/**
 * Whether `raw` begins with `lower` (lower-case bytes), ignoring ASCII case. Exact for any
 * byte: only A-Z are folded.
 */
function startsWithFolded(raw: Buffer, lower: Buffer): boolean {
  if (raw.length < lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    const b = raw[i] as number;
    if (b !== lower[i] && !(b >= 0x41 && b <= 0x5a && (b | 0x20) === lower[i])) return false;
  }
  return true;
}

/** The allow-list's own spelling of `raw` when it is one of PASSED_HEADERS, else null. */
export function passedName(raw: Buffer): string | null {
  const candidates = PASSED_BY_LENGTH[raw.length];
  if (candidates === undefined) return null;
  for (const c of candidates) if (startsWithFolded(raw, c.bytes)) return c.name;
  return null;
}

/** Whether `raw` names a provider's rate-limit header (x-ratelimit-*, anthropic-ratelimit-*, ratelimit, ratelimit-policy). */
export function isRateLimitName(raw: Buffer): boolean {
  for (const p of RATE_LIMIT_PREFIXES) if (startsWithFolded(raw, p)) return true;
  for (const n of RATE_LIMIT_NAMES) if (raw.length === n.length && startsWithFolded(raw, n)) return true;
  return false;
}

/** A header name as a lower-case string. */
export function headerName(raw: Buffer): string {
  return raw.toString('latin1').toLowerCase();
}

/** A lower-case header name as bytes, for rawHeaderValue (built once, where the name is a constant). */
export function headerNameBytes(name: string): Buffer {
  return Buffer.from(name.toLowerCase(), 'latin1');
}

/** The first value of the header named by `name` (from headerNameBytes) in a raw list, or undefined. */
export function rawHeaderValue(raw: readonly Buffer[], name: Buffer): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i] as Buffer;
    if (n.length === name.length && startsWithFolded(n, name)) return (raw[i + 1] as Buffer).toString('latin1');
  }
  return undefined;
}
