import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';
import { fileResources } from '../support/resources.js';

// A signed-in principal's own limits: auth.jwt.principals for every issuer, or an issuer's own
// `principals` in its place. They bind the principal only, within its team's, so the team's
// API keys and the other issuer's principals are not held by them.

const resources = fileResources('switchyard-jwt-limits-');
const PLATFORM_KEY = 'sy-jwt-limits-test-platform-key-0000';

let corp: LocalOidcProvider;
let partner: LocalOidcProvider;
let gw: GatewayProcess;

const call = (credential: string) => postChat(gw.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${credential}` });

describe("a principal's own limits", () => {
  before(async () => {
    corp = await startOidcProvider({ clients: [{ id: 'alice', claims: { team: 'platform' } }] });
    partner = await startOidcProvider({ clients: [{ id: 'pat', claims: { team: 'platform' } }] });
    resources.addUpstream(() => corp.stop());
    resources.addUpstream(() => partner.stop());
    const east = await resources.startMock({ name: 'east' });
    const issuer = (id: string, op: LocalOidcProvider) => ({
      id,
      issuer: op.issuer,
      audiences: ['switchyard'],
      jwks: { url: op.jwksUri },
      team: { claim: 'team' },
    });
    gw = await resources.startGw(
      baseConfig(
        { east: east.baseUrl },
        { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } },
        {
          pricing: { models: { 'gpt-4o-mini': { input_usd_per_mtok: 1, output_usd_per_mtok: 1 } } },
          teams: { platform: {} },
          keys: [{ id: 'platform-key', team: 'platform', key: { env: 'PLATFORM_KEY' } }],
          auth: {
            jwt: {
              issuers: [issuer('corp', corp), { ...issuer('partner', partner), principals: { rpm: 1 } }],
              // Nothing to spend: every priced call of a corp principal is over its budget.
              principals: { budget_usd_per_month: 0 },
            },
          },
        },
      ),
      { env: { PLATFORM_KEY } },
    );
  });

  it("auth.jwt.principals binds each principal, not its team's keys", async () => {
    const refused = await call(await corp.token('alice'));
    assert.equal(refused.status, 402, refused.text);
    assert.equal(refused.json().error.code, 'budget_exceeded');
    assert.equal((await call(PLATFORM_KEY)).status, 200, 'the team and its keys are not held by a principal budget');
  });

  it("an issuer's own principals replace auth.jwt.principals for its principals", async () => {
    const pat = await partner.token('pat');
    assert.equal((await call(pat)).status, 200, 'no budget from auth.jwt.principals');
    const second = await call(pat);
    assert.equal(second.status, 429, second.text);
    assert.equal(second.json().error.code, 'rate_limit_exceeded');
  });
});
