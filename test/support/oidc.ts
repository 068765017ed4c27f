import { createHmac, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, importJWK, type JWTPayload, SignJWT } from 'jose';

// A real OpenID provider (oidc-provider) on loopback, for the gateway's JWT tests: discovery,
// JWKS and the client-credentials grant issuing JWT access tokens, with per-client extra
// claims (groups, roles, team). Beside it, a local signer for the tokens a provider never
// mints (expired, wrong audience, alg none, HS256 keyed with the public key, a jku header…),
// signed with the provider's own private key so that only the one defect is wrong with them.

/** A signing key the provider holds: the private JWK it signs with and the public one its JWKS publishes. */
export interface OidcSigningKey {
  readonly kid: string;
  readonly privateJwk: JsonWebKey & { kid: string; alg: 'RS256'; use: 'sig' };
  readonly publicJwk: JsonWebKey & { kid: string; alg: 'RS256'; use: 'sig' };
  readonly publicKey: KeyObject;
}

export interface OidcClient {
  readonly id: string;
  /** Default: a random secret (read it back with `secretOf`). */
  readonly secret?: string;
  /** The scopes this client may ask for, space-separated; default: every scope the provider knows. */
  readonly scope?: string;
  /** Claims added to every access token issued to this client (groups, roles, team…). */
  readonly claims?: Record<string, unknown>;
  /** client_secret_basic (default) or client_secret_post. */
  readonly authMethod?: 'client_secret_basic' | 'client_secret_post';
}

export interface OidcProviderOptions {
  readonly clients: readonly OidcClient[];
  /** The audience of a token asked for with no `resource` (the default resource). Default "switchyard". */
  readonly audience?: string;
  /** Scope values the provider issues (each token carries those asked for). */
  readonly scopes?: readonly string[];
  /** Listen on this port (to come back on the same address after `stop`); default an ephemeral one. */
  readonly port?: number;
  /** Access token lifetime. Default 600 s. */
  readonly accessTokenTtlS?: number;
}

export interface LocalOidcProvider {
  /** `http://127.0.0.1:<port>`, the exact `iss` of its tokens. */
  readonly issuer: string;
  readonly port: number;
  readonly jwksUri: string;
  readonly discoveryUrl: string;
  readonly tokenEndpoint: string;
  /** The resource a token is issued for when the request names none. */
  readonly defaultResource: string;
  /** The key new tokens are signed with (the first of `keys`). */
  readonly signingKey: OidcSigningKey;
  /** Every key the JWKS publishes, the signing one first. */
  readonly keys: readonly OidcSigningKey[];
  /** How many times the JWKS document was served (a gateway's fetches). */
  readonly jwksFetches: number;
  secretOf(clientId: string): string;
  /** A client-credentials grant at the token endpoint; resolves with the access token (a JWT). */
  token(clientId: string, opts?: { scope?: string; resource?: string }): Promise<string>;
  /**
   * Signs new tokens with a new key (new kid) from now on, and keeps publishing the old keys,
   * unless `retireOld`: then the JWKS holds the new key alone.
   */
  rotate(opts?: { retireOld?: boolean }): Promise<OidcSigningKey>;
  /** Stops listening (open connections are cut); `start` comes back on the same port with the same keys. */
  stop(): Promise<void>;
  start(): Promise<void>;
  readonly hostile: HostileTokens;
}

/** Tokens the provider would never mint, each wrong in one way only. */
export interface HostileTokens {
  /** Signs `claims` (over a valid base for `clientId`) with the provider's current key; header fields may be added. */
  sign(claims?: JWTPayload, header?: Record<string, unknown>, key?: OidcSigningKey): Promise<string>;
  /** What a token the provider issues this client with no scope asked carries: iss, aud, sub, client_id, its extra claims, iat, exp, jti. */
  claimsFor(clientId: string, extra?: JWTPayload): JWTPayload;
  expired(clientId: string): Promise<string>;
  notYetValid(clientId: string): Promise<string>;
  wrongAudience(clientId: string): Promise<string>;
  wrongIssuer(clientId: string): Promise<string>;
  /** Signed by a key the JWKS never published, under a kid it does not know. */
  unknownKid(clientId: string): Promise<string>;
  /** `alg: none` and an empty signature. */
  algNone(clientId: string): Promise<string>;
  /** HS256 with the provider's RSA public key as the HMAC secret (as PEM text, or as the JWK's JSON). */
  hs256WithPublicKey(clientId: string, as?: 'pem' | 'jwk'): Promise<string>;
  /** Signed with the provider's own key, with a `jku` header naming another JWKS. */
  jkuElsewhere(clientId: string, jku?: string): Promise<string>;
  /** A validly signed token padded with a filler claim to about `bytes` long. */
  oversized(clientId: string, bytes: number): Promise<string>;
}

export async function newSigningKey(): Promise<OidcSigningKey> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicBase = publicKey.export({ format: 'jwk' });
  const kid = await calculateJwkThumbprint(publicBase as Parameters<typeof calculateJwkThumbprint>[0]);
  const meta = { kid, alg: 'RS256' as const, use: 'sig' as const };
  return {
    kid,
    privateJwk: { ...privateKey.export({ format: 'jwk' }), ...meta },
    publicJwk: { ...publicBase, ...meta },
    publicKey: createPublicKey(publicKey.export({ format: 'pem', type: 'spki' })),
  };
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

// The package ships no type declarations: this is the part of it the harness uses.
type Middleware = (req: IncomingMessage, res: ServerResponse) => void;
interface ProviderInstance {
  callback(): Middleware;
}
type ProviderClass = new (issuer: string, configuration: Record<string, unknown>) => ProviderInstance;

// A provider keeps access token records in its adapter; the package's own in-memory adapter
// announces itself on stderr at every construction, so this one keeps them in a plain Map.
function memoryAdapter(): new (name: string) => object {
  const records = new Map<string, Record<string, unknown>>();
  return class {
    readonly #name: string;
    constructor(name: string) {
      this.#name = name;
    }
    #key(id: string): string {
      return `${this.#name}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>): Promise<void> {
      records.set(this.#key(id), payload);
    }
    async find(id: string): Promise<unknown> {
      return records.get(this.#key(id));
    }
    async findByUid(uid: string): Promise<unknown> {
      for (const [k, v] of records) if (k.startsWith(`${this.#name}:`) && v.uid === uid) return v;
      return undefined;
    }
    async findByUserCode(code: string): Promise<unknown> {
      for (const [k, v] of records) if (k.startsWith(`${this.#name}:`) && v.userCode === code) return v;
      return undefined;
    }
    async consume(id: string): Promise<void> {
      const found = records.get(this.#key(id));
      if (found !== undefined) found.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      records.delete(this.#key(id));
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      for (const [k, v] of records) if (v.grantId === grantId) records.delete(k);
    }
  };
}

export async function startOidcProvider(opts: OidcProviderOptions): Promise<LocalOidcProvider> {
  // A string specifier keeps the compiler from looking for declarations the package lacks.
  const specifier: string = 'oidc-provider';
  const { default: Provider } = (await import(specifier)) as { default: ProviderClass };
  const audience = opts.audience ?? 'switchyard';
  const scopes = [...(opts.scopes ?? [])];
  const ttlS = opts.accessTokenTtlS ?? 600;
  const secrets = new Map(opts.clients.map((c) => [c.id, c.secret ?? randomBytes(24).toString('base64url')]));
  const extraClaims = new Map(opts.clients.map((c) => [c.id, c.claims ?? {}]));
  const keys: OidcSigningKey[] = [await newSigningKey()];
  const Adapter = memoryAdapter();
  let jwksFetches = 0;

  let handler: Middleware = (_req, res) => res.writeHead(503).end();
  const server: Server = createServer((req, res) => {
    if (req.url?.split('?')[0] === '/jwks') jwksFetches += 1;
    handler(req, res);
  });
  const listen = (port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const port = await listen(opts.port ?? 0);
  const issuer = `http://127.0.0.1:${port}`;
  // A resource indicator must be an absolute URI; a client that names none gets this one,
  // whose tokens carry `audience`. Any other resource (the gateway's /mcp URL) is its own audience.
  const defaultResource = `${issuer}/resources/default`;

  // The keystore is fixed at construction: a rotation builds a new provider over the same
  // clients and adapter and swaps it in behind the listening socket.
  const build = (): void => {
    const provider = new Provider(issuer, {
      adapter: Adapter,
      clients: opts.clients.map((c) => ({
        client_id: c.id,
        client_secret: secrets.get(c.id),
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: c.authMethod ?? 'client_secret_basic',
        ...((c.scope ?? scopes.join(' ')) === '' ? {} : { scope: c.scope ?? scopes.join(' ') }),
      })),
      jwks: { keys: keys.map((k) => k.privateJwk) },
      cookies: { keys: [randomBytes(16).toString('hex')] },
      scopes,
      ttl: { ClientCredentials: ttlS },
      routes: { jwks: '/jwks' },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: async () => defaultResource,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: unknown, resource: string) => ({
            audience: resource === defaultResource ? audience : resource,
            scope: scopes.join(' '),
            accessTokenTTL: ttlS,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
      extraTokenClaims: async (_ctx: unknown, token: { clientId?: string }) => extraClaims.get(token.clientId ?? '') ?? {},
    });
    handler = provider.callback();
  };
  build();

  const tokenEndpoint = `${issuer}/token`;
  const token = async (clientId: string, o: { scope?: string; resource?: string } = {}): Promise<string> => {
    const secret = secrets.get(clientId);
    if (secret === undefined) throw new Error(`no client "${clientId}"`);
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (o.scope !== undefined) form.set('scope', o.scope);
    if (o.resource !== undefined) form.set('resource', o.resource);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    const method = opts.clients.find((c) => c.id === clientId)?.authMethod ?? 'client_secret_basic';
    if (method === 'client_secret_post') {
      form.set('client_id', clientId);
      form.set('client_secret', secret);
    } else {
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    }
    const res = await fetch(tokenEndpoint, { method: 'POST', headers, body: form, signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
    if (res.status !== 200 || typeof body.access_token !== 'string')
      throw new Error(`token endpoint answered ${res.status}: ${body.error ?? ''} ${body.error_description ?? ''}`);
    return body.access_token;
  };

  const claimsFor = (clientId: string, extra: JWTPayload = {}): JWTPayload => {
    const now = Math.floor(Date.now() / 1000);
    return {
      ...extraClaims.get(clientId),
      jti: randomBytes(12).toString('base64url'),
      sub: clientId,
      client_id: clientId,
      iss: issuer,
      aud: audience,
      iat: now,
      exp: now + ttlS,
      ...extra,
    };
  };
  const sign = async (claims: JWTPayload = {}, header: Record<string, unknown> = {}, key: OidcSigningKey = keys[0]!): Promise<string> =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: key.kid, ...header })
      .sign(await importJWK(key.privateJwk as Parameters<typeof importJWK>[0], 'RS256'));
  const now = (): number => Math.floor(Date.now() / 1000);
  const hs256 = async (claims: JWTPayload, secret: Uint8Array, kid: string): Promise<string> => {
    const input = `${b64({ alg: 'HS256', typ: 'JWT', kid })}.${b64(claims)}`;
    return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
  };

  const hostile: HostileTokens = {
    sign: (claims, header, key) => sign(claims, header, key),
    claimsFor,
    // An hour either way is far past any clock skew the gateway allows (at most 600 s).
    expired: (id) => sign(claimsFor(id, { iat: now() - 7200, exp: now() - 3600 })),
    notYetValid: (id) => sign(claimsFor(id, { nbf: now() + 3600, exp: now() + 7200 })),
    wrongAudience: (id) => sign(claimsFor(id, { aud: 'someone-else' })),
    wrongIssuer: (id) => sign(claimsFor(id, { iss: 'http://127.0.0.1:1' })),
    unknownKid: async (id) => sign(claimsFor(id), {}, await newSigningKey()),
    algNone: async (id) => `${b64({ alg: 'none', typ: 'JWT', kid: keys[0]!.kid })}.${b64(claimsFor(id))}.`,
    hs256WithPublicKey: async (id, as = 'pem') => {
      const key = keys[0]!;
      const secret =
        as === 'pem' ? Buffer.from(key.publicKey.export({ format: 'pem', type: 'spki' })) : Buffer.from(JSON.stringify(key.publicJwk));
      return hs256(claimsFor(id), secret, key.kid);
    },
    jkuElsewhere: (id, jku = 'http://127.0.0.1:9/jwks') => sign(claimsFor(id), { jku }),
    oversized: async (id, bytes) => {
      const base = await sign(claimsFor(id));
      // base64url grows 4/3: pad the payload by three quarters of what is missing.
      const filler = 'x'.repeat(Math.max(0, Math.ceil(((bytes - base.length) * 3) / 4)));
      return sign(claimsFor(id, { filler }));
    },
  };

  return {
    issuer,
    port,
    jwksUri: `${issuer}/jwks`,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    tokenEndpoint,
    defaultResource,
    get signingKey() {
      return keys[0]!;
    },
    get keys() {
      return [...keys];
    },
    get jwksFetches() {
      return jwksFetches;
    },
    secretOf: (clientId) => {
      const s = secrets.get(clientId);
      if (s === undefined) throw new Error(`no client "${clientId}"`);
      return s;
    },
    token,
    rotate: async ({ retireOld = false } = {}) => {
      const key = await newSigningKey();
      if (retireOld) keys.length = 0;
      keys.unshift(key);
      build();
      return keys[0]!;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    start: async () => {
      if (!server.listening) await listen(port);
    },
    hostile,
  };
}
