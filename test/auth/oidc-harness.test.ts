import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';

// The OpenID provider the JWT tests sign in with: these checks hold the harness to what the
// gateway tests assume of it, verified with jose against the provider's published JWKS, so that a
// gateway test that fails is failing on the gateway.

let op: LocalOidcProvider;

const jwksOf = async (p: LocalOidcProvider): Promise<JSONWebKeySet> => (await (await fetch(p.jwksUri)).json()) as JSONWebKeySet;

/** Verifies as a relying party would, against the JWKS the provider serves now. */
const verify = async (token: string, audience = 'switchyard') =>
  jwtVerify(token, createLocalJWKSet(await jwksOf(op)), { issuer: op.issuer, audience, algorithms: ['RS256'] });

const refusal = async (token: string): Promise<string> => {
  try {
    await verify(token);
  } catch (err) {
    return `${(err as { code?: string }).code}${'claim' in (err as object) ? `:${(err as { claim: string }).claim}` : ''}`;
  }
  return 'accepted';
};

describe('the loopback OpenID provider', () => {
  before(async () => {
    op = await startOidcProvider({
      scopes: ['llm:cheap', 'tools:read'],
      clients: [
        { id: 'alice', claims: { groups: ['ai-platform'], roles: ['switchyard-viewer'] } },
        { id: 'bob', claims: { team: 'acme' }, scope: 'llm:cheap', authMethod: 'client_secret_post' },
      ],
    });
  });
  after(async () => {
    await op?.stop();
  });

  it('publishes a discovery document naming its issuer, JWKS, token endpoint and the client-credentials grant', async () => {
    const res = await fetch(op.discoveryUrl);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as Record<string, unknown>;
    assert.equal(doc.issuer, op.issuer);
    assert.equal(doc.jwks_uri, op.jwksUri);
    assert.equal(doc.token_endpoint, op.tokenEndpoint);
    assert.ok((doc.grant_types_supported as string[]).includes('client_credentials'));
    const jwks = await jwksOf(op);
    assert.deepEqual(
      jwks.keys.map((k) => k.kid),
      [op.signingKey.kid],
    );
    assert.equal(jwks.keys[0]!.d, undefined, 'the JWKS holds public keys only');
  });

  it('issues a JWT access token for the default audience, carrying the client its extra claims, that verifies against the remote JWKS', async () => {
    const token = await op.token('alice');
    assert.equal(token.split('.').length, 3);
    const { payload, protectedHeader } = await jwtVerify(token, createRemoteJWKSet(new URL(op.jwksUri)), {
      issuer: op.issuer,
      audience: 'switchyard',
    });
    assert.equal(protectedHeader.alg, 'RS256');
    assert.equal(protectedHeader.kid, op.signingKey.kid);
    assert.equal(payload.sub, 'alice');
    assert.deepEqual(payload.groups, ['ai-platform']);
    assert.deepEqual(payload.roles, ['switchyard-viewer']);
    assert.equal(payload.scope, undefined, 'no scope asked, none granted');
    assert.ok(typeof payload.exp === 'number' && payload.exp > Math.floor(Date.now() / 1000));
  });

  it('grants the scopes a client asks for within its allowance, and refuses one outside it', async () => {
    assert.equal((await verify(await op.token('alice', { scope: 'llm:cheap tools:read' }))).payload.scope, 'llm:cheap tools:read');
    const bob = (await verify(await op.token('bob', { scope: 'llm:cheap' }))).payload;
    assert.equal(bob.scope, 'llm:cheap');
    assert.equal(bob.team, 'acme');
    await assert.rejects(op.token('bob', { scope: 'tools:read' }), /invalid_scope/);
  });

  it('issues a token for a named resource with that resource as its audience', async () => {
    const resource = 'http://127.0.0.1:9/mcp';
    const { payload } = await verify(await op.token('alice', { resource }), resource);
    assert.equal(payload.aud, resource);
  });

  it('the local signer mints tokens each wrong in its one way, and jose refuses each for that reason', async () => {
    assert.equal(await refusal(await op.hostile.sign(op.hostile.claimsFor('alice'))), 'accepted', 'the base claims are valid');
    assert.equal(await refusal(await op.hostile.expired('alice')), 'ERR_JWT_EXPIRED:exp');
    assert.equal(await refusal(await op.hostile.notYetValid('alice')), 'ERR_JWT_CLAIM_VALIDATION_FAILED:nbf');
    assert.equal(await refusal(await op.hostile.wrongAudience('alice')), 'ERR_JWT_CLAIM_VALIDATION_FAILED:aud');
    assert.equal(await refusal(await op.hostile.wrongIssuer('alice')), 'ERR_JWT_CLAIM_VALIDATION_FAILED:iss');
    assert.equal(await refusal(await op.hostile.unknownKid('alice')), 'ERR_JWKS_NO_MATCHING_KEY');
    const none = await op.hostile.algNone('alice');
    assert.equal(decodeProtectedHeader(none).alg, 'none');
    assert.ok(none.endsWith('.'), 'an unsigned token has an empty signature');
    assert.notEqual(await refusal(none), 'accepted');
  });

  it('the HS256 token is a true HMAC keyed with the public key, as the key-confusion attack needs', async () => {
    const pem = op.signingKey.publicKey.export({ format: 'pem', type: 'spki' });
    for (const [as, secret] of [
      ['pem', pem],
      ['jwk', JSON.stringify(op.signingKey.publicJwk)],
    ] as const) {
      const token = await op.hostile.hs256WithPublicKey('alice', as);
      const [h, p, s] = token.split('.');
      assert.equal(decodeProtectedHeader(token).alg, 'HS256');
      assert.equal(createHmac('sha256', secret).update(`${h}.${p}`).digest('base64url'), s);
      assert.notEqual(await refusal(token), 'accepted');
    }
  });

  it('the jku token and the oversized token are signed by the provider key, wrong only in header or size', async () => {
    const jku = await op.hostile.jkuElsewhere('alice');
    assert.equal(decodeProtectedHeader(jku).jku, 'http://127.0.0.1:9/jwks');
    assert.equal(await refusal(jku), 'accepted');
    const big = await op.hostile.oversized('alice', 20 * 1024);
    assert.ok(big.length >= 20 * 1024 && big.length < 21 * 1024, `${big.length} bytes`);
    assert.equal(await refusal(big), 'accepted');
  });

  it('a rotation signs with a new kid from then on and keeps publishing the old key, so older tokens still verify', async () => {
    const before = await op.token('alice');
    const oldKid = op.signingKey.kid;
    const fetchesBefore = op.jwksFetches;
    const key = await op.rotate();
    assert.notEqual(key.kid, oldKid);
    assert.equal(op.signingKey.kid, key.kid);
    const afterRotation = await op.token('alice');
    assert.equal(decodeProtectedHeader(afterRotation).kid, key.kid);
    assert.deepEqual(
      (await jwksOf(op)).keys.map((k) => k.kid),
      [key.kid, oldKid],
    );
    assert.ok(op.jwksFetches > fetchesBefore, 'JWKS fetches are counted');
    assert.equal((await verify(before)).protectedHeader.kid, oldKid);
    assert.equal((await verify(afterRotation)).protectedHeader.kid, key.kid);
  });

  it('a rotation that retires the old keys publishes the new key alone, and older tokens no longer verify', async () => {
    const older = await op.token('alice');
    const key = await op.rotate({ retireOld: true });
    assert.deepEqual(
      (await jwksOf(op)).keys.map((k) => k.kid),
      [key.kid],
    );
    assert.equal(await refusal(older), 'ERR_JWKS_NO_MATCHING_KEY');
    assert.equal((await verify(await op.token('alice'))).protectedHeader.kid, key.kid);
  });

  it('stops and starts again on the same port, with the same issuer and keys', async () => {
    const token = await op.token('alice');
    const kids = op.keys.map((k) => k.kid);
    await op.stop();
    await assert.rejects(fetch(op.jwksUri, { signal: AbortSignal.timeout(5000) }));
    await assert.rejects(op.token('alice'));
    await op.start();
    assert.deepEqual(
      (await jwksOf(op)).keys.map((k) => k.kid),
      kids,
    );
    assert.equal((await verify(token)).payload.iss, op.issuer);
    assert.equal(decodeJwt(await op.token('alice')).iss, op.issuer);
  });

  it('a provider can start on a port that is given, as one that comes back after a test stopped it must', async () => {
    const first = await startOidcProvider({ clients: [{ id: 'carol' }] });
    const port = first.port;
    await first.stop();
    const again = await startOidcProvider({ clients: [{ id: 'carol' }], port });
    try {
      assert.equal(again.issuer, `http://127.0.0.1:${port}`);
      assert.equal(decodeJwt(await again.token('carol')).iss, again.issuer);
    } finally {
      await again.stop();
    }
  });
});
