import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload, adminStatus, adminStatusBody } from '../support/admin.js';
import { baseConfig } from '../support/gateway-process.js';
import { candidate } from '../support/overlay.js';
import { overlayConfig } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// The admin listener of a real gateway process: a non-loopback listener keeps requiring its
// token across reloads, and /admin/status counts models whatever their names.

const resources = fileResources('switchyard-admin-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('a non-loopback admin listener keeps its token across reloads', () => {
  it('a reload that drops server.admin_token is rejected at server.admin_token, and the admin API still answers 401 without the token', async () => {
    const dir = resources.tempDir();
    const tokenFile = join(dir, 'admin-token');
    const token = 's3cret-admin-token-for-review';
    writeFileSync(tokenFile, `${token}\n`);
    const routes = { m: { candidates: [{ provider: 'east' }] } };
    const withToken = baseConfig({ east: east.baseUrl }, routes, {
      server: { admin_listen: '0.0.0.0:0', admin_token: { file: tokenFile } },
    });
    const withoutToken = baseConfig({ east: east.baseUrl }, routes, { server: { admin_listen: '0.0.0.0:0' } });
    const gw = await resources.startGw(withToken, { dir });
    // Bound on every interface; talk to it over loopback.
    const admin = `http://127.0.0.1:${new URL(gw.adminUrl!).port}`;
    assert.equal((await adminStatus(admin)).status, 401, 'the token is required before the reload');

    gw.writeConfig(withoutToken);
    const reload = await adminReload(admin, token);
    assert.equal(reload.status, 422, reload.text);
    assert.equal(reload.body.result, 'rejected', reload.text);
    assert.ok(
      reload.body.errors.some((e) => e.path === 'server.admin_token'),
      `an error at server.admin_token: ${reload.text}`,
    );

    assert.equal((await adminStatus(admin)).status, 401, 'GET /admin/status without the token after the reload');
    assert.equal((await adminReload(admin)).status, 401, 'POST /admin/reload without the token after the reload');
    const status = await adminStatus(admin, token);
    assert.equal(status.status, 200, status.text);
    assert.equal(status.body.generation?.number, 1, 'the serving generation is kept');
    // HTTP auth schemes are case-insensitive (RFC 9110 11.1): "bearer" was once refused.
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const r = await fetch(`${admin}/admin/status`, { headers: { authorization: `${scheme} ${token}` } });
      assert.equal(r.status, 200, `scheme "${scheme}"`);
    }
    const wrong = await fetch(`${admin}/admin/status`, { headers: { authorization: `Basic ${token}` } });
    assert.equal(wrong.status, 401, 'another scheme is still refused');
  });
});

// ---------------------------------------------------------------------------------------

describe('/admin/status with model names that are Object.prototype keys', () => {
  it('/admin/status counts candidates per model correctly for models named constructor and toString', async () => {
    const dir = resources.tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(
      file,
      JSON.stringify({
        local_site: 'east',
        candidates: [
          candidate('constructor', 'east'),
          candidate('toString', 'east'),
          candidate('toString', 'west'),
          candidate('m', 'east'),
        ],
      }),
    );
    const west = await resources.startMock({ name: 'west' });
    const gw = await resources.startGw(overlayConfig({ east: east.baseUrl, west: west.baseUrl }, { file, reload: { enabled: false } }), {
      dir,
    });
    const status = await adminStatusBody(gw);
    assert.deepEqual(status.overlay?.candidates_per_model, { constructor: 1, toString: 2, m: 1 });
  });
});
