import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';
import { fileResources } from '../support/resources.js';

// The gateway's hold on an issuer's signing keys, against a real OpenID provider it fetches
// the JWKS from: a key rotation is picked up by the first token that needs it once the refetch
// cooldown allows, with one fetch for many concurrent callers, while tokens it verified before
// keep working; a provider that is down when the gateway starts costs its own callers a 503
// until it comes up, and nobody else anything. A verified token is kept only until it expires.
// Never a restart.

const resources = fileResources('switchyard-jwt-keys-');
const PLATFORM_KEY = 'sy-jwt-keys-test-platform-key-000000';
const COOLDOWN_S = 1;

let east: MockProvider;
async function mock(): Promise<MockProvider> {
  east ??= await resources.startMock({ name: 'east' });
  return east;
}

const issuerEntry = (id: string, op: LocalOidcProvider): Record<string, unknown> => ({
  id,
  issuer: op.issuer,
  audiences: ['switchyard'],
  jwks: { url: op.jwksUri },
  // A periodic recheck inside a test would add fetches the counts below do not expect.
  jwks_recheck_s: 3600,
  jwks_refetch_cooldown_s: COOLDOWN_S,
  team: { claim: 'team' },
});

async function gatewayOver(issuers: Array<Record<string, unknown>>): Promise<GatewayProcess> {
  const m = await mock();
  return resources.startGw(
    baseConfig(
      { east: m.baseUrl },
      { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } },
      {
        teams: { platform: {} },
        keys: [{ id: 'platform-key', team: 'platform', key: { env: 'PLATFORM_KEY' } }],
        auth: { jwt: { mode: 'strict', issuers } },
      },
    ),
    { env: { PLATFORM_KEY } },
  );
}

const call = async (gw: GatewayProcess, credential: string) =>
  postChat(gw.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${credential}` });

describe("a rotation of the issuer's signing key", () => {
  it('serves new-key tokens at the first request after the cooldown, with one fetch for many callers; verified tokens keep working', async () => {
    const op = await startOidcProvider({ clients: [{ id: 'alice', claims: { team: 'platform' } }] });
    resources.addUpstream(() => op.stop());
    const gw = await gatewayOver([issuerEntry('corp', op)]);
    const pid = gw.child.pid;

    const beforeRotation = await op.token('alice');
    assert.equal((await call(gw, beforeRotation)).status, 200);
    const oldKey = op.signingKey;

    // The old key leaves the JWKS: only the gateway's cache of verified tokens can still serve
    // the one it has seen.
    await op.rotate({ retireOld: true });
    const afterRotation = await op.token('alice');
    const fetchesAtRotation = op.jwksFetches;
    // Past the cooldown since the gateway's last fetch (at start, before the call above).
    await sleep(COOLDOWN_S * 1000 + 500);

    const storm = await Promise.all(Array.from({ length: 20 }, () => call(gw, afterRotation)));
    assert.deepEqual(
      storm.map((r) => r.status),
      Array(20).fill(200),
      storm.find((r) => r.status !== 200)?.text,
    );
    assert.equal(op.jwksFetches - fetchesAtRotation, 1, 'twenty callers with the new kid cost one JWKS fetch');

    const again = await call(gw, beforeRotation);
    assert.equal(again.status, 200, `a token verified before the rotation keeps working until it expires: ${again.text}`);

    // A token under the retired key that the gateway never verified has nothing to stand on.
    const unseen = await op.hostile.sign(op.hostile.claimsFor('alice'), {}, oldKey);
    const refused = await call(gw, unseen);
    assert.equal(refused.status, 401, refused.text);
    assert.match(refused.headers.get('www-authenticate') ?? '', /invalid_token/);

    assert.equal(gw.child.pid, pid);
    assert.equal(gw.child.exitCode, null, 'no restart');
  });

  it('a rotation that keeps the old key published serves old and new tokens alike', async () => {
    const op = await startOidcProvider({ clients: [{ id: 'bob', claims: { team: 'platform' } }] });
    resources.addUpstream(() => op.stop());
    const gw = await gatewayOver([issuerEntry('corp', op)]);
    const older = await op.token('bob');
    await op.rotate();
    const newer = await op.token('bob');
    await sleep(COOLDOWN_S * 1000 + 500);
    assert.equal((await call(gw, newer)).status, 200);
    assert.equal((await call(gw, older)).status, 200, 'never verified before, its key is still published');
  });
});

describe('a verified token kept until it expires', () => {
  it('is refused as expired at its exp, though the gateway verified it before', async () => {
    const op = await startOidcProvider({ clients: [{ id: 'brief', claims: { team: 'platform' } }], accessTokenTtlS: 2 });
    resources.addUpstream(() => op.stop());
    const gw = await gatewayOver([{ ...issuerEntry('corp', op), clock_skew_s: 0 }]);
    const token = await op.token('brief');
    assert.equal((await call(gw, token)).status, 200);
    const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).exp as number;
    // Past its exp by a whole second, whatever the rounding of either clock.
    await sleep(Math.max(0, (exp + 1) * 1000 - Date.now()) + 100);
    const refused = await call(gw, token);
    assert.equal(refused.status, 401, refused.text);
    assert.match(JSON.parse(refused.text).error.message, /expired/);
  });
});

describe('an issuer whose provider is down when the gateway starts', () => {
  it("its tokens get 503 credential_unavailable while API keys and other issuers' tokens are served; it is served once the provider is up", async () => {
    const down = await startOidcProvider({ clients: [{ id: 'dana', claims: { team: 'platform' } }] });
    resources.addUpstream(() => down.stop());
    const up = await startOidcProvider({ clients: [{ id: 'erin', claims: { team: 'platform' } }] });
    resources.addUpstream(() => up.stop());
    const danaToken = await down.token('dana');
    await down.stop();

    const gw = await gatewayOver([issuerEntry('offline', down), issuerEntry('online', up)]);
    const pid = gw.child.pid;

    const unavailable = await call(gw, danaToken);
    assert.equal(unavailable.status, 503, unavailable.text);
    assert.equal(JSON.parse(unavailable.text).error.code, 'credential_unavailable');
    assert.equal(unavailable.headers.get('retry-after'), '5');
    assert.ok(!unavailable.text.includes(danaToken.split('.')[2]!));
    assert.equal((await call(gw, PLATFORM_KEY)).status, 200, 'API keys are served');
    assert.equal((await call(gw, await up.token('erin'))).status, 200, "another issuer's tokens are served");

    await down.start();
    // Retries back off to at most 30 s apart: a generous bound above that.
    let status = 0;
    for (let i = 0; i < 90 && status !== 200; i += 1) {
      status = (await call(gw, danaToken)).status;
      if (status !== 200) {
        assert.equal(status, 503);
        await sleep(500);
      }
    }
    assert.equal(status, 200, 'served once the provider is up');
    assert.equal((await call(gw, await down.token('dana'))).status, 200);
    assert.equal(gw.child.pid, pid);
    assert.equal(gw.child.exitCode, null, 'no restart');
  });
});

describe('where the keys come from', () => {
  it('a JWKS file serves as the issuer publishes it', async () => {
    const op = await startOidcProvider({ clients: [{ id: 'fay', claims: { team: 'platform' } }] });
    resources.addUpstream(() => op.stop());
    const file = join(resources.tempDir(), 'jwks.json');
    writeFileSync(file, await (await fetch(op.jwksUri)).text());
    const gw = await gatewayOver([{ ...issuerEntry('corp', op), jwks: { file } }]);
    assert.equal((await call(gw, await op.token('fay'))).status, 200);
  });

  it('a discovery document that names another issuer is refused: the configured issuer has no keys, and its tokens get 503', async () => {
    const op = await startOidcProvider({ clients: [{ id: 'gus', claims: { team: 'platform' } }] });
    resources.addUpstream(() => op.stop());
    // One slash more than the document's own issuer (OpenID Connect Discovery 4.3: they must be identical).
    const configured = `${op.issuer}/`;
    const gw = await gatewayOver([{ ...issuerEntry('corp', op), issuer: configured, jwks: { discovery: true } }]);
    const token = await op.hostile.sign(op.hostile.claimsFor('gus', { iss: configured }));
    const r = await call(gw, token);
    assert.equal(r.status, 503, r.text);
    assert.equal(JSON.parse(r.text).error.code, 'credential_unavailable');
  });
});
