import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { openaiSchema } from '../support/openai-schema.js';
import { FIXTURE_ENV, GREETING, keyOf, ROUTES, type RouteKind, responsesConfig, startMocks } from './fixture.js';

// MCP tools run by the gateway for a Responses request: `{type: "mcp", server_label:
// "switchyard"}` offers the caller's tool routes to the model, and each call the model makes
// runs through the gateway's own /mcp, against `mock-provider --protocol mcp`, until the
// model answers. The official `openai` client, a real gateway process, real mocks.

let mocks: Record<RouteKind, MockProvider>;
let tools: MockProvider;
let gw: GatewayProcess;
const schema = openaiSchema();

type Item = Record<string, unknown> & { type: string };

const client = (key = 'alpha1') => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: keyOf(key), maxRetries: 0, timeout: 20_000 });
const gatewayTools = (extra: Record<string, unknown> = {}) => [{ type: 'mcp', server_label: 'switchyard', ...extra }] as never;

/** The tool names an mcp_list_tools item lists. */
function namesOf(item: Item | undefined): string[] {
  assert.ok(item !== undefined && Array.isArray(item.tools), `an mcp_list_tools item: ${JSON.stringify(item)}`);
  return (item.tools as Array<{ name: string }>).map((t) => t.name);
}

function valid(response: unknown): void {
  if (schema !== null) assert.deepEqual(schema.validate('Response', response), [], "a Response against OpenAI's schema");
}

describe("the gateway's own MCP tools in the Responses API", () => {
  before(async () => {
    mocks = await startMocks();
    tools = await startMockProvider({ name: 'tools-up', protocol: 'mcp', mcpTools: ['echo', 'weather', 'fail'] });
    const config = responsesConfig(mocks);
    (config.providers as Record<string, unknown>).toolbox = { type: 'mcp', base_url: `${tools.origin}/mcp`, timeout_ms: 5000 };
    const routing = config.routing as Record<string, unknown>;
    routing.tools = Object.fromEntries(['echo', 'weather', 'fail'].map((t) => [t, { candidates: [{ provider: 'toolbox' }] }]));
    config.teams = { alpha: {}, beta: {}, narrow: { allowed_tools: ['echo'] } };
    config.keys = [...(config.keys as object[]), { id: 'narrow1', team: 'narrow', sha256: hashKey(keyOf('narrow1')) }];
    config.mcp = { catalog_recheck_ms: 0 };
    gw = await startGatewayProcess(config, { env: FIXTURE_ENV });
    // The tool routes serve once the server's catalog has been listed: wait for all three.
    const mcp = new Client({ name: 'readiness', version: '1' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${keyOf('alpha1')}` } },
      }),
    );
    try {
      for (let i = 0; ; i += 1) {
        const names = (await mcp.listTools()).tools.map((t) => t.name);
        if (['echo', 'weather', 'fail'].every((t) => names.includes(t))) break;
        if (i > 100) throw new Error(`the gateway never listed the mock's tools: ${names.join(', ')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await mcp.close();
    }
  });
  after(async () => {
    await gw?.stop();
    await tools?.close();
    if (mocks !== undefined) await Promise.all(Object.values(mocks).map((m) => m.close()));
  });
  beforeEach(() => tools.reset());

  it('runs two tool calls, then answers; the output lists the tools and each call by its exposed name', async () => {
    const res = await client().responses.create({
      model: ROUTES.anthropic,
      input: 'Use the echo tool, then the weather tool.',
      tools: gatewayTools({ require_approval: 'never' }),
    });
    valid(res);
    const output = res.output as unknown as Item[];
    assert.deepEqual(
      output.map((o) => o.type),
      ['mcp_list_tools', 'mcp_call', 'mcp_call', 'message'],
    );
    const listed = namesOf(output[0]).sort();
    assert.deepEqual(listed, ['echo', 'fail', 'weather']);
    assert.equal(output[1]?.name, 'echo');
    assert.equal(output[2]?.name, 'weather');
    assert.match(String(output[1]?.output), /\[tools-up\]/);
    assert.match(res.output_text, new RegExp(`^${GREETING.anthropic.replace('.', '\\.')} The tool said:`));
    assert.deepEqual(tools.mcpStats().calls, { echo: 1, weather: 1 });
    // The turn is stored and can be continued like any other, on another provider.
    const next = await client().responses.create({ model: ROUTES.gemini, previous_response_id: res.id, input: 'Thanks.' });
    assert.equal(next.output_text, GREETING.gemini);
  });

  it('streams the listing, each call and the answer as events, valid against the schema', async () => {
    const stream = await client().responses.create({
      model: ROUTES.anthropic,
      input: 'Use the echo tool please.',
      tools: gatewayTools({ require_approval: 'never' }),
      stream: true,
    });
    const events: Array<Record<string, unknown> & { type: string }> = [];
    for await (const e of stream) events.push(e as never);
    if (schema !== null) assert.deepEqual(schema.validateResponsesStream(events.map((e) => ({ event: e.type, data: e }))), []);
    const types = events.map((e) => e.type);
    for (const t of [
      'response.created',
      'response.mcp_list_tools.completed',
      'response.mcp_call.completed',
      'response.output_text.delta',
    ]) {
      assert.ok(types.includes(t), `${t} in ${types.join(', ')}`);
    }
    assert.ok(types.indexOf('response.mcp_call.completed') < types.indexOf('response.output_text.delta'));
    // The answer streams as the provider streams it, not as one piece at the end.
    assert.ok(types.filter((t) => t === 'response.output_text.delta').length >= 2, types.join(', '));
    assert.equal(types.at(-1), 'response.completed');
    const completed = events.at(-1)?.response as { output: Array<{ type: string }> };
    assert.deepEqual(
      completed.output.map((o) => o.type),
      ['mcp_list_tools', 'mcp_call', 'message'],
    );
  });

  it('waits for approval by default, and runs the call when the next request approves it', async () => {
    const first = await client().responses.create({ model: ROUTES.anthropic, input: 'Use the weather tool.', tools: gatewayTools() });
    valid(first);
    const ask = (first.output as unknown as Item[]).find((o) => o.type === 'mcp_approval_request');
    assert.ok(ask !== undefined, JSON.stringify(first.output));
    assert.equal(ask.name, 'weather');
    assert.deepEqual(tools.mcpStats().calls, {}, 'nothing ran before the approval');
    const second = await client().responses.create({
      model: ROUTES.anthropic,
      previous_response_id: first.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: ask.id as string, approve: true }],
      tools: gatewayTools(),
    });
    valid(second);
    const call = (second.output as unknown as Item[]).find((o) => o.type === 'mcp_call');
    assert.equal(call?.approval_request_id, ask.id);
    assert.equal(call?.status, 'completed');
    assert.match(second.output_text, /The tool said:/);
    assert.deepEqual(tools.mcpStats().calls, { weather: 1 });
  });

  it('a tool the key may not use is neither listed nor called', async () => {
    const res = await client('narrow1').responses.create({
      model: ROUTES.anthropic,
      input: 'Use the weather tool.',
      tools: gatewayTools({ require_approval: 'never' }),
    });
    const output = res.output as unknown as Item[];
    const listed = namesOf(output.find((o) => o.type === 'mcp_list_tools'));
    assert.deepEqual(listed, ['echo']);
    assert.equal(tools.mcpStats().calls.weather, undefined);
    assert.ok(output.filter((o) => o.type === 'mcp_call').every((o) => o.name === 'echo'));
  });

  it('allowed_tools narrows what the model is offered', async () => {
    const res = await client().responses.create({
      model: ROUTES.anthropic,
      input: 'hello',
      tools: gatewayTools({ require_approval: 'never', allowed_tools: ['fail'] }),
    });
    const listed = namesOf((res.output as unknown as Item[])[0]);
    assert.deepEqual(listed, ['fail']);
  });

  it("a failing tool's error is the call's, and the model is told of it", async () => {
    const res = await client().responses.create({
      model: ROUTES.anthropic,
      input: 'Use the fail tool.',
      tools: gatewayTools({ require_approval: 'never' }),
    });
    valid(res);
    const call = (res.output as unknown as Item[]).find((o) => o.type === 'mcp_call');
    assert.equal(call?.status, 'failed');
    assert.equal((call?.error as { type: string } | undefined)?.type, 'mcp_tool_execution_error');
    assert.match(res.output_text, /The tool said: error:/);
  });
});
