import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { browserMissing, launchBrowser, openPage, screenshot, waitForText } from '../support/browser.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { keyStatus, v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';

// Operators who sign in to the status page with a token from their identity provider: a real
// gateway process whose only way into the admin listener is a JWT (its issuer's keys read from
// a JWKS file, its roles claim mapped to admin, read_only and team:acme), over a SQLite
// database and an audit log, and Debian's chromium pasting each token into the page as a
// person would.

declare const document: { querySelector(selector: string): { textContent: string | null } | null };
declare const sessionStorage: { length: number };

const missing = browserMissing();
const r = fileResources('switchyard-status-jwt-');
const ISSUER = 'https://idp.test/realms/corp';
// A scoped admin token of the config file: the page must treat it as it treats a team:acme JWT.
const TEAM_ADMIN_TOKEN = `tok-${'statuspageJWTteamACME0123'}`;

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
let pair: KeyPair;
let db: TestDatabase;
let gw: GatewayProcess;
let auditFile: string;
let browser: Browser | null = null;

/** A token of the corp issuer for `sub`, whose roles claim holds `roles`; `expiresInS` may be negative. */
function token(sub: string, roles: string[], expiresInS = 600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub, roles })
    .setProtectedHeader({ alg: 'RS256', kid: 'corp-1' })
    .setIssuer(ISSUER)
    .setAudience('switchyard')
    .setIssuedAt(Math.min(now, now + expiresInS - 60))
    .setExpirationTime(now + expiresInS)
    .sign(pair.privateKey);
}

before(async () => {
  pair = await generateKeyPair('RS256');
  const dir = r.tempDir();
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'corp-1', alg: 'RS256', use: 'sig' }] }));
  auditFile = join(dir, 'audit.jsonl');
  const east = await r.startMock({ name: 'east' });
  db = sqliteDatabase();
  gw = await r.startGw(
    baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      {
        // No server.admin_token: an issuer with a roles mapping is what closes the listener.
        server: { admin_tokens: [{ id: 'acme-ops', token: { env: 'TEAM_ADMIN_TOKEN' }, role: 'team:acme' }] },
        auth: {
          jwt: {
            mode: 'optional',
            issuers: [
              {
                id: 'corp',
                issuer: ISSUER,
                audiences: ['switchyard'],
                jwks: { file: jwksFile },
                algorithms: ['RS256'],
                roles: {
                  claim: 'roles',
                  map: { 'switchyard-admin': 'admin', 'switchyard-viewer': 'read_only', 'acme-ops': 'team:acme' },
                },
              },
            ],
          },
        },
        teams: { acme: { rate_limit: { rpm: 100 } }, platform: { rate_limit: { rpm: 200 } } },
        database: { url: db.url },
        audit: { file: auditFile },
      },
    ),
    { dir, env: { TEAM_ADMIN_TOKEN } },
  );
  if (missing === null) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await gw?.stop();
  await db?.drop();
});

/** The admin_write records of the audit log; waits (bounded) until `until` holds of them. */
async function auditWrites(until: (writes: Array<Record<string, unknown>>) => boolean): Promise<Array<Record<string, unknown>>> {
  let writes: Array<Record<string, unknown>> = [];
  for (let i = 0; i < 100; i++) {
    writes = readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((x) => x.event === 'admin_write');
    if (until(writes)) return writes;
    await sleep(50);
  }
  return writes;
}

async function signIn(page: Page, value: string): Promise<void> {
  await page.waitForSelector('#token-form:not([hidden])');
  await page.fill('#token', value);
  await page.click('#token-form button[type="submit"]');
}

async function signOut(page: Page): Promise<void> {
  await page.click('#sign-out');
  await page.waitForSelector('#token-form:not([hidden])');
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the token left the tab');
  assert.equal(await page.locator('#signed-in').isHidden(), true);
}

/** The console errors a test may expect: the refusals (401, 403) of a token, the page's first poll without one among them. */
function unexpected(errors: string[]): string[] {
  return errors.filter((e) => !/status of 40[13]/.test(e));
}

describe('operators sign in to the status page with a token from their identity provider', () => {
  it('GET /admin/v1/me names each signed-in operator and its role; an expired token is refused with the reason', async () => {
    const admin = gw.adminUrl as string;
    const cases = [
      [await token('carol', ['switchyard-admin']), { id: 'jwt:corp:carol', role: 'admin' }],
      [await token('alice', ['switchyard-viewer']), { id: 'jwt:corp:alice', role: 'read_only' }],
      [await token('bob', ['acme-ops', 'unrelated-group']), { id: 'jwt:corp:bob', role: 'team:acme' }],
      [TEAM_ADMIN_TOKEN, { id: 'acme-ops', role: 'team:acme' }],
    ] as const;
    for (const [t, expected] of cases) {
      const me = await v1(admin, 'GET', 'me', { token: t });
      assert.equal(me.status, 200, me.text);
      assert.deepEqual(me.body, expected);
    }
    const expired = await v1(admin, 'GET', 'me', { token: await token('alice', ['switchyard-viewer'], -3600) });
    assert.equal(expired.status, 401);
    assert.match(expired.body.error.message, /expired/);
    assert.match(expired.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    const noRole = await v1(admin, 'GET', 'me', { token: await token('dave', ['someone-else']) });
    assert.equal(noRole.status, 403, 'a valid token whose roles map to no admin role');
    assert.equal((await v1(admin, 'GET', 'me')).status, 401, 'no token at all: the listener is closed by the roles mapping');
  });

  it('a read_only operator may read the status but not reload; a team role may not read it', async () => {
    const admin = gw.adminUrl as string;
    const viewer = { authorization: `Bearer ${await token('alice', ['switchyard-viewer'])}` };
    const team = { authorization: `Bearer ${await token('bob', ['acme-ops'])}` };
    assert.equal((await fetch(`${admin}/admin/status`, { headers: viewer })).status, 200);
    const reload = await fetch(`${admin}/admin/reload`, { method: 'POST', headers: viewer });
    assert.equal(reload.status, 403);
    assert.match(((await reload.json()) as { error: { message: string } }).error.message, /"jwt:corp:alice" \(role read_only\)/);
    const write = await v1(admin, 'POST', 'keys', { token: await token('alice', ['switchyard-viewer']), body: { team: 'acme' } });
    assert.equal(write.status, 403, write.text);
    const status = await fetch(`${admin}/admin/status/page-data`, { headers: team });
    assert.equal(status.status, 403);
    await status.arrayBuffer();
  });

  it('an admin-role operator creates a managed key, and the audit record of that write names its principal id', async () => {
    const carol = await token('carol', ['switchyard-admin']);
    const created = await v1(gw.adminUrl as string, 'POST', 'keys', { token: carol, body: { id: 'acme-web', team: 'acme' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(await keyStatus(gw.url, created.body.key as string), 200, 'the new key works');
    const other = await v1(gw.adminUrl as string, 'POST', 'keys', { token: carol, body: { id: 'platform-web', team: 'platform' } });
    assert.equal(other.status, 201, other.text);

    const writes = await auditWrites((w) => w.some((x) => x.object_id === 'platform-web'));
    const record = writes.find((x) => x.object === 'key' && x.action === 'create' && x.object_id === 'acme-web');
    assert.ok(record, `no audit record of the key's creation among ${JSON.stringify(writes)}`);
    assert.equal(record.token, 'jwt:corp:carol', 'the principal, not a token id');
    assert.equal(record.outcome, 'applied');
    assert.ok(!readFileSync(auditFile, 'utf8').includes(carol), 'the token itself is never written');
  });

  it('in chromium: read_only sees the status with no write control, signs out; team:acme sees its own team only; an expired token brings the form back with the reason', {
    skip: missing ?? false,
  }, async () => {
    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${gw.adminUrl as string}/`);
    await page.waitForSelector('#token-form:not([hidden])');
    assert.match((await page.locator('#token-form').textContent()) ?? '', /identity provider/);

    // read_only: the whole status, who is signed in, and nothing to change.
    await signIn(page, await token('alice', ['switchyard-viewer']));
    await waitForText(page, '#generation-number', '#1');
    await waitForText(page, '#signed-in-as', 'Signed in as jwt:corp:alice (read_only)');
    await page.waitForSelector('#managed-section:not([hidden]) tr[data-key="acme-web"]', { timeout: 15_000 });
    assert.ok(await page.locator('article[data-team="platform"]').isVisible(), 'read_only reads every team');
    assert.equal(await page.locator('#managed button[data-action]').count(), 0, 'no create, rotate or revoke control');
    await waitForText(page, '#managed-hint', 'read-only');
    await screenshot(page, 'status-page-jwt-read-only');
    await signOut(page);
    assert.equal(await page.locator('#status').isHidden(), true, 'the status is gone with the token');

    // team:acme: its own team's keys and spend, a plain word on what the role sees, no dead page.
    await signIn(page, await token('bob', ['acme-ops']));
    await page.waitForSelector('#team-note:not([hidden])', { timeout: 15_000 });
    await waitForText(page, '#signed-in-as', 'Signed in as jwt:corp:bob (team:acme)');
    await waitForText(page, '#team-note', 'team acme only');
    await page.waitForSelector('article[data-team="acme"] tr[data-key="acme-web"]', { timeout: 15_000 });
    assert.equal(await page.locator('article[data-team="platform"]').count(), 0, "another team's card is not there");
    assert.equal(await page.locator('tr[data-key="platform-web"]').count(), 0, "nor another team's key");
    assert.equal(await page.locator('#generation-card').isVisible(), false, "the gateway's status is not shown");
    assert.equal(await page.locator('#reloads').isVisible(), false);
    assert.doesNotMatch((await page.locator('#connection').textContent()) ?? '', /Cannot reach/);
    // A team role manages its own team's keys: the page's write works for it.
    await page.locator('article[data-team="acme"] button[data-action="create-key"]').click();
    await page.waitForSelector('#new-secret:not([hidden])');
    const secret = ((await page.locator('#new-secret-value').textContent()) ?? '').trim();
    assert.equal(await keyStatus(gw.url, secret), 200);
    await page.click('#new-secret-done');
    await screenshot(page, 'status-page-jwt-team');
    await signOut(page);

    // Expired: refused, the form back with the gateway's reason, and the token dropped.
    await signIn(page, await token('alice', ['switchyard-viewer'], -3600));
    await page.waitForSelector('#token-error:not([hidden])', { timeout: 15_000 });
    assert.match((await page.locator('#token-error').textContent()) ?? '', /^The gateway refused this token: .*expired/);
    assert.equal(await page.locator('#status').isHidden(), true);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await screenshot(page, 'status-page-jwt-expired');

    const writes = await auditWrites((w) => w.some((x) => x.token === 'jwt:corp:bob'));
    assert.ok(
      writes.some((x) => x.token === 'jwt:corp:bob' && x.action === 'create' && x.outcome === 'applied'),
      'the key the team operator created from the page is audited under its principal',
    );
    assert.deepEqual(unexpected(errors), []);
    await page.close();
  });

  it('in chromium: a team admin token of the config file gets the same team view as a team:acme token', {
    skip: missing ?? false,
  }, async () => {
    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${gw.adminUrl as string}/`);
    await signIn(page, TEAM_ADMIN_TOKEN);
    await page.waitForSelector('#team-note:not([hidden])', { timeout: 15_000 });
    await waitForText(page, '#signed-in-as', 'Signed in as acme-ops (team:acme)');
    await page.waitForSelector('article[data-team="acme"] tr[data-key="acme-web"]', { timeout: 15_000 });
    assert.equal(await page.locator('article[data-team="platform"]').count(), 0);
    assert.equal(await page.locator('#generation-card').isVisible(), false);
    assert.deepEqual(unexpected(errors), []);
    await page.close();
  });

  it('in chromium: with no database a team role is told there is nothing for it here, not left with a dead page', {
    skip: missing ?? false,
  }, async () => {
    const dir = r.tempDir();
    const jwksFile = join(dir, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'corp-1', alg: 'RS256', use: 'sig' }] }));
    const east = await r.startMock({ name: 'east-no-db' });
    const bare = await r.startGw(
      baseConfig(
        { east: east.baseUrl },
        { m: { candidates: [{ provider: 'east' }] } },
        {
          auth: {
            jwt: {
              issuers: [
                {
                  id: 'corp',
                  issuer: ISSUER,
                  audiences: ['switchyard'],
                  jwks: { file: jwksFile },
                  roles: { claim: 'roles', map: { 'acme-ops': 'team:acme' } },
                },
              ],
            },
          },
          teams: { acme: {} },
        },
      ),
      { dir },
    );
    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${bare.adminUrl as string}/`);
    await signIn(page, await token('bob', ['acme-ops']));
    await waitForText(page, '#signed-in-as', 'Signed in as jwt:corp:bob (team:acme)');
    await waitForText(page, '#managed-problem', 'This gateway has no database');
    assert.ok(await page.locator('#team-note').isVisible());
    assert.equal(await page.locator('#token-form').isHidden(), true);
    await screenshot(page, 'status-page-jwt-team-no-database');
    // The teams and keys read that told it so is a 404 of the admin API.
    assert.deepEqual(
      unexpected(errors).filter((e) => !(e.includes('status of 404') && e.includes('admin/v1/'))),
      [],
    );
    await page.close();
  });
});
