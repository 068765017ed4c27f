import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload, adminStatus } from '../support/admin.js';
import { chatBody, postChat } from '../support/http.js';
import { candidate } from '../support/overlay.js';
import { overlayConfig, writeByRename } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// Overlay candidate credentials, read from the credential mount by a real gateway process:
// a secretRef can only name a file inside credential_mount_base.

const resources = fileResources('switchyard-overlay-credentials-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('a credential secretRef that escapes credential_mount_base', () => {
  it('a revision whose secretRef namespace is ".." is rejected as invalid_candidate; the previous revision keeps serving and the outside file is never sent', async () => {
    const dir = resources.tempDir();
    const mount = join(dir, 'mount');
    mkdirSync(join(mount, 'team-a', 'creds'), { recursive: true });
    writeFileSync(join(mount, 'team-a', 'creds', 'token'), 'team-a-token\n');
    mkdirSync(join(dir, 'elsewhere'));
    writeFileSync(join(dir, 'elsewhere', 'private-key'), 'OUTSIDE-THE-MOUNT-SECRET\n');
    const file = join(dir, 'routing-overlay.json');
    const withRef = (secretRef: Record<string, string>): string =>
      JSON.stringify({ local_site: 'east', candidates: [candidate('m', 'east', { credential: { strategy: 'bearer_token', secretRef } })] });
    writeFileSync(file, withRef({ namespace: 'team-a', name: 'creds', key: 'token' }));
    const gw = await resources.startGw(
      overlayConfig({ east: east.baseUrl }, { file, credential_mount_base: mount, reload: { enabled: false } }),
      { dir },
    );

    east.reset();
    const before = await postChat(gw.url, chatBody('m'));
    assert.equal(before.status, 200, before.text);
    const revision = before.headers.get('x-switchyard-revision');
    assert.equal(east.stats().recent.at(-1)?.headers.authorization, 'Bearer team-a-token');

    writeByRename(file, withRef({ namespace: '..', name: 'elsewhere', key: 'private-key' }));
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.status, 422, reload.text);
    assert.equal(reload.body.result, 'rejected', reload.text);
    assert.equal(reload.body.reason, 'invalid_candidate', reload.text);
    assert.ok(
      reload.body.errors.some((e) => e.message.includes('credential.secretRef.namespace')),
      `the error names credential.secretRef.namespace: ${reload.text}`,
    );

    const after = await postChat(gw.url, chatBody('m'));
    assert.equal(after.status, 200, after.text);
    assert.equal(after.headers.get('x-switchyard-revision'), revision, 'the previous revision keeps serving');
    assert.equal(east.stats().recent.at(-1)?.headers.authorization, 'Bearer team-a-token');
    const leaked = east.stats().recent.filter((r) => JSON.stringify(r.headers).includes('OUTSIDE-THE-MOUNT-SECRET'));
    assert.equal(leaked.length, 0, 'the file outside the mount was sent upstream');
    const status = await adminStatus(gw.adminUrl!);
    assert.ok(!status.text.includes('OUTSIDE-THE-MOUNT-SECRET'));
  });
});

describe('a credential file that links out of credential_mount_base', () => {
  it("a link inside the mount to a file outside it is refused by real path: the candidate is unavailable and the outside file is never sent; the kubelet's own ..data links still resolve", async () => {
    const dir = resources.tempDir();
    const mount = join(dir, 'mount');
    mkdirSync(join(dir, 'elsewhere'));
    writeFileSync(join(dir, 'elsewhere', 'private-key'), 'OUTSIDE-THE-MOUNT-SECRET\n');
    // team-a: the kubelet's layout, key -> ..data/key, ..data -> ..<timestamp>/.
    mkdirSync(join(mount, 'team-a', 'creds', '..2026_12_01_00_00_00.1'), { recursive: true });
    writeFileSync(join(mount, 'team-a', 'creds', '..2026_12_01_00_00_00.1', 'token'), 'team-a-token\n');
    symlinkSync('..2026_12_01_00_00_00.1', join(mount, 'team-a', 'creds', '..data'));
    symlinkSync('..data/token', join(mount, 'team-a', 'creds', 'token'));
    // team-b: a link that leaves the mount.
    mkdirSync(join(mount, 'team-b', 'creds'), { recursive: true });
    symlinkSync(join(dir, 'elsewhere', 'private-key'), join(mount, 'team-b', 'creds', 'token'));
    const file = join(dir, 'routing-overlay.json');
    const ref = (namespace: string) => ({
      credential: { strategy: 'bearer_token', secretRef: { namespace, name: 'creds', key: 'token' } },
    });
    writeFileSync(
      file,
      JSON.stringify({ local_site: 'east', candidates: [candidate('a', 'east', ref('team-a')), candidate('b', 'east', ref('team-b'))] }),
    );
    const gw = await resources.startGw(
      overlayConfig({ east: east.baseUrl }, { file, credential_mount_base: mount, reload: { enabled: false } }),
      { dir },
    );

    east.reset();
    const a = await postChat(gw.url, chatBody('a'));
    assert.equal(a.status, 200, a.text);
    assert.equal(east.stats().recent.at(-1)?.headers.authorization, 'Bearer team-a-token', 'the kubelet layout resolves');

    const b = await postChat(gw.url, chatBody('b'));
    assert.equal(b.status, 503, b.text);
    assert.match(b.text, /credential/);
    const leaked = east.stats().recent.filter((r) => JSON.stringify(r.headers).includes('OUTSIDE-THE-MOUNT-SECRET'));
    assert.equal(leaked.length, 0, 'the file outside the mount was sent upstream');
    assert.equal(east.stats().recent.length, 1, 'the refused candidate is never called');
    const status = await adminStatus(gw.adminUrl!);
    assert.ok(!status.text.includes('OUTSIDE-THE-MOUNT-SECRET'));
    assert.match(gw.output.join('\n'), /resolves, through a link, outside credential_mount_base/, 'the refusal is reported');
  });
});
