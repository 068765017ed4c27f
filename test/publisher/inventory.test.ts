import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MAX_INVENTORY_BYTES, PublishError, parseInventory, readInventory } from '../../src/publisher/index.js';

const valid = `
network: prod
gateway: edge-gw
namespace: ai
local_site: east
providers:
  - cluster: east
    site: east
    region: us-east
    models: [gpt-4o-mini]
    health: { url: "http://127.0.0.1:9001/v1/models" }
`;

function refusal(text: string): PublishError {
  try {
    parseInventory(text);
  } catch (err) {
    assert.ok(err instanceof PublishError);
    return err;
  }
  assert.fail('the inventory was accepted');
}

describe('the inventory', () => {
  it('fills defaults: active, weight 1, health timings', () => {
    const inv = parseInventory(valid);
    const p = inv.providers[0];
    assert.equal(p?.state, 'active');
    assert.equal(p?.weight, 1);
    assert.deepEqual(p?.health, {
      url: 'http://127.0.0.1:9001/v1/models',
      interval_ms: 2000,
      timeout_ms: 1000,
      unhealthy_after: 2,
      healthy_after: 3,
    });
  });

  it('refuses an unknown key, naming its path', () => {
    const err = refusal(valid.replace('region: us-east', 'region: us-east\n    wieght: 3'));
    assert.equal(err.code, 'inventory_invalid');
    assert.match(err.message, /providers\[0\]\.wieght: unknown key/);
  });

  it('refuses a weight out of 1..1000 and an unknown state, naming the path', () => {
    assert.match(
      refusal(valid.replace('models:', 'weight: 0\n    models:')).message,
      /providers\[0\]\.weight: must be a whole number 1-1000/,
    );
    assert.match(refusal(valid.replace('models:', 'state: paused\n    models:')).message, /providers\[0\]\.state: must be one of/);
  });

  it('refuses a missing field, a health URL with credentials, and bad YAML', () => {
    assert.match(refusal(valid.replace('network: prod\n', '')).message, /network: required/);
    const withSecret = refusal(valid.replace('http://127.0.0.1', 'http://user:hunter2@127.0.0.1'));
    assert.match(withSecret.message, /providers\[0\]\.health\.url: must not carry credentials/);
    assert.doesNotMatch(withSecret.message, /hunter2/);
    const inQuery = refusal(valid.replace('/v1/models', '/v1/models?api_key=sk-abc'));
    assert.match(inQuery.message, /health\.url: must not carry a credential in its query/);
    assert.doesNotMatch(inQuery.message, /sk-abc/);
    assert.equal(refusal('network: [unclosed').code, 'inventory_invalid');
  });

  it('has no field for a credential value: only a reference', () => {
    const err = refusal(valid.replace('models:', 'credential: { name: c, namespace: ai, key: token, value: sk-live-abc }\n    models:'));
    assert.match(err.message, /providers\[0\]\.credential\.value: unknown key/);
    assert.doesNotMatch(err.message, /sk-live-abc/);
  });

  it('refuses one cluster and site listed twice', () => {
    const twice = `${valid}  - { cluster: east, site: east, region: us-east, models: [x] }\n`;
    assert.match(refusal(twice).message, /providers\[1\]\.cluster: repeats providers\[0\]/);
  });

  it('accepts tools beside models, or tools alone, and a name that is both a model and a tool', () => {
    const inv = parseInventory(valid.replace('models: [gpt-4o-mini]', 'models: [search]\n    tools: [search, get_weather.v2-beta]'));
    assert.deepEqual(inv.providers[0]?.tools, ['search', 'get_weather.v2-beta']);
    const toolsOnly = parseInventory(valid.replace('models: [gpt-4o-mini]', 'tools: [echo]'));
    assert.deepEqual(toolsOnly.providers[0]?.models, []);
    assert.deepEqual(toolsOnly.providers[0]?.tools, ['echo']);
    assert.deepEqual(parseInventory(valid).providers[0]?.tools, [], 'tools default to none');
  });

  it('refuses a provider with neither models nor tools, naming providers[i].models', () => {
    assert.match(
      refusal(valid.replace('    models: [gpt-4o-mini]\n', '')).message,
      /providers\[0\]\.models: must list at least one model or tool/,
    );
    assert.match(
      refusal(valid.replace('models: [gpt-4o-mini]', 'models: []\n    tools: []')).message,
      /providers\[0\]\.models: must list at least one model or tool/,
    );
  });

  it('refuses a tool name outside the MCP advised characters or over 128, naming providers[i].tools[j]', () => {
    for (const bad of ['"get weather"', '"tool/call"', '"café"', '""', `${'t'.repeat(129)}`]) {
      const err = refusal(valid.replace('models: [gpt-4o-mini]', `models: [gpt-4o-mini]\n    tools: [ok, ${bad}]`));
      assert.equal(err.code, 'inventory_invalid');
      assert.match(err.message, /providers\[0\]\.tools\[1\]: must be an MCP tool name: 1-128 of A-Z a-z 0-9 _ - \./, bad);
    }
    assert.deepEqual(parseInventory(valid.replace('models: [gpt-4o-mini]', `tools: [${'t'.repeat(128)}]`)).providers[0]?.tools, [
      't'.repeat(128),
    ]);
  });

  it('refuses a tool listed twice by one provider, as it does a model', () => {
    assert.match(
      refusal(valid.replace('models: [gpt-4o-mini]', 'tools: [echo, add, echo]')).message,
      /providers\[0\]\.tools\[2\]: listed twice/,
    );
    assert.match(refusal(valid.replace('models: [gpt-4o-mini]', 'models: [m, m]')).message, /providers\[0\]\.models\[1\]: listed twice/);
  });

  it('reports every problem of an inventory in one refusal, each at its path', () => {
    const err = refusal(
      valid
        .replace('network: prod\n', '')
        .replace('region: us-east', 'region: us-east\n    wieght: 3\n    colour: red')
        .replace('models:', 'weight: 0\n    state: paused\n    models:'),
    );
    assert.equal(err.code, 'inventory_invalid');
    assert.deepEqual(
      [...err.issues].sort((a, b) => a.path.localeCompare(b.path)),
      [
        { path: 'network', message: 'required' },
        { path: 'providers[0].colour', message: 'unknown key' },
        { path: 'providers[0].state', message: 'must be one of: active, drain, withdrawn' },
        { path: 'providers[0].weight', message: 'must be a whole number 1-1000' },
        { path: 'providers[0].wieght', message: 'unknown key' },
      ],
    );
    for (const { path } of err.issues) assert.ok(err.message.includes(`${path}: `), `the message names ${path}: ${err.message}`);
  });

  it('reads files through the bounded reader: a missing or oversized file is a coded error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-inventory-'));
    await assert.rejects(readInventory(join(dir, 'nope.yaml')), { code: 'inventory_missing' });
    writeFileSync(join(dir, 'big.yaml'), `# ${'x'.repeat(MAX_INVENTORY_BYTES)}\n`);
    await assert.rejects(readInventory(join(dir, 'big.yaml')), { code: 'inventory_too_large' });
    writeFileSync(join(dir, 'ok.yaml'), valid);
    assert.equal((await readInventory(join(dir, 'ok.yaml'))).network, 'prod');
  });
});
