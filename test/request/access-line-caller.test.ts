import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { mcpProvider } from '../support/mcp.js';
import { fileResources } from '../support/resources.js';

// Each access line names its caller when keys are configured: the team and the key's id
// (never its secret), on a served request, a refusal after authentication (429), and a
// tools/call; a 401 has no caller to name, and an open gateway's lines name none.

const resources = fileResources('switchyard-access-caller-');
const KEY = 'sy-access-caller-key-of-team-platform-00';
const auth = { authorization: `Bearer ${KEY}` };

let east: MockProvider;
let tools: MockProvider;
let gw: GatewayProcess;
before(async () => {
  [east, tools] = await Promise.all([
    resources.startMock({ name: 'east' }),
    resources.startMock({ name: 'tools', protocol: 'mcp', mcpResponse: 'json' }),
  ]);
  const config = baseConfig(
    { east: east.baseUrl },
    { m: { candidates: [{ provider: 'east' }] } },
    {
      teams: { platform: { rate_limit: { rpm: 2 } } },
      keys: [{ id: 'platform-a', team: 'platform', key: { env: 'KEY_A' } }],
    },
  );
  (config.providers as Record<string, unknown>).tools = mcpProvider(tools);
  (config.routing as Record<string, unknown>).tools = { echo: { candidates: [{ provider: 'tools' }] } };
  gw = await resources.startGw(config, { env: { KEY_A: KEY } });
});

const lineOf = (requestId: string) => gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);

describe('the access line names its caller', () => {
  it('a served request, a 429 and a tools/call carry team and key (the id); a 401 carries neither; no line holds the secret', async () => {
    const served = await postChat(gw.url, chatBody('m'), { ...auth, 'x-request-id': 'caller-served' });
    assert.equal(served.status, 200);
    const line = await lineOf('caller-served');
    assert.deepEqual([line.status, line.team, line.key], [200, 'platform', 'platform-a']);

    const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url), {
      requestInit: { headers: { ...auth, 'x-request-id': 'caller-tool' } },
    });
    const client = new Client({ name: 'access-caller-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    } finally {
      await client.close();
    }
    const tool = await gw.waitForLog((l) => l.msg === 'request' && l.mcp_method === 'tools/call');
    assert.deepEqual([tool.tool, tool.team, tool.key], ['echo', 'platform', 'platform-a']);

    // rpm 2: the served request was the first, this one the second, the next is refused.
    assert.equal((await postChat(gw.url, chatBody('m'), auth)).status, 200);
    const limited = await postChat(gw.url, chatBody('m'), { ...auth, 'x-request-id': 'caller-429' });
    assert.equal(limited.status, 429);
    const refused = await lineOf('caller-429');
    assert.deepEqual([refused.status, refused.team, refused.key], [429, 'platform', 'platform-a']);

    const unknown = await postChat(gw.url, chatBody('m'), {
      authorization: 'Bearer sy-not-a-key-of-anyone-000000000000',
      'x-request-id': 'caller-401',
    });
    assert.equal(unknown.status, 401);
    const anonymous = await lineOf('caller-401');
    assert.equal(anonymous.status, 401);
    assert.ok(!('team' in anonymous) && !('key' in anonymous), JSON.stringify(anonymous));

    for (const l of gw.logs()) assert.ok(!JSON.stringify(l).includes(KEY), 'a line holds the key secret');
  });

  it('an open gateway (no keys) names no caller', async () => {
    const open = await resources.startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    assert.equal((await postChat(open.url, chatBody('m'), { 'x-request-id': 'caller-open' })).status, 200);
    const line = await open.waitForLog((l) => l.msg === 'request' && l.request_id === 'caller-open');
    assert.ok(!('team' in line) && !('key' in line), JSON.stringify(line));
  });
});
