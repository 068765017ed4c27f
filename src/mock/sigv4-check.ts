import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

// AWS Signature Version 4, checked the way AWS checks it: the signature is computed again
// with the caller's secret over the request exactly as it arrived (method, the path as on the
// wire, the query, only the headers it says it signed, the body's bytes) in the scope it
// names, and compared in constant time. The mock knows one key pair; any session token is
// accepted, but only when it was signed.
//
// Built on node:crypto with the canonical request written out directly, rather than by
// re-signing through @smithy/signature-v4: the mock stands in for a service whose check costs
// next to nothing, and a benchmark through it must measure the gateway, not the mock. The
// canonical form follows that signer's rules for services other than S3, so it accepts and
// refuses the same requests (test/mock/bedrock.test.ts signs with it and with the SDK).

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** What arrived, untouched: `path` still percent-encoded, `body` the raw bytes. */
export interface SignedRequest {
  readonly method: string;
  readonly path: string;
  /** The query string without its `?` ('' for none). */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Why AWS would refuse the request: its error type (x-amzn-errortype) and message. */
export interface SignatureProblem {
  readonly type:
    | 'MissingAuthenticationTokenException'
    | 'IncompleteSignatureException'
    | 'UnrecognizedClientException'
    | 'InvalidSignatureException';
  readonly message: string;
}

/** How far x-amz-date may be from the mock's clock, as AWS allows. */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;:_.-]+),\s*Signature=([0-9a-f]{64})$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

const MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** The host the client addressed: `host` over HTTP/1, the `:authority` pseudo-header over HTTP/2. */
function authority(headers: IncomingHttpHeaders): string | undefined {
  return header(headers, ':authority') ?? header(headers, 'host');
}

function parseAmzDate(value: string): Date | null {
  const m = AMZ_DATE.exec(value);
  if (m === null) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return Number.isNaN(date.getTime()) ? null : date;
}

function amzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** AWS's wording for a request signed too long ago, or too far ahead. */
function skewProblem(sent: string, signedAt: number, now: number): SignatureProblem | null {
  if (signedAt < now - MAX_CLOCK_SKEW_MS) {
    const message = `Signature expired: ${sent} is now earlier than ${amzDate(now - MAX_CLOCK_SKEW_MS)} (${amzDate(now)} - 5 min.)`;
    return { type: 'InvalidSignatureException', message };
  }
  if (signedAt > now + MAX_CLOCK_SKEW_MS) {
    const message = `Signature not yet current: ${sent} is still later than ${amzDate(now + MAX_CLOCK_SKEW_MS)} (${amzDate(now)} + 5 min.)`;
    return { type: 'InvalidSignatureException', message };
  }
  return null;
}

/** RFC 3986 unreserved characters stay, everything else is %XX: what AWS calls UriEncode. */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The path as services other than S3 sign it: dot segments and empty segments removed, then
 * encoded once more than it travels (so `%3A` on the wire is signed as `%253A`).
 */
function canonicalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const leading = path.startsWith('/') ? '/' : '';
  const trailing = segments.length > 0 && path.endsWith('/') ? '/' : '';
  return uriEncode(`${leading}${segments.join('/')}${trailing}`).replace(/%2F/g, '/');
}

/** The query decoded once, re-encoded, pairs sorted by name then value; any X-Amz-Signature is not signed. */
function canonicalQuery(query: string): string {
  if (query === '') return '';
  const byName = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(query)) {
    // A name the signer cannot hold as an object key never reaches its canonical query.
    if (name === '__proto__' || name.toLowerCase() === 'x-amz-signature') continue;
    const encoded = uriEncode(name);
    const pairs = byName.get(encoded);
    const pair = `${encoded}=${uriEncode(value)}`;
    if (pairs === undefined) byName.set(encoded, [pair]);
    else pairs.push(pair);
  }
  return [...byName.keys()]
    .sort()
    .map((name) => (byName.get(name) as string[]).sort().join('&'))
    .join('&');
}

/** A header value as signed: line breaks and runs of blanks become one space, one space trimmed each end. */
function canonicalValue(value: string): string {
  return value
    .replace(/[\r\n]/g, ' ')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

/**
 * Signing keys by day, region, service and secret: four HMACs that change once a day, so a
 * check costs one SHA-256 of the canonical request and one HMAC. Bounded, as scopes are the caller's choice.
 */
const signingKeys = new Map<string, Buffer>();
const MAX_SIGNING_KEYS = 64;

function signingKey(secret: string, shortDate: string, region: string, service: string): Buffer {
  const cacheKey = JSON.stringify([shortDate, region, service, secret]);
  let key = signingKeys.get(cacheKey);
  if (key === undefined) {
    if (signingKeys.size >= MAX_SIGNING_KEYS) signingKeys.clear();
    key = hmac(hmac(hmac(hmac(`AWS4${secret}`, shortDate), region), service), 'aws4_request');
    signingKeys.set(cacheKey, key);
  }
  return key;
}

/**
 * Checks one request's SigV4 signature for `service` (any region). Returns null when AWS
 * would accept it, else the reason AWS would give. Over HTTP/2 the AWS SDK signs the
 * `:authority` pseudo-header by that name, where HTTP/1 signs `host`; either is the host.
 */
export async function checkSignature(
  req: SignedRequest,
  creds: AwsCredentials,
  service: string,
  now: number = Date.now(),
): Promise<SignatureProblem | null> {
  const authorization = header(req.headers, 'authorization');
  if (authorization === undefined) return { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const m = AUTHORIZATION.exec(authorization.trim());
  if (m === null) {
    const message = `Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters. Authorization=${authorization.slice(0, 40)}`;
    return { type: 'IncompleteSignatureException', message };
  }
  const [, keyId, shortDate, region, scopeService, signedList, signature] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (keyId !== creds.accessKeyId)
    return { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  const sentDate = header(req.headers, 'x-amz-date');
  const signedAt = sentDate === undefined ? null : parseAmzDate(sentDate);
  if (sentDate === undefined || signedAt === null) {
    return {
      type: 'IncompleteSignatureException',
      message: "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
    };
  }
  const skew = skewProblem(sentDate, signedAt.getTime(), now);
  if (skew !== null) return skew;
  const signed = signedList.split(';');
  const token = header(req.headers, 'x-amz-security-token');
  if (
    shortDate !== sentDate.slice(0, 8) ||
    scopeService !== service ||
    !(signed.includes('host') || signed.includes(':authority')) ||
    !signed.includes('x-amz-date')
  ) {
    return { type: 'InvalidSignatureException', message: MISMATCH };
  }
  if (token !== undefined && !signed.includes('x-amz-security-token')) {
    return { type: 'InvalidSignatureException', message: MISMATCH };
  }
  // A client-declared payload hash stands in for the body in the signature, so it must be the body's.
  const bodyHash = createHash('sha256').update(req.body).digest('hex');
  const declared = header(req.headers, 'x-amz-content-sha256');
  if (declared !== undefined && declared !== bodyHash) return { type: 'InvalidSignatureException', message: MISMATCH };

  // The headers the client listed, sorted and once each. The signer drops `authorization` and
  // `date` from what it signs and sets `x-amz-date` from the signing date, as AWS's own does.
  const lines: string[] = [];
  const names: string[] = [];
  const longDate = amzDate(signedAt.getTime());
  for (const name of [...new Set(signed)].sort()) {
    const value = name === 'host' || name === ':authority' ? authority(req.headers) : header(req.headers, name);
    if (value === undefined) return { type: 'InvalidSignatureException', message: MISMATCH };
    if (name === 'authorization' || name === 'date' || name === '__proto__') continue;
    names.push(name);
    lines.push(`${name}:${name === 'x-amz-date' ? longDate : canonicalValue(value)}`);
  }
  const canonicalRequest = [
    req.method,
    canonicalPath(req.path),
    canonicalQuery(req.query),
    lines.join('\n'),
    '',
    names.join(';'),
    bodyHash,
  ].join('\n');
  const scopeDate = longDate.slice(0, 8);
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    longDate,
    `${scopeDate}/${region}/${service}/aws4_request`,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  const expected = createHmac('sha256', signingKey(creds.secretAccessKey, scopeDate, region, service))
    .update(stringToSign)
    .digest('hex');
  const same = expected.length === signature.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature));
  return same ? null : { type: 'InvalidSignatureException', message: MISMATCH };
}
