import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

// AWS Signature Version 4, checked the way AWS checks it: the signature is computed again
// with the caller's secret over the request exactly as it arrived (method, the path as on the
// wire, the query, only the headers it says it signed, the body's bytes) in the scope it
// names, and compared in constant time. The mock knows one key pair; any session token is
// accepted, but only when it was signed.

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

/** The query as SignatureV4 reads it: names to values, repeated names to lists, still decoded once. */
function queryOf(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(query)) {
    const seen = out[name];
    out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return out;
}

/** Signers by key, scope and session token: each keeps its derived signing keys, so a check is not four HMACs more than it must be. */
const signers = new Map<string, SignatureV4>();
const MAX_SIGNERS = 64;

function signerFor(creds: AwsCredentials, service: string, region: string, token: string | undefined): SignatureV4 {
  const key = JSON.stringify([creds.accessKeyId, creds.secretAccessKey, service, region, token ?? null]);
  let signer = signers.get(key);
  if (signer === undefined) {
    if (signers.size >= MAX_SIGNERS) signers.clear();
    signer = new SignatureV4({
      service,
      region,
      credentials: { ...creds, ...(token === undefined ? {} : { sessionToken: token }) },
      sha256: Hash.bind(null, 'sha256'),
      // AWS services other than S3 sign the path encoded once more than it travels.
      uriEscapePath: true,
      applyChecksum: false,
    });
    signers.set(key, signer);
  }
  return signer;
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

  const headers: Record<string, string> = {};
  for (const name of signed) {
    const value = name === 'host' || name === ':authority' ? authority(req.headers) : header(req.headers, name);
    if (value === undefined) return { type: 'InvalidSignatureException', message: MISMATCH };
    headers[name] = value;
  }
  const signer = signerFor(creds, service, region, token);
  const again = await signer.sign(
    {
      method: req.method,
      protocol: 'http:',
      hostname: authority(req.headers) ?? '',
      path: req.path,
      query: queryOf(req.query),
      headers,
      body: req.body,
    },
    { signingDate: signedAt, signingRegion: region, signingService: service, signableHeaders: new Set(signed) },
  );
  const expected = /Signature=([0-9a-f]{64})$/.exec(String(again.headers.authorization))?.[1] ?? '';
  const same = expected.length === signature.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature));
  return same ? null : { type: 'InvalidSignatureException', message: MISMATCH };
}
