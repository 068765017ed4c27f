import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// Invariant "spend never exceeds a limit": a reservation is a worst case only if the answer
// cannot run past it. When a budget, tpm or daily quota applies and the request sets no
// output cap, the gateway sends the cap it reserved (governance.cap_output, default on), in
// the field of the operation and the provider's protocol; a request's own cap, and a caller
// under no limit, are left as they are.

const resources = fileResources('switchyard-output-cap-');
const RESERVED = 300;
let mock: MockProvider;
let capping: GatewayProcess;
let uncapped: GatewayProcess;

function config(capOutput: boolean): Record<string, unknown> {
  const config = baseConfig(
    { east: mock.baseUrl },
    {
      m: { candidates: [{ provider: 'east', model: 'gpt-4o-mini' }] },
      claude: { candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
    },
    {
      governance: { default_max_tokens: RESERVED, cap_output: capOutput },
      teams: { limited: { budget: { usd_per_month: 1000 } }, minute: { rate_limit: { tpm: 200 } }, open: {} },
      keys: [
        { id: 'limited', team: 'limited', sha256: hashKey('limited-key') },
        { id: 'minute', team: 'minute', sha256: hashKey('minute-key') },
        { id: 'open', team: 'open', sha256: hashKey('open-key') },
      ],
    },
  );
  (config.providers as Record<string, unknown>).anth = { type: 'anthropic', base_url: mock.baseUrl, timeout_ms: 5000 };
  return config;
}

before(async () => {
  mock = await resources.startMock({ name: 'east' });
  capping = await resources.startGw(config(true));
  uncapped = await resources.startGw(config(false));
});

after(async () => {
  await capping?.stop();
  await uncapped?.stop();
});

const client = (gw: GatewayProcess, key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
const messages = [{ role: 'user' as const, content: 'cap me' }];

/** The JSON body the mock received last on `path`. */
function lastBody(path: string): Record<string, unknown> {
  const seen = mock
    .stats()
    .recent.filter((r) => r.path === path)
    .at(-1);
  assert.ok(seen !== undefined, `the mock saw no ${path}`);
  return JSON.parse(seen.body) as Record<string, unknown>;
}

describe('governance.cap_output', () => {
  it('a chat request with no cap, under a budget, reaches the provider with max_completion_tokens set to what was reserved', async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'm', messages });
    const body = lastBody('/v1/chat/completions');
    assert.equal(body.max_completion_tokens, RESERVED);
    assert.equal(body.max_tokens, undefined);
    assert.deepEqual(body.messages, messages, 'the rest of the body is the client’s');
  });

  it('under a tpm below default_max_tokens, the cap sent is what the limit holds beside the input', async () => {
    await client(capping, 'minute-key').chat.completions.create({ model: 'm', messages });
    const cap = lastBody('/v1/chat/completions').max_completion_tokens as number;
    assert.ok(cap > 0 && cap < 200, `cap ${cap}`);
  });

  it("a request's own cap is kept, and nothing is added", async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'm', messages, max_tokens: 50 });
    const body = lastBody('/v1/chat/completions');
    assert.equal(body.max_tokens, 50);
    assert.equal(body.max_completion_tokens, undefined);
  });

  it('a caller under no limit has nothing added', async () => {
    await client(capping, 'open-key').chat.completions.create({ model: 'm', messages });
    assert.equal(lastBody('/v1/chat/completions').max_completion_tokens, undefined);
  });

  it('completions get max_tokens and responses max_output_tokens', async () => {
    await client(capping, 'limited-key').completions.create({ model: 'm', prompt: 'cap me' });
    assert.equal(lastBody('/v1/completions').max_tokens, RESERVED);
    await client(capping, 'limited-key').responses.create({ model: 'm', input: 'cap me' });
    assert.equal(lastBody('/v1/responses').max_output_tokens, RESERVED);
  });

  it('an OpenAI request translated for an Anthropic provider carries the reserved cap as max_tokens', async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'claude', messages });
    assert.equal(lastBody('/v1/messages').max_tokens, RESERVED);
  });

  it('with cap_output: false nothing is added, and a translation still sends the reserved default', async () => {
    await client(uncapped, 'limited-key').chat.completions.create({ model: 'm', messages });
    assert.equal(lastBody('/v1/chat/completions').max_completion_tokens, undefined);
    await client(uncapped, 'limited-key').chat.completions.create({ model: 'claude', messages });
    assert.equal(lastBody('/v1/messages').max_tokens, RESERVED);
  });
});
