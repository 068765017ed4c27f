import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { JwtAuthority, type TokenVerdict } from '../../src/auth/index.js';
import { authSchema, type JwtConfig } from '../../src/config/index.js';

// The judge of signed-in callers against a real JWKS server on loopback: what it accepts,
// what it refuses and why, and how it fetches keys (once per unknown kid however many ask,
// never within the cooldown, the last good keys kept through an outage).

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

interface JwksServer {
  readonly url: string;
  fetches: number;
  /** What the server answers: a JWKS, an HTTP status, or a body. */
  answer: { keys: JWK[] } | number | string;
  /** Held answers: each fetch waits for this before answering. */
  gate: Promise<void> | null;
  close(): Promise<void>;
}

async function jwksServer(answer: JwksServer['answer']): Promise<JwksServer> {
  const state = { fetches: 0, answer, gate: null as Promise<void> | null };
  const server: Server = createServer((req, res) => {
    state.fetches += 1;
    const reply = (): void => {
      const a = state.answer;
      if (typeof a === 'number') {
        res.writeHead(a).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(typeof a === 'string' ? a : JSON.stringify(a));
    };
    if (state.gate === null) reply();
    else void state.gate.then(reply);
    void req;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/jwks`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  }) as JwksServer;
}

const ISSUER = 'https://idp.test/realms/corp';

function jwtConfig(jwksUrl: string, extra: Record<string, unknown> = {}): JwtConfig | undefined {
  return authSchema.parse({
    jwt: {
      issuers: [
        {
          id: 'corp',
          issuer: ISSUER,
          audiences: ['switchyard'],
          jwks: { url: jwksUrl },
          jwks_refetch_cooldown_s: 1,
          team: { claim: 'team' },
          ...extra,
        },
      ],
    },
  }).jwt;
}

function authority(jwksUrl: string, extra: Record<string, unknown> = {}): { auth: JwtAuthority; fetched: string[] } {
  const fetched: string[] = [];
  const auth = new JwtAuthority({ fetched: (_issuer, result, d) => fetched.push(`${result}:${d.reason}`) });
  auth.configure(jwtConfig(jwksUrl, extra));
  return { auth, fetched };
}

/** A JWKS server answering `answer` and an authority trusting it, both closed when the test ends, past the first fetch. */
async function issuerOn(
  t: { after: (fn: () => Promise<void>) => void },
  answer: JwksServer['answer'],
): Promise<{ server: JwksServer; auth: JwtAuthority; fetched: string[] }> {
  const server = await jwksServer(answer);
  const { auth, fetched } = authority(server.url);
  t.after(async () => {
    auth.close();
    await server.close();
  });
  await auth.ready(5000);
  return { server, auth, fetched };
}

async function publicJwk(pair: KeyPair, kid: string): Promise<JWK> {
  return { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' };
}

function sign(pair: KeyPair, kid: string, claims: Record<string, unknown> = {}, edit: (j: SignJWT) => SignJWT = (j) => j): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ sub: 'alice', team: 'platform', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid })
    .setIssuer(ISSUER)
    .setAudience('switchyard')
    .setIssuedAt(now)
    .setExpirationTime(now + 600);
  return edit(jwt).sign(pair.privateKey);
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

async function judged(auth: JwtAuthority, token: string): Promise<TokenVerdict> {
  return auth.verify(token, Date.now());
}

function refusal(v: TokenVerdict): string {
  assert.equal(v.ok, false, 'expected a refusal');
  return v.ok ? '' : `${v.code}: ${v.description}`;
}

describe('the JWT authority against a JWKS on loopback', () => {
  let first: KeyPair;
  let second: KeyPair;
  before(async () => {
    first = await generateKeyPair('RS256');
    second = await generateKeyPair('RS256');
  });

  test('a token signed by a key of the JWKS is accepted, and the same token again is judged at once from the cache', async (t) => {
    const { auth } = await issuerOn(t, { keys: [await publicJwk(first, 'k1')] });
    const token = await sign(first, 'k1');
    const v = await judged(auth, token);
    assert.ok(v.ok);
    assert.equal(v.token.claims.sub, 'alice');
    assert.deepEqual(v.token.audiences, ['switchyard']);
    const again = auth.verify(token, Date.now());
    assert.ok(!(again instanceof Promise), 'a verified token is not verified again');
    assert.ok(again.ok);
    // Past its exp (and the skew), the cached token is judged afresh, and refused.
    const later = await auth.verify(token, Date.now() + 3_600_000);
    assert.match(refusal(later), /unauthorized: the token expired/);
  });

  test('tokens that must never pass are refused with the reason, never echoing the token', async (t) => {
    const { auth } = await issuerOn(t, { keys: [await publicJwk(first, 'k1')] });
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: ISSUER, aud: 'switchyard', sub: 'alice', team: 'platform', iat: now, exp: now + 600 };
    const pem = (await exportJWK(first.publicKey)).n as string;
    const hs = `${b64({ alg: 'HS256', kid: 'k1' })}.${b64(claims)}`;
    const cases: Array<[string, string | Promise<string>, RegExp]> = [
      ['alg none', `${b64({ alg: 'none' })}.${b64(claims)}.`, /unsigned \(alg none\)/],
      [
        'HS256 signed with the public key',
        `${hs}.${createHmac('sha256', pem).update(hs).digest('base64url')}`,
        /algorithm HS256 is not accepted/,
      ],
      [
        'a jku header',
        sign(first, 'k1').then(
          (tk) => `${b64({ alg: 'RS256', kid: 'k1', jku: 'https://evil.test/jwks' })}.${tk.split('.')[1]}.${tk.split('.')[2]}`,
        ),
        /carries jku/,
      ],
      ['a jwk header', `${b64({ alg: 'RS256', jwk: { kty: 'RSA' } })}.${b64(claims)}.c2ln`, /carries jwk/],
      ['an unknown issuer', sign(first, 'k1', {}, (j) => j.setIssuer('https://other.test')), /unknown issuer/],
      ['expired', sign(first, 'k1', {}, (j) => j.setExpirationTime(now - 600)), /the token expired/],
      ['not yet valid', sign(first, 'k1', {}, (j) => j.setNotBefore(now + 600)), /not valid yet \(nbf\)/],
      ['issued in the future', sign(first, 'k1', {}, (j) => j.setIssuedAt(now + 600)), /issued in the future/],
      [
        'without exp',
        new SignJWT({ sub: 'a' })
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuer(ISSUER)
          .setAudience('switchyard')
          .sign(first.privateKey),
        /exp/,
      ],
      ['signed by another key under a known kid', sign(second, 'k1'), /signature does not verify/],
      ['larger than 8 KiB', sign(first, 'k1', { pad: 'x'.repeat(9000) }), /larger than 8 KiB/],
      ['not JSON inside', 'eyJhbGciOi.e30.c2ln', /not a well-formed JWT/],
    ];
    for (const [name, token, reason] of cases) {
      const text = await token;
      const v = await judged(auth, text);
      const said = refusal(v);
      assert.match(said, reason, name);
      assert.match(said, /^unauthorized: /, name);
      assert.ok(!said.includes(text.split('.')[1] as string), `${name}: the refusal never echoes the token`);
    }
  });

  test('a token with an unknown kid makes one fetch however many requests ask, and none within the cooldown', async (t) => {
    const { server, auth, fetched } = await issuerOn(t, { keys: [await publicJwk(first, 'k1')] });
    assert.equal(server.fetches, 1);
    // The issuer rotates: its JWKS now publishes k2 too. Past the cooldown, 200 requests ask at once.
    server.answer = { keys: [await publicJwk(second, 'k2'), await publicJwk(first, 'k1')] };
    await new Promise((r) => setTimeout(r, 1100));
    let release!: () => void;
    server.gate = new Promise((r) => {
      release = r;
    });
    const tokens = await Promise.all(Array.from({ length: 200 }, (_, i) => sign(second, 'k2', { sub: `p${i}` })));
    const verdicts = tokens.map((tk) => auth.verify(tk, Date.now()));
    await new Promise((r) => setTimeout(r, 50));
    release();
    const settled = await Promise.all(verdicts);
    assert.ok(
      settled.every((v) => v.ok),
      'every request with the new key is served',
    );
    assert.equal(server.fetches, 2, 'one fetch for the 200');
    assert.deepEqual(fetched, ['ok:start', 'ok:unknown_kid']);
    // Right after, another unknown kid is refused without a fetch: the cooldown holds.
    server.gate = null;
    const third = await generateKeyPair('RS256');
    const v = await judged(auth, await sign(third, 'k3'));
    assert.match(refusal(v), /unknown key: no key 'k3'/);
    assert.equal(server.fetches, 2);
  });

  test('an issuer down at start answers 503 until a retry gets its keys, with no restart; a failed refresh keeps the last good keys', async (t) => {
    const { server, auth, fetched } = await issuerOn(t, 503);
    const token = await sign(first, 'k1');
    const down = await judged(auth, token);
    assert.match(refusal(down), /^credential_unavailable: issuer corp's signing keys could not be fetched yet/);
    // The first retry comes a second later.
    server.answer = { keys: [await publicJwk(first, 'k1')] };
    const deadline = Date.now() + 10_000;
    let up = await judged(auth, token);
    while (!up.ok && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      up = await judged(auth, token);
    }
    assert.ok(up.ok, 'served once a retry fetched the keys');
    assert.deepEqual(fetched.slice(0, 2), ['error:start', 'ok:retry']);
    // Now the JWKS breaks: an unknown kid's refetch fails, and the known key still verifies new tokens.
    server.answer = 'not json';
    await new Promise((r) => setTimeout(r, 1100));
    const rogue = await generateKeyPair('RS256');
    assert.match(refusal(await judged(auth, await sign(rogue, 'k9'))), /unknown key/);
    assert.ok(fetched.includes('error:unknown_kid'));
    const fresh = await judged(auth, await sign(first, 'k1', { sub: 'bob' }));
    assert.ok(fresh.ok, 'the last good keys still serve');
  });

  test('a JWKS answer larger than 1 MiB is refused, and keys never come from it', async (t) => {
    const { auth } = await issuerOn(t, JSON.stringify({ keys: [], pad: 'x'.repeat(1024 * 1024) }));
    assert.match(auth.issuer('corp')?.keys.lastError ?? '', /larger than 1048576 bytes/);
    assert.match(refusal(await judged(auth, await sign(first, 'k1'))), /^credential_unavailable/);
  });

  test('discovery reads jwks_uri from the issuer document, and refuses a document that names another issuer', async (t) => {
    const jwks = await jwksServer({ keys: [await publicJwk(first, 'k1')] });
    let named = '';
    const idp = createServer((req, res) => {
      if (req.url === '/realms/corp/.well-known/openid-configuration')
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: named, jwks_uri: jwks.url }));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
    const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}/realms/corp`;
    t.after(async () => {
      await jwks.close();
      idp.closeAllConnections();
      await new Promise((r) => idp.close(r));
    });
    for (const [doc, ok] of [
      ['https://impostor.test', false],
      [issuer, true],
    ] as const) {
      named = doc;
      const auth = new JwtAuthority({ fetched: () => undefined });
      auth.configure(
        authSchema.parse({ jwt: { issuers: [{ id: 'corp', issuer, audiences: ['switchyard'], jwks: { discovery: true } }] } }).jwt,
      );
      await auth.ready(5000);
      const keys = auth.issuer('corp')?.keys;
      assert.equal(keys?.state, ok ? 'ready' : 'unavailable', doc);
      if (!ok) assert.match(keys?.lastError ?? '', /names issuer "https:\/\/impostor.test"/);
      auth.close();
    }
  });

  test('a reload keeps the keys of an issuer whose source is unchanged, and forgets tokens of an issuer removed', async (t) => {
    const { server, auth } = await issuerOn(t, { keys: [await publicJwk(first, 'k1')] });
    const token = await sign(first, 'k1');
    assert.ok((await judged(auth, token)).ok);
    const keys = auth.issuer('corp')?.keys;
    // The same auth block read again (a routine reload): the same issuer, and the token is still judged at once.
    const issuer = auth.issuer('corp');
    auth.configure(jwtConfig(server.url));
    assert.equal(auth.issuer('corp'), issuer);
    const cached = auth.verify(token, Date.now());
    assert.ok(!(cached instanceof Promise) && cached.ok);
    const remapped = authSchema.parse({
      jwt: {
        issuers: [
          {
            id: 'corp',
            issuer: ISSUER,
            audiences: ['switchyard'],
            jwks: { url: server.url },
            jwks_refetch_cooldown_s: 1,
            team: { claim: 'groups' },
          },
        ],
      },
    });
    auth.configure(remapped.jwt);
    assert.equal(auth.issuer('corp')?.keys, keys, 'the same keys object');
    assert.equal(auth.issuer('corp')?.keys.state, 'ready');
    assert.ok((await judged(auth, token)).ok);
    auth.configure(undefined);
    assert.equal(auth.active, false);
    assert.match(refusal(await judged(auth, token)), /unknown issuer/);
  });
});
