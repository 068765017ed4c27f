import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

// A token issuer inside the bench process: RS256 signing keys, tokens minted with them, and
// the JWKS served from 127.0.0.1, counting its fetches so a scenario can tell how many
// fetches a gateway made and when.

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function signingKey(kid: string): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

/** A token carrying `claims` (iss, aud, sub and any other), issued now, valid for an hour. */
export function mintToken(key: SigningKey, claims: JWTPayload): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(key.privateKey);
}

export interface JwksServer {
  /** The issuer: this server's origin. */
  readonly issuer: string;
  /** Where its JWKS is served: `<issuer>/jwks`. */
  readonly url: string;
  fetches(): number;
  /** performance.now() of the last fetch, or -Infinity before the first. */
  lastFetchAt(): number;
  /** From now on, the JWKS holds these keys. */
  publish(keys: readonly SigningKey[]): void;
  close(): Promise<void>;
}

export async function startJwksServer(keys: readonly SigningKey[]): Promise<JwksServer> {
  let body = jwksBody(keys);
  let fetches = 0;
  let lastFetchAt = Number.NEGATIVE_INFINITY;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/jwks') {
      res.writeHead(404).end();
      return;
    }
    fetches += 1;
    lastFetchAt = performance.now();
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: origin,
    url: `${origin}/jwks`,
    fetches: () => fetches,
    lastFetchAt: () => lastFetchAt,
    publish: (next) => {
      body = jwksBody(next);
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function jwksBody(keys: readonly SigningKey[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.publicJwk) });
}
