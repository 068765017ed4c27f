import { z } from 'zod';
import { isLoopback } from './listen-address.js';
import { positiveInt } from './schema-parts.js';

// `auth`: callers who sign in with a token their identity provider issued (a JWT), beside
// API keys. Each issuer names where its signing keys come from and how its claims map to a
// team, a principal, admin roles and narrower model and tool lists.

/** The JWS algorithms a JWKS may verify: asymmetric only (a shared-secret HS* never has a public JWKS). */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];
const DEFAULT_ALGORITHMS: JwtAlgorithm[] = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA'];

/** https, or http to a loopback host: a JWKS fetched in clear from elsewhere could be swapped on the way. */
export function fetchableUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const u = new URL(value);
  if (u.protocol === 'https:') return true;
  return u.protocol === 'http:' && isLoopback(u.hostname.replace(/^\[|\]$/g, ''));
}

const httpsUrl = z
  .string()
  .max(2048)
  .refine(fetchableUrl, 'must be an https:// URL (http:// only to a loopback host)')
  .refine((u) => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).password === ''), 'must not carry credentials');

/** A claim's name, or a dotted path into nested claims (`realm_access.roles`); the exact name is tried first. */
const claimName = z.string().min(1).max(256);
const teamId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be a team id');
const ADMIN_ROLE = /^(admin|read_only|team:[A-Za-z0-9][A-Za-z0-9_.-]{0,63})$/;
const globs = z.array(z.string().min(1).max(256)).max(1000);
const limitCount = z.number().int().min(0);

const jwksSchema = z.union(
  [
    z.strictObject({ url: httpsUrl }),
    z.strictObject({ file: z.string().min(1).max(4096) }),
    z.strictObject({ discovery: z.literal(true) }),
  ],
  { error: 'must be one of {url: URL}, {file: PATH} or {discovery: true}' },
);

/** Per signed-in principal: the same limits a key has, within its team's. */
export const principalLimitsSchema = z.strictObject({
  rpm: limitCount.optional(),
  tpm: limitCount.optional(),
  tokens_per_day: limitCount.optional(),
  tool_calls_per_day: limitCount.optional(),
  budget_usd_per_month: z.number().min(0).optional(),
});

const issuerSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)'),
  /** The `iss` a token must carry, exactly. */
  issuer: z.string().min(1).max(2048),
  /** A token's `aud` must name one of these. */
  audiences: z.array(z.string().min(1).max(2048)).min(1).max(32),
  jwks: jwksSchema.prefault({ discovery: true }),
  jwks_recheck_s: positiveInt.min(10).max(86_400).default(300),
  /** The shortest time between two fetches that a token with an unknown `kid` may cause. */
  jwks_refetch_cooldown_s: positiveInt.max(3600).default(30),
  algorithms: z
    .array(z.enum(JWT_ALGORITHMS, { error: `must be one of ${JWT_ALGORITHMS.join(', ')}` }))
    .min(1)
    .default(DEFAULT_ALGORITHMS),
  clock_skew_s: z.number().int().min(0).max(600).default(60),
  /** Which team a token's calls belong to: a claim whose value names the team, or through `map`. */
  team: z.strictObject({ claim: claimName, map: z.record(z.string().min(1).max(256), teamId).optional() }).optional(),
  /** Whose limits and ledger rows: `jwt:<issuer id>:<the claim's value>`. */
  principal: z.strictObject({ claim: claimName.default('sub') }).prefault({}),
  /** Admin API roles from a claim's values. */
  roles: z
    .strictObject({
      claim: claimName,
      map: z.record(z.string().min(1).max(256), z.string().regex(ADMIN_ROLE, 'must be "admin", "read_only" or "team:<team id>"')),
    })
    .optional(),
  /** Scope values that narrow the team's models and tools (never widen them). */
  scopes: z
    .strictObject({
      claim: claimName.default('scope'),
      models: z.record(z.string().min(1).max(256), globs).optional(),
      tools: z.record(z.string().min(1).max(256), globs).optional(),
    })
    .optional(),
  /** This issuer's principals' limits, in place of auth.jwt.principals. */
  principals: principalLimitsSchema.optional(),
});

export const jwtSchema = z
  .strictObject({
    /** strict: every API call needs a token or a key; optional: a call with neither is judged as API keys judge it. */
    mode: z.enum(['strict', 'optional'], { error: 'must be "strict" or "optional"' }).default('strict'),
    issuers: z.array(issuerSchema).min(1).max(32),
    principals: principalLimitsSchema.prefault({}),
    /** This gateway's MCP resource URL (RFC 9728); default <scheme>://<Host>/mcp of the request. */
    resource: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  })
  .superRefine((jwt, ctx) => {
    const ids = new Map<string, number>();
    const issuers = new Map<string, number>();
    jwt.issuers.forEach((it, i) => {
      const sameId = ids.get(it.id);
      if (sameId !== undefined)
        ctx.addIssue({ code: 'custom', path: ['issuers', i, 'id'], message: `duplicate issuer id "${it.id}" (also issuers[${sameId}])` });
      else ids.set(it.id, i);
      const sameIss = issuers.get(it.issuer);
      if (sameIss !== undefined)
        ctx.addIssue({ code: 'custom', path: ['issuers', i, 'issuer'], message: `issuers[${sameIss}] has the same issuer` });
      else issuers.set(it.issuer, i);
      if ('discovery' in it.jwks && !fetchableUrl(it.issuer))
        ctx.addIssue({
          code: 'custom',
          path: ['issuers', i, 'issuer'],
          message:
            'jwks.discovery reads <issuer>/.well-known/openid-configuration: the issuer must be an https:// URL (http:// only to a loopback host)',
        });
    });
  });

export const authSchema = z.strictObject({ jwt: jwtSchema.optional() });

export type AuthConfig = z.infer<typeof authSchema>;
export type JwtConfig = z.infer<typeof jwtSchema>;
export type JwtIssuerConfig = JwtConfig['issuers'][number];
export type PrincipalLimitsConfig = z.infer<typeof principalLimitsSchema>;
