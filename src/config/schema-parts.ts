import { z } from 'zod';
import { looksLikeCredentialValue } from '../contract/index.js';

// The pieces of the config schema that more than one section uses: secret references, URLs,
// upstream headers, TLS, retries, tool names. schema.ts and provider-types.ts build on them.

const LITERAL_SECRET_HINT = 'a literal secret is not allowed here; use a reference such as {env: NAME} or {file: /path/to/secret}';

/** `{env: NAME}` or `{file: PATH}`. A bare string is refused with a hint, never echoed. */
export const secretRefSchema = z.union(
  [
    z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name') }),
    z.strictObject({ file: z.string().min(1, 'must be a file path') }),
  ],
  {
    error: (issue) => (typeof issue.input === 'string' ? LITERAL_SECRET_HINT : 'must be {env: NAME} or {file: PATH}'),
  },
);
export type SecretRef = z.infer<typeof secretRefSchema>;

// min(1) rather than positive(): "must be at least 1" reads better than "greater than 0".
export const positiveInt = z.number().int().min(1);

export const httpUrl = z
  // A missing value falls through to the config's error map ("required").
  .url({ protocol: /^https?$/, error: (issue) => (issue.input === undefined ? undefined : 'invalid URL (expected http:// or https://)') })
  // A user:password would be shown wherever the URL is (admin views), and a query or
  // fragment would be dropped from every call: refuse both rather than surprise.
  .refine(
    (u) => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).password === ''),
    'must not contain user:password@; give the key as api_key: {env: NAME}',
  )
  .refine((u) => !URL.canParse(u) || (new URL(u).search === '' && new URL(u).hash === ''), 'must not contain a query string or #fragment');

/** Headers the gateway sets itself, or that describe the connection: never from config. */
const RESERVED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'accept',
]);
const CREDENTIAL_HEADER = /(^|-)(api-?key|token|secret|password|auth|cookie)($|-)/i;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Never exposable: they describe the connection or the framing, or belong to the gateway. */
const UNEXPOSABLE = /^(connection|keep-alive|transfer-encoding|te|trailer|upgrade|proxy-.*|content-length|set-cookie|x-switchyard-.*)$/;

/** A response header name a provider may pass to clients (`expose_headers`). */
export const exposedHeaderSchema = z
  .string()
  .regex(HEADER_NAME, 'is not a valid HTTP header name')
  .transform((name) => name.toLowerCase())
  .refine((name) => !UNEXPOSABLE.test(name), 'describes the connection or belongs to the gateway, and cannot be passed to clients');

/** Extra upstream headers: non-secret, valid names, none the gateway owns. Names are lower-cased. */
export const extraHeadersSchema = z
  .record(z.string(), z.string())
  .superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'is not a valid HTTP header name' });
      else if (RESERVED_HEADERS.has(lower))
        ctx.addIssue({ code: 'custom', path: [name], message: 'is set by the gateway and cannot be configured (the key goes in api_key)' });
      else if (CREDENTIAL_HEADER.test(lower) || looksLikeCredentialValue(value)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'looks like a credential; headers are not secret storage (use api_key: {env: NAME})',
        });
      } else if (/[\r\n\0]/.test(value)) ctx.addIssue({ code: 'custom', path: [name], message: 'must not contain line breaks' });
    }
  })
  .transform((headers) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])));

const pemFile = z.strictObject({ file: z.string().min(1, 'must be a file path') });

export const tlsSchema = z
  .strictObject({
    ca: pemFile.optional(),
    cert: pemFile.optional(),
    key: pemFile.optional(),
    server_name: z.string().min(1).max(253).optional(),
  })
  .refine((t) => (t.cert === undefined) === (t.key === undefined), {
    path: ['key'],
    message: 'cert and key go together (mutual TLS needs both)',
  });

/**
 * Tries of the same provider after a transient failure, before the chain moves on: `attempts`
 * retries (beyond the first try), each after a fully jittered exponential backoff.
 */
export const retrySchema = z
  .strictObject({
    attempts: z.number().int().min(0).max(10),
    backoff_ms: z.number().int().min(0).max(60_000).default(100),
    max_backoff_ms: z.number().int().min(0).max(600_000).default(2_000),
  })
  .refine((r) => r.max_backoff_ms >= r.backoff_ms, {
    path: ['max_backoff_ms'],
    error: (issue) => `must be at least backoff_ms (${(issue.input as { backoff_ms: number }).backoff_ms})`,
  });

/**
 * A tool name as the MCP specification advises it (1-128 of A-Z a-z 0-9 _ - .): what the
 * gateway's clients see, and so every exposed name, whoever published it.
 */
export const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const TOOL_NAME_HINT = "must be 1-128 of A-Z a-z 0-9 _ - . (the MCP specification's tool name characters)";
export const toolName = z.string().regex(TOOL_NAME, TOOL_NAME_HINT);

/**
 * The query parameters of a URL that its driver would take a secret from, by the name the URL
 * gives: pg reads a password, or a TLS key, certificate or CA from a path; ioredis turns every
 * query parameter into a connection option, a password among them. Config holds references
 * only, and these would bypass them.
 */
const SECRET_QUERY_PARAMS = {
  postgres: new Set(['password', 'sslpassword', 'sslkey', 'sslcert', 'sslrootcert']),
  redis: new Set(['password']),
} as const;

export function secretQueryParams(url: string, driver: keyof typeof SECRET_QUERY_PARAMS): string[] {
  if (!url.startsWith(driver) || !URL.canParse(url)) return [];
  const names = [...new URL(url).searchParams.keys()].filter((name) => SECRET_QUERY_PARAMS[driver].has(name.toLowerCase()));
  return [...new Set(names)];
}

/**
 * A Redis URL (`redis://` or `rediss://`) with no secret in it: config holds references only,
 * so a password in the URL or its query is refused (never echoed), and `<section>.redis_password` named instead.
 */
export function redisUrlSchema(section: string) {
  return z
    .url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' })
    .refine(
      (u) => !URL.canParse(u) || new URL(u).password === '',
      `must not contain a password: give it as ${section}.redis_password ({env: NAME} or {file: PATH})`,
    )
    .refine(
      (u) => secretQueryParams(u, 'redis').length === 0,
      `must not carry a password in its query: give it as ${section}.redis_password ({env: NAME} or {file: PATH})`,
    );
}
