import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';
import { fileResources } from '../support/resources.js';

// The trusted issuers follow the config through a reload, with no restart: an issuer added is
// served from then on, and one removed is refused from then on, its tokens that the gateway
// had already verified included (removing an issuer is how an operator cuts off a compromised one).
// An issuer the reload leaves as it was keeps its verified tokens; one it changes checks them again.

const resources = fileResources('switchyard-jwt-reload-');

let first: LocalOidcProvider;
let second: LocalOidcProvider;
let east: MockProvider;

const issuerEntry = (id: string, op: LocalOidcProvider): Record<string, unknown> => ({
  id,
  issuer: op.issuer,
  audiences: ['switchyard'],
  jwks: { url: op.jwksUri },
  team: { claim: 'team' },
});

const configWith = (issuers: Array<Record<string, unknown>>): Record<string, unknown> =>
  baseConfig(
    { east: east.baseUrl },
    { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } },
    { teams: { platform: {} }, auth: { jwt: { issuers } } },
  );

const call = (gw: GatewayProcess, token: string) => postChat(gw.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${token}` });

describe('trusted issuers across a reload', () => {
  before(async () => {
    first = await startOidcProvider({ clients: [{ id: 'alice', claims: { team: 'platform' } }] });
    second = await startOidcProvider({ clients: [{ id: 'bob', claims: { team: 'platform' } }] });
    resources.addUpstream(() => first.stop());
    resources.addUpstream(() => second.stop());
    east = await resources.startMock({ name: 'east' });
  });

  it('an issuer added is served, and one removed is refused, its verified tokens included, with no restart', async () => {
    const gw = await resources.startGw(configWith([issuerEntry('first', first)]));
    const pid = gw.child.pid;
    const alice = await first.token('alice');
    const bob = await second.token('bob');
    assert.equal((await call(gw, alice)).status, 200);
    const unknown = await call(gw, bob);
    assert.equal(unknown.status, 401, unknown.text);
    assert.match(unknown.json().error.message, /issuer/);

    gw.writeConfig(configWith([issuerEntry('first', first), issuerEntry('second', second)]));
    const added = await adminReload(gw.adminUrl as string);
    assert.equal(added.status, 200, added.text);
    // The new issuer's keys are fetched after the reload: a bounded wait for them, never a restart.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i += 1) {
      const r = await call(gw, bob);
      status = r.status;
      if (status !== 200) await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(status, 200, 'the added issuer is served');
    assert.equal((await call(gw, alice)).status, 200, 'the kept issuer still is');

    gw.writeConfig(configWith([issuerEntry('second', second)]));
    const removed = await adminReload(gw.adminUrl as string);
    assert.equal(removed.status, 200, removed.text);
    const cut = await call(gw, alice);
    assert.equal(cut.status, 401, `a token of a removed issuer, verified before, is refused: ${cut.text}`);
    assert.match(cut.headers.get('www-authenticate') ?? '', /invalid_token/);
    assert.equal((await call(gw, bob)).status, 200);
    assert.equal(gw.child.pid, pid);
    assert.equal(gw.child.exitCode, null, 'no restart');
  });

  it("a reload keeps an unchanged issuer's verified tokens, and one that changes the issuer verifies them again against the keys it holds", async () => {
    const op = await startOidcProvider({ clients: [{ id: 'carol', claims: { team: 'platform' } }] });
    resources.addUpstream(() => op.stop());
    const entry = { ...issuerEntry('rotating', op), jwks_refetch_cooldown_s: 1 };
    const gw = await resources.startGw(configWith([entry]));
    const older = await op.token('carol');
    assert.equal((await call(gw, older)).status, 200);
    await op.rotate({ retireOld: true });
    await new Promise((res) => setTimeout(res, 1500));
    assert.equal((await call(gw, await op.token('carol'))).status, 200, 'the new key is fetched');
    assert.equal((await call(gw, older)).status, 200, 'verified before the rotation: kept');

    assert.equal((await adminReload(gw.adminUrl as string)).status, 200);
    assert.equal((await call(gw, older)).status, 200, 'a reload that leaves the issuer as it was keeps its verified tokens');

    gw.writeConfig(configWith([{ ...entry, clock_skew_s: 30 }]));
    assert.equal((await adminReload(gw.adminUrl as string)).status, 200);
    const again = await call(gw, older);
    assert.equal(again.status, 401, `its key is no longer published: ${again.text}`);
    assert.match(again.json().error.message, /unknown key/);
    assert.equal((await call(gw, await op.token('carol'))).status, 200);
  });
});
