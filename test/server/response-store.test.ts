import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { newId } from '../../src/responses/index.js';
import { StartupError, startGateway } from '../../src/server/index.js';
import { createLogger } from '../../src/telemetry/index.js';
import { baseConfig, configText } from '../support/gateway-process.js';

// The composition root builds the response store from routing.responses once, at start:
// the backend it names, on the gateway's own database; a reload applies the bounds and
// keeps the backend, with a warning that changing it takes a restart.

function gatewayConfig(extra: Record<string, unknown>, responses: Record<string, unknown> = {}): Record<string, unknown> {
  const config = baseConfig({ east: 'http://127.0.0.1:9/v1' }, { m: { candidates: [{ provider: 'east' }] } }, extra);
  (config.routing as Record<string, unknown>).responses = responses;
  return config;
}

describe('the gateway builds its response store', () => {
  it('a config without routing.responses.store keeps responses in memory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-respstore-'));
    const configPath = join(dir, 'gateway.yaml');
    writeFileSync(configPath, configText(gatewayConfig({})));
    const gateway = await startGateway({ configPath, logger: createLogger({ level: 'silent' }), env: {} });
    try {
      assert.equal(gateway.services.responseStore.kind, 'memory');
    } finally {
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('store: database writes through the gateway database, and a reload to memory keeps it with a restart warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-respstore-'));
    const configPath = join(dir, 'gateway.yaml');
    const database = { url: `sqlite:${join(dir, 'gateway.db')}` };
    writeFileSync(configPath, configText(gatewayConfig({ database }, { store: 'database' })));
    const gateway = await startGateway({ configPath, logger: createLogger({ level: 'silent' }), env: {} });
    try {
      const store = gateway.services.responseStore;
      assert.equal(store.kind, 'database');
      const conv = newId('conv');
      await store.createConversation({ id: conv, team: null, createdAt: Math.floor(Date.now() / 1000), metadata: {} }, []);
      assert.ok(await store.getConversation(conv));

      writeFileSync(configPath, configText(gatewayConfig({ database }, { store: 'memory' })));
      const reload = await gateway.reload('admin');
      assert.equal(reload.result, 'applied', JSON.stringify(reload));
      assert.ok(
        reload.warnings?.some((w) => w.startsWith('routing.responses.store: changed, but takes effect only after a restart')),
        JSON.stringify(reload.warnings),
      );
      assert.equal(gateway.services.responseStore, store, 'the running store is kept');
      assert.ok(await store.getConversation(conv));
    } finally {
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('store: redis without a redis governance store, or database without database.url, is refused naming the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-respstore-'));
    const configPath = join(dir, 'gateway.yaml');
    try {
      for (const store of ['redis', 'database']) {
        writeFileSync(configPath, configText(gatewayConfig({}, { store })));
        await assert.rejects(
          startGateway({ configPath, logger: createLogger({ level: 'silent' }), env: {} }),
          (err: unknown) => err instanceof StartupError && err.issues.some((i) => i.path === 'routing.responses.store'),
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
