import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// The official openai client sends OpenAI-Beta, OpenAI-Organization and OpenAI-Project: they
// pick an API version and the account a call is billed to, so a real gateway process passes
// them on to OpenAI-speaking providers, lets a provider's own configured header win, keeps
// them from Anthropic, and passes no other client header.

const resources = fileResources('switchyard-openai-client-headers-');
let upstream: MockProvider;
let gw: GatewayProcess;
let client: OpenAI;

const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'which account is this?' }];

/** The headers of the one request the mock received for `model`. */
async function upstreamHeaders(model: string): Promise<IncomingHttpHeaders> {
  upstream.reset();
  const completion = await client.chat.completions.create({ model, messages });
  assert.equal(completion.object, 'chat.completion');
  const recent = upstream.stats().recent;
  assert.equal(recent.length, 1, 'one upstream call');
  return recent[0]!.headers;
}

before(async () => {
  upstream = await resources.startMock({ name: 'upstream' });
  gw = await resources.startGw({
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
    providers: {
      oai: { type: 'openai', base_url: upstream.baseUrl, timeout_ms: 5000 },
      azure: { type: 'azure_openai', base_url: upstream.origin, api_version: '2024-10-21', timeout_ms: 5000 },
      configured: { type: 'openai', base_url: upstream.baseUrl, timeout_ms: 5000, headers: { 'OpenAI-Organization': 'org-config' } },
      anth: { type: 'anthropic', base_url: upstream.baseUrl, timeout_ms: 5000 },
    },
    routing: {
      routes: {
        'gpt-4o-mini': { candidates: [{ provider: 'oai' }] },
        'azure-gpt': { candidates: [{ provider: 'azure', deployment: 'gpt4o-deploy' }] },
        'configured-gpt': { candidates: [{ provider: 'configured', model: 'gpt-4o-mini' }] },
        claude: { candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
      },
    },
  });
  client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'client-key-not-for-upstream',
    organization: 'org-client',
    project: 'proj-client',
    defaultHeaders: { 'OpenAI-Beta': 'assistants=v2', 'X-Client-Note': 'stays-at-the-gateway' },
    maxRetries: 0,
    timeout: 10_000,
  });
});

describe("the openai client's OpenAI-* headers", () => {
  it('reach an openai provider as the client sent them, and no other client header does', async () => {
    const h = await upstreamHeaders('gpt-4o-mini');
    assert.equal(h['openai-beta'], 'assistants=v2');
    assert.equal(h['openai-organization'], 'org-client');
    assert.equal(h['openai-project'], 'proj-client');
    assert.equal(h['x-client-note'], undefined, 'a client header outside the allow-list is not forwarded');
    assert.equal(h.authorization, undefined, "the client's key is not forwarded to a provider without api_key");
    assert.equal(h['x-stainless-lang'], undefined, "the SDK's own telemetry headers are not forwarded");
  });

  it('reach an azure_openai provider', async () => {
    const h = await upstreamHeaders('azure-gpt');
    assert.equal(h['openai-beta'], 'assistants=v2');
    assert.equal(h['openai-organization'], 'org-client');
    assert.equal(h['openai-project'], 'proj-client');
  });

  it("lose to the same header set in the provider's config, while the others still pass", async () => {
    const h = await upstreamHeaders('configured-gpt');
    assert.equal(h['openai-organization'], 'org-config');
    assert.equal(h['openai-project'], 'proj-client');
    assert.equal(h['openai-beta'], 'assistants=v2');
  });

  it('never reach an anthropic provider', async () => {
    const h = await upstreamHeaders('claude');
    assert.ok(h['anthropic-version'] !== undefined, 'the call did go to the anthropic provider');
    assert.equal(h['openai-beta'], undefined);
    assert.equal(h['openai-organization'], undefined);
    assert.equal(h['openai-project'], undefined);
  });
});
