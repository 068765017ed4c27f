import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { configText, type GatewayProcess, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { Collector, type OtlpSpan } from '../support/otlp.js';

// Traces (ADR 0018): a real gateway process exports OTLP/HTTP to a collector stand-in in this
// test process. The client's traceparent is continued, every upstream attempt is a child
// span that carries its own traceparent to the provider, and the spans carry the GenAI
// attributes. The collector's API key is a secret reference and never reaches the logs.

function attr(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const v = span.attributes.find((a) => a.key === key)?.value;
  if (v === undefined) return undefined;
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.stringValue ?? v.boolValue ?? v.doubleValue;
}

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;
const STATUS_ERROR = 2;
const COLLECTOR_KEY = 'otlp-secret-value-4711';

describe('OpenTelemetry traces', () => {
  let collector: Collector;
  let good: MockProvider;
  let bad: MockProvider;
  let tools: MockProvider;
  let gw: GatewayProcess;
  let openai: OpenAI;

  before(async () => {
    collector = new Collector();
    const endpoint = await collector.listen();
    good = await startMockProvider({ name: 'good' });
    bad = await startMockProvider({ name: 'bad' });
    tools = await startMockProvider({ name: 'tools', protocol: 'mcp', mcpResponse: 'json' });
    gw = await startGatewayProcess(
      {
        server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
        telemetry: { otlp: { endpoint, headers: { 'x-collector-key': { env: 'COLLECTOR_KEY' } }, service_name: 'gw-under-test' } },
        providers: {
          bad: { type: 'openai', base_url: bad.baseUrl, timeout_ms: 5000 },
          good: { type: 'anthropic', base_url: good.baseUrl, timeout_ms: 5000 },
          tools: { type: 'mcp', base_url: `${tools.origin}/mcp`, timeout_ms: 5000 },
        },
        routing: {
          routes: {
            chat: {
              candidates: [
                { provider: 'bad', model: 'gpt-4o-mini' },
                { provider: 'good', model: 'claude-haiku' },
              ],
            },
          },
          tools_from: [{ provider: 'tools' }],
        },
        pricing: { models: { 'claude-haiku': { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } } },
      },
      { env: { COLLECTOR_KEY } },
    );
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
  });

  after(async () => {
    await gw?.stop();
    await good?.close();
    await bad?.close();
    await tools?.close();
    await new Promise((r) => collector?.server.close(r));
  });

  it('traces a tools/call as an execute_tool span under the /mcp request, as the GenAI conventions name it', async () => {
    const post = (body: object, session?: string) =>
      fetch(`${gw.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(session === undefined ? {} : { 'mcp-session-id': session }),
        },
        body: JSON.stringify(body),
      });
    const init = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const session = init.headers.get('mcp-session-id') as string;
    let answered = false;
    for (let i = 0; i < 100 && !answered; i++) {
      const call = (await (
        await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } }, session)
      ).json()) as {
        result?: unknown;
      };
      answered = call.result !== undefined;
      if (!answered) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(answered, 'the tool answered');
    const tool = await collector.waitFor((s) => s.name === 'execute_tool echo');
    assert.equal(attr(tool, 'gen_ai.operation.name'), 'execute_tool');
    assert.equal(attr(tool, 'gen_ai.tool.name'), 'echo');
    assert.equal(attr(tool, 'mcp.method.name'), 'tools/call');
    assert.equal(attr(tool, 'mcp.session.id'), session);
    assert.equal(attr(tool, 'switchyard.provider'), 'tools');
    const server = await collector.waitFor((s) => s.spanId === tool.parentSpanId);
    assert.equal(server.name, 'POST /mcp');
  });

  it('continues the client trace, with one client span per upstream attempt, each propagated upstream', async () => {
    bad.addFault({ mode: 'status', status: 503, count: 1 });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpanId = '00f067aa0ba902b7';
    const completion = await openai.chat.completions.create(
      { model: 'chat', messages: [{ role: 'user', content: 'hello' }] },
      { headers: { traceparent: `00-${traceId}-${clientSpanId}-01` } },
    );
    assert.equal(completion.choices[0]?.message.content, 'Hello from good.');

    const server = await collector.waitFor((s) => s.traceId === traceId && s.kind === SPAN_KIND_SERVER);
    assert.equal(server.name, 'POST /v1/chat/completions');
    assert.equal(server.parentSpanId, clientSpanId, 'the server span continues the client span');
    assert.equal(attr(server, 'http.response.status_code'), 200);
    assert.equal(attr(server, 'gen_ai.operation.name'), 'chat');
    assert.equal(attr(server, 'gen_ai.request.model'), 'chat');
    assert.equal(attr(server, 'gen_ai.response.model'), 'claude-haiku');
    assert.equal(attr(server, 'gen_ai.provider.name'), 'anthropic');
    assert.equal(attr(server, 'gen_ai.usage.input_tokens'), completion.usage?.prompt_tokens);
    assert.equal(attr(server, 'gen_ai.usage.output_tokens'), completion.usage?.completion_tokens);
    assert.equal(attr(server, 'switchyard.generation'), 1);
    assert.equal(attr(server, 'switchyard.fallback'), true);

    const failed = await collector.waitFor(
      (s) => s.traceId === traceId && s.kind === SPAN_KIND_CLIENT && attr(s, 'switchyard.provider') === 'bad',
    );
    const served = await collector.waitFor(
      (s) => s.traceId === traceId && s.kind === SPAN_KIND_CLIENT && attr(s, 'switchyard.provider') === 'good',
    );
    for (const span of [failed, served]) assert.equal(span.parentSpanId, server.spanId, `${span.name} is a child of the request`);
    assert.equal(failed.name, 'chat gpt-4o-mini');
    assert.equal(failed.status?.code, STATUS_ERROR);
    assert.equal(attr(failed, 'error.type'), 'status_5xx');
    assert.equal(attr(failed, 'gen_ai.provider.name'), 'openai');
    assert.equal(served.name, 'chat claude-haiku');
    assert.notEqual(served.status?.code, STATUS_ERROR);
    assert.equal(attr(served, 'gen_ai.request.model'), 'claude-haiku');
    assert.equal(attr(served, 'gen_ai.usage.output_tokens'), completion.usage?.completion_tokens);
    assert.equal(attr(served, 'server.address'), '127.0.0.1');
    assert.equal(attr(served, 'server.port'), good.port);

    // Each provider saw the traceparent of its own attempt's span.
    const sentTo = (m: MockProvider) => m.stats().recent.at(-1)?.headers.traceparent;
    assert.equal(sentTo(bad), `00-${traceId}-${failed.spanId}-01`);
    assert.equal(sentTo(good), `00-${traceId}-${served.spanId}-01`);
  });

  it('starts a new trace without a traceparent, names an unknown path by its method alone, and exports with the resolved header', async () => {
    const res = await fetch(`${gw.url}/v1/no/such/path`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 404);
    const span = await collector.waitFor((s) => s.kind === SPAN_KIND_SERVER && attr(s, 'url.path') === '/v1/no/such/path');
    assert.equal(span.name, 'POST');
    assert.equal(span.parentSpanId ?? '', '');
    assert.equal(attr(span, 'http.response.status_code'), 404);
    assert.notEqual(span.status?.code, STATUS_ERROR, 'a 4xx is the client’s error, not the server span’s');
    assert.ok(collector.headers.every((h) => h['x-collector-key'] === COLLECTOR_KEY));
    const service = collector.resources[0]?.find((a) => a.key === 'service.name')?.value.stringValue;
    assert.equal(service, 'gw-under-test');
  });

  it('never writes the collector key to its logs', async () => {
    await gw.stop();
    assert.ok(!gw.output.join('\n').includes(COLLECTOR_KEY));
  });
});

describe('trace context with tracing off', () => {
  let mock: MockProvider;
  let gw: GatewayProcess;

  before(async () => {
    mock = await startMockProvider({ name: 'm' });
    gw = await startGatewayProcess({
      server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
      providers: { m: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000 } },
      routing: { routes: { chat: { candidates: [{ provider: 'm' }] } } },
    });
  });

  after(async () => {
    await gw?.stop();
    await mock?.close();
  });

  const send = (headers: Record<string, string>) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
    }).then((r) => r.text());

  it('passes a well-formed traceparent and tracestate to the provider unchanged', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await send({ traceparent, tracestate: 'vendor=opaque' });
    const seen = mock.stats().recent.at(-1)?.headers;
    assert.equal(seen?.traceparent, traceparent);
    assert.equal(seen?.tracestate, 'vendor=opaque');
  });

  it('drops a malformed traceparent rather than passing junk upstream', async () => {
    await send({ traceparent: 'not-a-trace', tracestate: 'vendor=opaque' });
    const seen = mock.stats().recent.at(-1)?.headers;
    assert.equal(seen?.traceparent, undefined);
    assert.equal(seen?.tracestate, undefined);
  });
});

describe('telemetry config', () => {
  it('validate names a collector header whose secret is missing, and a bad endpoint, by path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-telemetry-'));
    try {
      const file = join(dir, 'config.yaml');
      const config = (otlp: Record<string, unknown>) =>
        configText({
          telemetry: { otlp },
          providers: { m: { type: 'openai', base_url: 'http://127.0.0.1:9/v1' } },
          routing: { routes: { chat: { candidates: [{ provider: 'm' }] } } },
        });
      writeFileSync(file, config({ endpoint: 'http://127.0.0.1:4318/v1/traces', headers: { 'x-api-key': { env: 'NO_SUCH_OTLP_KEY' } } }));
      const missing = await runCli(['validate', '--config', file], { ...process.env, NO_SUCH_OTLP_KEY: '' });
      assert.equal(missing.code, 1);
      assert.match(missing.stderr + missing.stdout, /telemetry\.otlp\.headers\.x-api-key/);
      writeFileSync(file, config({ endpoint: 'ftp://collector/v1/traces' }));
      const bad = await runCli(['validate', '--config', file]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr + bad.stdout, /telemetry\.otlp\.endpoint/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
