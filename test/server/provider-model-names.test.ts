import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import { baseConfig, configText, runCli } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { candidate, envelope } from '../support/overlay.js';
import { overlayConfig, revisionOf, waitForServing } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// providers.<name>.models, through a real gateway process: a provider that serves a route's
// model under another name (a vLLM serving meta-llama/Llama-3.1-70B-Instruct for the route
// llama-3.1-70b) is sent that name, by static and overlay candidates alike, and the name is
// what the response is attributed and priced by.

const ROUTE = 'llama-3.1-70b';
const SERVED = 'meta-llama/Llama-3.1-70B-Instruct';

const resources = fileResources('switchyard-provider-model-names-');
let vllm: MockProvider;

/** The model member of the last body the mock received. */
function lastUpstreamModel(): unknown {
  const last = vllm.stats().recent.at(-1);
  assert.ok(last !== undefined, 'the mock received a request');
  return (JSON.parse(last.body) as { model?: unknown }).model;
}

function staticConfig(models: Record<string, string>): Record<string, unknown> {
  const config = baseConfig(
    { vllm: vllm.baseUrl },
    {
      [ROUTE]: { candidates: [{ provider: 'vllm' }] },
      pinned: { candidates: [{ provider: 'vllm', model: 'pinned-upstream' }] },
    },
    // Priced by the served name only: a cost header shows pricing looked the mapped name up.
    { pricing: { models: { [SERVED]: { input_usd_per_mtok: 1, output_usd_per_mtok: 1 } } } },
  );
  (config.providers as Record<string, Record<string, unknown>>).vllm!.models = { ...models, pinned: 'not-this-one' };
  return config;
}

before(async () => {
  vllm = await resources.startMock({ name: 'vllm' });
});

describe('a provider model map on static routes', () => {
  it('sends the mapped name for a candidate without model:, attributed and priced by that name', async () => {
    const gw = await resources.startGw(staticConfig({ [ROUTE]: SERVED }));
    vllm.reset();
    const r = await postChat(gw.url, chatBody(ROUTE));
    assert.equal(r.status, 200, r.text);
    assert.equal(lastUpstreamModel(), SERVED);
    assert.equal(r.headers.get('x-switchyard-model'), SERVED);
    assert.ok(r.headers.get('x-switchyard-cost-usd') !== null, 'the price keyed by the served name applies');
  });

  it("keeps a candidate's own model: over the map", async () => {
    const gw = await resources.startGw(staticConfig({ [ROUTE]: SERVED }));
    vllm.reset();
    const r = await postChat(gw.url, chatBody('pinned'));
    assert.equal(r.status, 200, r.text);
    assert.equal(lastUpstreamModel(), 'pinned-upstream');
    assert.equal(r.headers.get('x-switchyard-model'), 'pinned-upstream');
  });

  it('a reload that changes the map sends the new name from the next generation on', async () => {
    const gw = await resources.startGw(staticConfig({ [ROUTE]: SERVED }));
    gw.writeConfig(staticConfig({ [ROUTE]: 'llama-3.1-70b-awq' }));
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.status, 200, reload.text);
    assert.equal(reload.body.result, 'applied', reload.text);
    vllm.reset();
    const r = await postChat(gw.url, chatBody(ROUTE));
    assert.equal(r.status, 200, r.text);
    assert.equal(lastUpstreamModel(), 'llama-3.1-70b-awq');
  });
});

describe('a provider model map on overlay routes', () => {
  it('sends the mapped name for an overlay candidate, which names only the route model', async () => {
    const dir = resources.tempDir();
    const file = join(dir, 'overlay.json');
    const env = envelope([candidate(ROUTE, 'vllm'), candidate('unmapped', 'vllm')]);
    writeFileSync(file, JSON.stringify(env));
    const config = overlayConfig({ vllm: vllm.baseUrl }, { file });
    (config.providers as Record<string, Record<string, unknown>>).vllm!.models = { [ROUTE]: SERVED };
    const gw = await resources.startGw(config, { dir });
    await waitForServing(gw, revisionOf(env));
    vllm.reset();
    const r = await postChat(gw.url, chatBody(ROUTE));
    assert.equal(r.status, 200, r.text);
    assert.equal(lastUpstreamModel(), SERVED);
    assert.equal(r.headers.get('x-switchyard-model'), SERVED);

    const u = await postChat(gw.url, chatBody('unmapped'));
    assert.equal(u.status, 200, u.text);
    assert.equal(lastUpstreamModel(), 'unmapped', 'a route the map does not name is sent as it is');
  });
});

describe('validating a provider model map', () => {
  it('refuses a value that is not a string, naming its path', async () => {
    const config = staticConfig({});
    (config.providers as Record<string, Record<string, unknown>>).vllm!.models = { [ROUTE]: 70 };
    const file = join(resources.tempDir(), 'config.yaml');
    writeFileSync(file, configText(config));
    const out = await runCli(['validate', '--config', file]);
    assert.equal(out.code, 1, out.stdout + out.stderr);
    assert.match(out.stdout + out.stderr, /providers\.vllm\.models\.llama-3\.1-70b/);
  });
});
