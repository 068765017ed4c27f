import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess, runCli } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// `switchyard keys` and `switchyard teams` against a running gateway's admin API, and
// `switchyard config export`, run as an operator runs them.

const resources = fileResources('switchyard-managed-cli-');
const ADMIN = 'admin-token-for-the-cli-tests';
let db: TestDatabase;
let gw: GatewayProcess;
let configPath: string;
let env: NodeJS.ProcessEnv;

before(async () => {
  const east = await resources.startMock({ name: 'east' });
  db = sqliteDatabase();
  const config = baseConfig(
    { east: east.baseUrl },
    { m: { candidates: [{ provider: 'east' }] } },
    {
      server: { admin_token: { env: 'ADMIN_TOKEN' } },
      teams: { platform: {} },
      keys: [{ id: 'platform-ci', team: 'platform', sha256: 'b'.repeat(64) }],
      database: { url: db.url },
    },
  );
  gw = await resources.startGw(config, { env: { ADMIN_TOKEN: ADMIN } });
  configPath = gw.configPath;
  env = { SWITCHYARD_ADMIN_TOKEN: ADMIN, ADMIN_TOKEN: ADMIN };
});
after(async () => {
  await gw.stop();
  await db.drop();
});

const cli = (...args: string[]) => runCli(args, env);

describe('switchyard keys and teams against a running gateway', () => {
  it('creates a team and a key whose printed secret works, lists, rotates and revokes it', async () => {
    const admin = gw.adminUrl as string;
    const team = await cli('teams', 'create', 'growth', '--rpm', '100', '--allowed-models', 'm,n*', '--admin-url', admin);
    assert.equal(team.code, 0, team.stderr);
    assert.match(team.stdout, /team "growth" created/);
    const updated = await cli('teams', 'update', 'growth', '--budget-usd', '25', '--admin-url', admin);
    assert.equal(updated.code, 0, updated.stderr);
    const teams = await cli('teams', 'list', '--admin-url', admin);
    assert.match(teams.stdout, /^growth\s+database\s+100\s+-\s+-\s+25\s+m,n\*$/m);
    assert.match(teams.stdout, /^platform\s+config/m);

    const made = await cli('keys', 'create', '--team', 'growth', '--id', 'growth-web', '--rpm', '5', '--admin-url', admin);
    assert.equal(made.code, 0, made.stderr);
    const secret = made.stdout.split('\n')[1] as string;
    assert.match(secret, /^sy-/);
    assert.equal((await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${secret}` })).status, 200);

    const listed = await cli('keys', 'list', '--team', 'growth', '--admin-url', admin);
    assert.match(listed.stdout, new RegExp(`^growth-web\\s+growth\\s+${secret.slice(0, 10)}\\s+database`, 'm'));
    assert.equal(listed.stdout.includes(secret), false, 'a list never shows a secret');

    const rotated = await cli('keys', 'rotate', 'growth-web', '--grace-s', '60', '--admin-url', admin);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /The old one works until \d{4}-/);
    const fresh = rotated.stdout.split('\n')[1] as string;
    assert.equal((await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${fresh}` })).status, 200);
    const revoked = await cli('keys', 'revoke', 'growth-web', '--admin-url', admin);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${fresh}` })).status, 401);
  });

  it('prints a refusal with the field at fault and exits 1, and says when the token is missing', async () => {
    const admin = gw.adminUrl as string;
    const orphan = await cli('keys', 'create', '--team', 'nobody', '--admin-url', admin);
    assert.equal(orphan.code, 1);
    assert.match(orphan.stderr, /invalid_request: team: unknown team "nobody"\n\s+team: unknown team "nobody"/);
    const readOnly = await cli('teams', 'update', 'platform', '--rpm', '1', '--admin-url', admin);
    assert.equal(readOnly.code, 1);
    assert.match(readOnly.stderr, /managed_by_config/);
    const noToken = await runCli(['keys', 'list', '--admin-url', admin], {});
    assert.equal(noToken.code, 1);
    assert.match(noToken.stderr, /unauthorized: .*\(set SWITCHYARD_ADMIN_TOKEN\)/);
    const usage = await cli('keys', 'rotate', '--admin-url', admin);
    assert.equal(usage.code, 1);
    assert.match(usage.stderr, /the key id is required/);
  });

  it('keys create without a gateway prints the config line, as it always did', async () => {
    const offline = await cli('keys', 'create', '--offline', '--team', 'platform', '--id', 'ci-2');
    assert.equal(offline.code, 0, offline.stderr);
    assert.match(offline.stdout, /^- \{ id: "ci-2", team: "platform", sha256: "[0-9a-f]{64}" \}$/m);
  });
});

describe('switchyard config export', () => {
  it("prints the file with the database's teams and keys as hashes, which validate accepts", async () => {
    const admin = gw.adminUrl as string;
    await cli('teams', 'create', 'exported', '--tpm', '1000', '--admin-url', admin);
    const made = await cli('keys', 'create', '--team', 'exported', '--id', 'exported-1', '--admin-url', admin);
    const secret = made.stdout.split('\n')[1] as string;
    const out = await cli('config', 'export', '--config', configPath);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.includes(secret), false, 'no secret in the export');
    const doc = parse(out.stdout) as { teams: Record<string, unknown>; keys: Array<{ id: string; team: string; sha256: string[] }> };
    assert.deepEqual(doc.teams.exported, { rate_limit: { tpm: 1000 } });
    assert.ok(doc.teams.platform !== undefined, "the file's own entries stay");
    const key = doc.keys.find((k) => k.id === 'exported-1');
    assert.equal(key?.team, 'exported');
    assert.match(key?.sha256[0] ?? '', /^[0-9a-f]{64}$/);
    const exported = join(resources.tempDir(), 'exported.yaml');
    writeFileSync(exported, out.stdout);
    const valid = await runCli(['validate', '--config', exported], env);
    assert.equal(valid.code, 0, valid.stderr);
  });

  /** Exports `text` (a config file), checks that it is block style throughout and that validate accepts it. */
  async function exportOf(text: string): Promise<string> {
    const dir = resources.tempDir();
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, text);
    const out = await cli('config', 'export', '--config', file);
    assert.equal(out.code, 0, out.stderr);
    const body = out.stdout
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('#'))
      .map((line) => line.replace(/ #.*$/, ''));
    assert.deepEqual(
      body.filter((line) => /[{}[\]]/.test(line)),
      [],
      `block style throughout:\n${out.stdout}`,
    );
    const exported = join(dir, 'exported.yaml');
    writeFileSync(exported, out.stdout);
    const valid = await runCli(['validate', '--config', exported], env);
    assert.equal(valid.code, 0, valid.stderr);
    return out.stdout;
  }

  const FLOW_ROUTING = `providers: { east: { type: openai, base_url: "http://127.0.0.1:9/v1" } }
routing: { routes: { m: { candidates: [ { provider: east } ] } } }
`;

  it("exports a file with no teams: and no keys:, joining the database's in, in block style, which validate accepts", async () => {
    const out = await exportOf(`# the gateway of the export test\n${FLOW_ROUTING}database: { url: "${db.url}" }\n`);
    const doc = parse(out) as { teams: Record<string, unknown>; keys: Array<{ id: string }> };
    assert.deepEqual(doc.teams.exported, { rate_limit: { tpm: 1000 } }, "the database's teams are joined in");
    assert.ok(
      doc.keys.some((k) => k.id === 'exported-1'),
      'and its keys whose team is in the export',
    );
    assert.match(out, /# the gateway of the export test/, "the file's comments stay");
  });

  it('exports a file without a database, in block style', async () => {
    const out = await exportOf(
      `${FLOW_ROUTING}teams: { platform: { rate_limit: { rpm: 5 } } }\nkeys: [ { id: ci, team: platform, sha256: "${'c'.repeat(64)}" } ]\n`,
    );
    const doc = parse(out) as { teams: Record<string, unknown>; keys: Array<{ id: string }> };
    assert.deepEqual(doc.teams.platform, { rate_limit: { rpm: 5 } });
    assert.deepEqual(
      doc.keys.map((k) => k.id),
      ['ci'],
    );
  });

  it("never prints a database URL's query", async (t) => {
    const pgDb = await postgresDatabase();
    if ('skip' in pgDb) return t.skip(pgDb.skip);
    try {
      const url = `${pgDb.url}?application_name=switchyard-export-test&sslmode=disable`;
      const out = await exportOf(`${FLOW_ROUTING}database: { url: "${url}" }\n`);
      assert.equal(out.includes('application_name'), false, out);
      assert.equal(out.includes('sslmode'), false, out);
      assert.equal((parse(out) as { database: { url: string } }).database.url, pgDb.url);
      assert.match(out, /query is not printed/);
    } finally {
      await pgDb.drop();
    }
  });
});
