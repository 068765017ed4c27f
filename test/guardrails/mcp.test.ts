import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { catalogsListed, mcpProvider } from '../support/mcp.js';

// `mcp.guardrails` through a real gateway and the official MCP client: arguments checked
// before the server is called, results checked (and masked) before the client gets them.

const EMAIL = 'grace@example.com';
const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';

let tools: MockProvider;
let gw: GatewayProcess;
let client: Client;

before(async () => {
  tools = await startMockProvider({ name: 'tools', port: 0, protocol: 'mcp' });
  gw = await startGatewayProcess({
    server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    providers: { tools: mcpProvider(tools) },
    guardrails: {
      secrets: { type: 'secrets', action: 'block' },
      pii: { type: 'pii', action: 'mask' },
      pii_restore: { type: 'pii', entities: ['phone'], action: 'mask', restore: true },
    },
    routing: { routes: {}, tools: { echo: { candidates: [{ provider: 'tools' }] } } },
    mcp: { catalog_recheck_ms: 0, guardrails: { arguments: ['secrets', 'pii_restore'], results: ['pii'] } },
  });
  await catalogsListed(gw, 1);
  client = new Client({ name: 'guardrails-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', gw.url)));
});

after(async () => {
  await client?.close();
  await gw?.stop();
  await tools?.close();
});

describe('guardrails on tool calls', { timeout: 30_000 }, () => {
  it('a result carrying an address is masked before the client sees it', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: `write to ${EMAIL}` } });
    const text = (result.content as Array<{ type: string; text: string }>)[0]?.text ?? '';
    assert.ok(!text.includes(EMAIL), 'the address never reaches the client');
    assert.match(text, /write to <EMAIL_1>/);
    assert.notEqual(result.isError, true);
  });

  it('arguments that carry a secret are blocked with an isError result, and the server is never called', async () => {
    const before = tools.mcpStats().calls.echo ?? 0;
    const result = await client.callTool({ name: 'echo', arguments: { text: `use ${AWS_KEY}` } });
    assert.equal(result.isError, true);
    const text = (result.content as Array<{ type: string; text: string }>)[0]?.text ?? '';
    assert.match(text, /guardrail secrets \(aws_access_key\)/);
    assert.ok(!text.includes(AWS_KEY));
    assert.equal(tools.mcpStats().calls.echo ?? 0, before, 'the MCP server was not called');
  });

  it('a phone number masked in the arguments is restored in the result the tool echoes', async () => {
    const before = tools.stats().recent.length;
    const result = await client.callTool({ name: 'echo', arguments: { text: 'call +1 415 555 2671' } });
    const text = (result.content as Array<{ type: string; text: string }>)[0]?.text ?? '';
    assert.match(text, /call \+1 415 555 2671/);
    const sent = tools
      .stats()
      .recent.slice(before)
      .map((r) => r.body)
      .join('\n');
    assert.ok(!sent.includes('555 2671'), 'the server saw the placeholder');
    assert.match(sent, /<PHONE_1>/);
  });
});
