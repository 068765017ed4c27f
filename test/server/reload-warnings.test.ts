import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adminReload } from '../support/admin.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';

// A setting that has no effect is accepted and reported: the reload applies, and its
// result (as the admin API returns it and the log line records it) carries the warning.

describe('reload warnings', () => {
  it('a reload that adds a weight under round_robin is applied, with the ignored weight in its warnings', async () => {
    const gw = await startGatewayProcess(baseConfig({ east: 'http://127.0.0.1:9/v1' }, { m: { candidates: [{ provider: 'east' }] } }));
    try {
      gw.writeConfig(
        baseConfig({ east: 'http://127.0.0.1:9/v1' }, { m: { policy: 'round_robin', candidates: [{ provider: 'east', weight: 5 }] } }),
      );
      const r = await adminReload(gw.adminUrl!);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.result, 'applied', r.text);
      const expected = 'routing.routes.m.candidates[0].weight: ignored: policy "round_robin" does not use weights (only "weighted" does)';
      assert.deepEqual(r.body.warnings, [expected]);
      const line = await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'admin');
      assert.deepEqual(line.warnings, [expected]);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });
});
