import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { baseConfig, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';

// SWITCHYARD_RANDOM_SEED, the testing aid: two gateways with the same seed make the same
// weighted choices, request for request; an invalid seed stops serve at start-up.

const names = ['a', 'b', 'c'] as const;
let mocks: MockProvider[];
let dir: string;

function config(): Record<string, unknown> {
  return baseConfig(Object.fromEntries(names.map((n, i) => [n, mocks[i]!.baseUrl])), {
    m: { policy: 'weighted', candidates: names.map((n, i) => ({ provider: n, model: 'm', weight: i + 1 })) },
  });
}

async function choices(seed: string, n: number): Promise<string[]> {
  const gw = await startGatewayProcess(config(), { env: { SWITCHYARD_RANDOM_SEED: seed } });
  try {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await postChat(gw.url, chatBody('m'));
      assert.equal(r.status, 200, r.text);
      out.push(r.headers.get('x-switchyard-provider') ?? '(none)');
    }
    return out;
  } finally {
    await gw.stop();
  }
}

describe('SWITCHYARD_RANDOM_SEED', () => {
  before(async () => {
    mocks = await Promise.all(names.map((name) => startMockProvider({ name })));
    dir = mkdtempSync(join(tmpdir(), 'switchyard-seed-'));
  });
  after(async () => {
    await Promise.all((mocks ?? []).map((m) => m.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('two gateways with the same seed make the same weighted choices, in order', async () => {
    const first = await choices('12345', 40);
    assert.deepEqual(await choices('12345', 40), first);
    assert.ok(new Set(first).size > 1, 'the choices are still spread by weight');
  });

  it('an invalid seed stops serve at start-up, naming the variable', async () => {
    const path = join(dir, 'gateway.yaml');
    writeFileSync(path, stringify(config()));
    const r = await runCli(['serve', '--config', path], { SWITCHYARD_RANDOM_SEED: 'not-a-number' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /SWITCHYARD_RANDOM_SEED: must be a whole number/);
  });
});
