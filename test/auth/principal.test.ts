import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { adminRoleOf, JwtAuthority, signedInPrincipal, type VerifiedToken } from '../../src/auth/index.js';
import { authSchema, type JwtConfig } from '../../src/config/index.js';
import { buildGovernancePolicy, checkModel, type GovernancePolicy, scopesOf } from '../../src/governance/index.js';
import { checkTool } from '../../src/governance/tool-calls.js';

// A verified token's claims read as the gateway's words: its team (by a claim's value or a
// mapping, never a default), its principal and limits, the models and tools its scopes
// allow within its team's, and its admin role.

const ISSUER = 'https://login.example.test/realms/corp';
let auth: JwtAuthority;
let jwt: JwtConfig;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
let policy: GovernancePolicy;

before(async () => {
  const pair = await generateKeyPair('ES256');
  privateKey = pair.privateKey;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-jwks-'));
  const file = join(dir, 'jwks.json');
  writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] }));
  jwt = authSchema.parse({
    jwt: {
      issuers: [
        {
          id: 'corp',
          issuer: ISSUER,
          audiences: ['switchyard'],
          jwks: { file },
          team: { claim: 'groups', map: { '/ai-platform': 'platform', '/ml-research': 'research', '/ghost': 'nobody' } },
          principal: { claim: 'azp' },
          roles: { claim: 'realm_access.roles', map: { 'sy-admin': 'admin', 'sy-viewer': 'read_only', 'sy-platform': 'team:platform' } },
          scopes: {
            claim: 'scope',
            models: { 'llm:cheap': ['gpt-4o-mini', 'claude-haiku-*'], 'llm:big': ['gpt-4o'] },
            tools: { 'tools:read': ['search_*'] },
          },
        },
      ],
      principals: { rpm: 60, tpm: 200_000, budget_usd_per_month: 50 },
    },
  }).jwt as JwtConfig;
  auth = new JwtAuthority({ fetched: () => undefined });
  auth.configure(jwt);
  await auth.ready(5000);
  policy = buildGovernancePolicy({
    teams: [
      { id: 'platform', allowedModels: ['gpt-4o*', 'claude-*'], limits: { rpm: 1000 } },
      { id: 'research', limits: {} },
    ],
    keys: [],
    defaultMaxTokens: 1024,
    onMissingPrice: 'allow',
  });
});

after(() => auth.close());

async function verified(claims: Record<string, unknown>): Promise<VerifiedToken> {
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ azp: 'ci-bot', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience('switchyard')
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(privateKey);
  const v = await auth.verify(token, Date.now());
  assert.ok(v.ok, v.ok ? '' : v.description);
  return v.token;
}

describe("a token's claims as a team, a principal and its grants", () => {
  test('a mapped group names the team; the principal is jwt:<issuer>:<claim> with its own limits beside the team scope', async () => {
    const token = await verified({ groups: ['/everyone', '/ai-platform'], scope: 'llm:cheap llm:big' });
    const signed = signedInPrincipal(token, policy, jwt);
    assert.ok(signed.ok);
    const p = signed.principal;
    assert.equal(p.team, 'platform');
    assert.equal(p.keyId, 'jwt:corp:ci-bot');
    const scopes = scopesOf(policy, p);
    assert.deepEqual(
      scopes.map((s) => [s.kind, s.id, s.limits]),
      [
        ['team', 'platform', { rpm: 1000 }],
        ['key', 'jwt:corp:ci-bot', { rpm: 60, tpm: 200_000, budgetMicroUsdPerMonth: 50_000_000 }],
      ],
    );
    // The same token under the same policy maps once.
    const again = signedInPrincipal(token, policy, jwt);
    assert.ok(again.ok);
    assert.equal(again.principal, p);
  });

  test('a group that maps to no team, groups mapping to two teams, and a mapped team that does not exist are refused 403', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ groups: ['/sales'] }, /no value of the token's groups claim maps to a team/],
      [{}, /has no groups claim/],
      [{ groups: ['/ai-platform', '/ml-research'] }, /maps to more than one team \(platform, research\)/],
      [{ groups: ['/ghost'] }, /names team "nobody", which does not exist/],
      [{ groups: ['/ai-platform'], azp: undefined }, /has no azp claim/],
    ];
    for (const [claims, reason] of cases) {
      const signed = signedInPrincipal(await verified(claims), policy, jwt);
      assert.equal(signed.ok, false);
      if (!signed.ok) {
        assert.equal(signed.refusal.code, 'forbidden');
        assert.match(signed.refusal.message, reason);
      }
    }
  });

  test("scopes narrow the team's models and tools and never widen them; a token whose scopes name no entry is allowed nothing", async () => {
    const cheap = signedInPrincipal(await verified({ groups: ['/ai-platform'], scope: 'llm:cheap tools:read' }), policy, jwt);
    assert.ok(cheap.ok);
    assert.equal(checkModel(policy, cheap.principal, 'gpt-4o-mini'), null);
    assert.equal(checkModel(policy, cheap.principal, 'gpt-4o')?.code, 'model_not_allowed');
    // claude-haiku-* is in the scope and claude-* in the team: allowed. A scope never adds what the team lacks.
    assert.equal(checkModel(policy, cheap.principal, 'claude-haiku-4'), null);
    const research = signedInPrincipal(await verified({ groups: ['/ai-platform'], scope: 'llm:big' }), policy, jwt);
    assert.ok(research.ok);
    assert.equal(checkModel(policy, research.principal, 'mistral-large')?.message, 'team "platform" may not use model "mistral-large"');
    assert.equal(checkTool(policy, cheap.principal, 'search_docs'), null);
    assert.equal(checkTool(policy, cheap.principal, 'delete_repo')?.code, 'tool_not_allowed');
    const none = signedInPrincipal(await verified({ groups: ['/ai-platform'], scope: 'openid profile' }), policy, jwt);
    assert.ok(none.ok);
    assert.equal(checkModel(policy, none.principal, 'gpt-4o-mini')?.code, 'model_not_allowed');
    assert.equal(checkTool(policy, none.principal, 'search_docs')?.code, 'tool_not_allowed');
  });

  test('the admin role comes from a nested claim: admin before read_only before a team role', async () => {
    const role = async (roles: string[]): Promise<string | null> => adminRoleOf(await verified({ realm_access: { roles } }));
    assert.equal(await role(['sy-viewer', 'sy-admin']), 'admin');
    assert.equal(await role(['sy-platform', 'sy-viewer']), 'read_only');
    assert.equal(await role(['sy-platform']), 'team:platform');
    assert.equal(await role(['offline_access']), null);
  });
});
