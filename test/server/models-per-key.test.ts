import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';

// GET /v1/models and /v1/models/{id} with keys configured: a valid key is needed, and each
// key sees only the models its team's allowed_models lets it use. An open gateway lists all.

const keyOf = (id: string): string => `sy-models-${id}-${'k'.repeat(8)}`;
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'llama-3-70b', 'claude-sonnet'];
const routes = Object.fromEntries(MODELS.map((m) => [m, { candidates: [{ provider: 'east' }] }]));

const openaiFor = (gw: GatewayProcess, key: string): OpenAI =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });

async function listedIds(client: OpenAI): Promise<string[]> {
  const ids: string[] = [];
  for await (const m of client.models.list()) ids.push(m.id);
  return ids.sort();
}

describe('the model list per key', () => {
  let east: MockProvider;
  let keyed: GatewayProcess;
  let open: GatewayProcess;

  before(async () => {
    east = await startMockProvider({ name: 'east' });
    [keyed, open] = await Promise.all([
      startGatewayProcess(
        baseConfig({ east: east.baseUrl }, routes, {
          teams: { gpts: { allowed_models: ['gpt-*'] }, llamas: { allowed_models: ['llama-*'] }, everything: {} },
          keys: [
            { id: 'gpts', team: 'gpts', sha256: hashKey(keyOf('gpts')) },
            { id: 'llamas', team: 'llamas', sha256: hashKey(keyOf('llamas')) },
            { id: 'everything', team: 'everything', sha256: hashKey(keyOf('everything')) },
            // A key with a list of its own beside one of the same team without.
            { id: 'everything-mini', team: 'everything', sha256: hashKey(keyOf('everything-mini')), allowed_models: ['*-mini'] },
          ],
        }),
      ),
      startGatewayProcess(baseConfig({ east: east.baseUrl }, routes)),
    ]);
  });

  after(async () => {
    await Promise.all([keyed?.stop(), open?.stop()]);
    await east?.close();
  });

  it("lists only the models each key's team may use", async () => {
    assert.deepEqual(await listedIds(openaiFor(keyed, keyOf('gpts'))), ['gpt-4o', 'gpt-4o-mini']);
    assert.deepEqual(await listedIds(openaiFor(keyed, keyOf('llamas'))), ['llama-3-70b']);
    assert.deepEqual(await listedIds(openaiFor(keyed, keyOf('everything'))), [...MODELS].sort());
  });

  it("lists a key's own allowed_models within its team's, apart from its team mates' lists", async () => {
    // In both orders: a list rendered for one caller of a team is never served to another with a different list.
    assert.deepEqual(await listedIds(openaiFor(keyed, keyOf('everything-mini'))), ['gpt-4o-mini']);
    assert.deepEqual(await listedIds(openaiFor(keyed, keyOf('everything'))), [...MODELS].sort());
    assert.deepEqual(await listedIds(openaiFor(keyed, keyOf('everything-mini'))), ['gpt-4o-mini']);
  });

  it('lists per key in Anthropic shape too', async () => {
    const client = new Anthropic({ baseURL: keyed.url, apiKey: keyOf('llamas'), maxRetries: 0, timeout: 10_000 });
    const page = await client.models.list();
    assert.deepEqual(
      page.data.map((m) => m.id),
      ['llama-3-70b'],
    );
  });

  it('retrieves a model the key may use, and answers 404 for one it may not, in each protocol', async () => {
    const gpts = openaiFor(keyed, keyOf('gpts'));
    assert.equal((await gpts.models.retrieve('gpt-4o')).id, 'gpt-4o');
    const refused = await gpts.models.retrieve('llama-3-70b').then(
      () => assert.fail('expected 404'),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof OpenAI.NotFoundError, String(refused));
    assert.equal(refused.code, 'model_not_found');

    const anthropic = new Anthropic({ baseURL: keyed.url, apiKey: keyOf('llamas'), maxRetries: 0, timeout: 10_000 });
    const notFound = await anthropic.models.retrieve('gpt-4o').then(
      () => assert.fail('expected 404'),
      (e: unknown) => e,
    );
    assert.ok(notFound instanceof Anthropic.NotFoundError, String(notFound));
    assert.equal((notFound.error as { error: { type: string } }).error.type, 'not_found_error');
  });

  it('answers 401 without a valid key when keys are configured', async () => {
    for (const path of ['/v1/models', '/v1/models/gpt-4o']) {
      const none = await fetch(`${keyed.url}${path}`);
      assert.equal(none.status, 401, path);
      assert.equal(((await none.json()) as { error: { code: string } }).error.code, 'unauthorized');
      const wrong = await fetch(`${keyed.url}${path}`, { headers: { authorization: 'Bearer sy-not-a-key' } });
      assert.equal(wrong.status, 401, path);
      await wrong.body?.cancel();
    }
  });

  it('an open gateway lists every model to anyone', async () => {
    assert.deepEqual(await listedIds(openaiFor(open, 'anything')), [...MODELS].sort());
    const res = await fetch(`${open.url}/v1/models/llama-3-70b`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
});
