import { createHmac, hash } from 'node:crypto';
import type { AwsKeys } from './aws-client.js';
import type { TokenSource } from './token-source.js';

/** The signing name of the Bedrock Runtime (its endpoints are bedrock-runtime.*, its scope is bedrock). */
const BEDROCK_SERVICE = 'bedrock';

/** The headers a signature covers besides `host` and the `x-amz-*` it adds: the rest (tracing, request ids) may change on the way without breaking it. */
const SIGNED = ['content-type'] as const;

/**
 * The day's signing key, derived from the secret through four HMACs (SigV4's date, region,
 * service and `aws4_request` steps). It changes only with the day or the keys, so it is
 * derived once per day and secret, not once per request.
 */
interface SigningKey {
  readonly secret: string;
  readonly day: string;
  readonly key: Buffer;
}

/**
 * Signs a bedrock provider's requests with AWS Signature Version 4, over the exact bytes
 * sent and the host and path they are sent to (the base URL's path prefix included, as the
 * pool sends it). The keys come from the provider's source at signing time, so refreshed
 * keys apply from the next request on. Signing is synchronous: the body is hashed once, and
 * the string to sign is one more HMAC with the cached day key.
 */
export class AwsSigner {
  readonly #keys: TokenSource<AwsKeys>;
  readonly #region: string;
  /** What `host` the pool's requests carry: the host name, with the port when it is not the scheme's default. */
  readonly #host: string;
  readonly #basePath: string;
  #signingKey: SigningKey | null = null;
  /** The last few canonical paths: a provider calls a handful of models, each with two methods. */
  readonly #paths = new Map<string, string>();

  constructor(keys: TokenSource<AwsKeys>, region: string, baseUrl: string) {
    this.#keys = keys;
    this.#region = region;
    const url = new URL(baseUrl);
    this.#host = url.host;
    this.#basePath = url.pathname.replace(/\/+$/, '');
  }

  /** The source of the keys, for the attempt's check that there are some. */
  get keys(): TokenSource<AwsKeys> {
    return this.#keys;
  }

  /** As signNow, for callers that hold a promise. */
  async sign(
    method: string,
    path: string,
    headers: Readonly<Record<string, string>>,
    body: string | Buffer | null,
  ): Promise<Record<string, string>> {
    return this.signNow(method, path, headers, body);
  }

  /**
   * The headers to add to the call: `authorization`, `x-amz-date`, `x-amz-content-sha256`,
   * `x-amz-security-token` with temporary keys. Throws when the source has no keys.
   */
  signNow(
    method: string,
    path: string,
    headers: Readonly<Record<string, string>>,
    body: string | Buffer | null,
    now: Date = new Date(),
  ): Record<string, string> {
    const keys = this.#keys.current();
    if (keys === null) throw new Error(this.#keys.problem());
    const longDate = now
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z')
      .replace(/[-:]/g, '');
    const day = longDate.slice(0, 8);
    const scope = `${day}/${this.#region}/${BEDROCK_SERVICE}/aws4_request`;
    // One-shot hashes: no Hash object per call.
    const payloadHash = hash('sha256', body ?? '', 'hex');
    const out: Record<string, string> = { 'x-amz-date': longDate };
    if (keys.sessionToken) out['x-amz-security-token'] = keys.sessionToken;
    out['x-amz-content-sha256'] = payloadHash;

    // Canonical headers, sorted by name: host, content-type and the x-amz-* above.
    const canonical: Record<string, string> = { host: this.#host, ...out };
    for (const name of SIGNED) {
      const value = headers[name];
      if (value !== undefined) canonical[name] = value.trim().replace(/\s+/g, ' ');
    }
    const names = Object.keys(canonical).sort();
    let headerLines = '';
    for (const name of names) headerLines += `${name}:${canonical[name]}\n`;
    const signedHeaders = names.join(';');

    const q = path.indexOf('?');
    const canonicalRequest = `${method}\n${this.#canonicalPath(q === -1 ? path : path.slice(0, q))}\n${q === -1 ? '' : canonicalQuery(path.slice(q + 1))}\n${headerLines}\n${signedHeaders}\n${payloadHash}`;
    const stringToSign = `AWS4-HMAC-SHA256\n${longDate}\n${scope}\n${hash('sha256', canonicalRequest, 'hex')}`;
    const signature = createHmac('sha256', this.#keyFor(keys.secretAccessKey, day)).update(stringToSign).digest('hex');
    out.authorization = `AWS4-HMAC-SHA256 Credential=${keys.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return out;
  }

  #keyFor(secret: string, day: string): Buffer {
    const known = this.#signingKey;
    if (known !== null && known.day === day && known.secret === secret) return known.key;
    const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();
    const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), this.#region), BEDROCK_SERVICE), 'aws4_request');
    this.#signingKey = { secret, day, key };
    return key;
  }

  /**
   * The path as the pool sends it (base path included), normalized and escaped once more, as
   * the AWS SDK signs it: a model id's `:` is sent as %3A and signed as %253A.
   */
  #canonicalPath(path: string): string {
    let known = this.#paths.get(path);
    if (known !== undefined) return known;
    const full = this.#basePath + path;
    const segments: string[] = [];
    for (const segment of full.split('/')) {
      if (segment === '' || segment === '.') continue;
      if (segment === '..') segments.pop();
      else segments.push(segment);
    }
    const normalized = `/${segments.join('/')}${segments.length > 0 && full.endsWith('/') ? '/' : ''}`;
    known = escapeUri(normalized).replace(/%2F/g, '/');
    if (this.#paths.size >= 64) this.#paths.clear();
    this.#paths.set(path, known);
    return known;
  }
}

/** RFC 3986 escaping, as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
function escapeUri(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The query string's pairs, escaped and sorted by name (values of a repeated name sorted too). */
function canonicalQuery(query: string): string {
  const byName = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(query)) {
    const key = escapeUri(name);
    const pair = `${key}=${escapeUri(value)}`;
    const list = byName.get(key);
    if (list === undefined) byName.set(key, [pair]);
    else list.push(pair);
  }
  return [...byName]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, pairs]) => pairs.sort().join('&'))
    .join('&');
}
