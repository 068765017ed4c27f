import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';
import { Credential, type EntraSpec, EntraTokenSource, refreshDelayMs, type TokenFetch } from '../../src/providers/index.js';

// The token source on its own, over a scripted fetch: when it refreshes, what it serves
// meanwhile, and that it never prints what it holds.

const spec: EntraSpec = {
  providerName: 'az',
  authorityHost: 'https://login.example',
  tenantId: 't',
  clientId: 'c',
  clientSecret: new Credential('the-secret', 'env:AZ_SECRET'),
  assertionFile: null,
};

describe('Entra ID token source', () => {
  it('refreshes 5 minutes before expiry, or at 80% of a lifetime too short for that', () => {
    assert.equal(refreshDelayMs(3600), 2_880_000, 'an hour: at 48 minutes (80%) comes first');
    assert.equal(refreshDelayMs(1200), 900_000, '20 minutes: 5 minutes before expiry comes first');
    assert.equal(refreshDelayMs(3), 2_400);
  });

  it('serves the token once fetched, keeps it through a failed refresh, and says why when there is none', async () => {
    const answers: TokenFetch[] = [{ ok: false, message: 'authority https://login.example answered 503' }];
    const source = new EntraTokenSource(
      spec,
      () => {},
      async () => answers.shift() ?? { ok: true, token: 'tok-1', lifetimeS: 3600 },
    );
    await source.start();
    assert.equal(source.bearer(), null);
    assert.match(source.problem(), /answered 503/);
    source.stop();
    const ok = new EntraTokenSource(
      spec,
      () => {},
      async () => ({ ok: true, token: 'tok-1', lifetimeS: 3600 }),
    );
    await ok.start();
    assert.equal(ok.bearer(), 'tok-1');
    assert.equal(ok.authorization(), 'Bearer tok-1');
    ok.stop();
    assert.equal(ok.bearer(), null, 'a retired source serves nothing');
  });

  it('never shows the token or the secret when logged or serialised', async () => {
    const source = new EntraTokenSource(
      spec,
      () => {},
      async () => ({ ok: true, token: 'tok-secret-value', lifetimeS: 3600 }),
    );
    await source.start();
    for (const text of [JSON.stringify({ source }), inspect(source), String(source.source)]) {
      assert.ok(!text.includes('tok-secret-value') && !text.includes('the-secret'), text);
    }
    source.stop();
  });
});
