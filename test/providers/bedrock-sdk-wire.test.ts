import assert from 'node:assert/strict';
import { createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BedrockRuntimeClient, ConverseCommand, type ConverseCommandInput, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import {
  anthropicRequestToCanonical,
  canonicalToBedrockRequest,
  openaiRequestToCanonical,
  readBedrockAnswer,
  StreamTranslator,
  translateErrorResponse,
} from '../../src/providers/index.js';
import { bedrockEventFrame } from '../support/bedrock-frames.js';

// The AWS SDK as the authority on Converse's wire: the body the Bedrock writer makes must be
// the body the SDK sends for the same input, since the SDK serialises only the fields of the
// service model (a field it does not know is left out, and the bodies then differ). Served
// over loopback HTTP/2 (the Bedrock Runtime client speaks HTTP/2), the SDK's request is read
// off the wire; the server's error answer is Bedrock's, so the SDK's reading of it can be
// set beside the gateway's.

let server: Http2Server;
let seen: { path: string; body: string } | null = null;
let answer = { status: 400, type: 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/', body: '{"message":"nope"}' };
/** When set, the server answers with this ConverseStream body instead. */
let stream: Buffer | null = null;

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen = { path: req.url, body: Buffer.concat(chunks).toString('utf8') };
      if (stream !== null) {
        res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
        res.end(stream);
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', 'x-amzn-errortype': answer.type });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

after(() => {
  server.close();
});

function client(): BedrockRuntimeClient {
  const { port } = server.address() as AddressInfo;
  return new BedrockRuntimeClient({
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${port}`,
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-a-secret' },
    maxAttempts: 1,
  });
}

/** The writer's body as the SDK's input: blobs are bytes there, base64 on the wire. */
function sdkInput(modelId: string, body: Record<string, unknown>): ConverseCommandInput {
  const revive = (value: unknown, key: string): unknown => {
    if (key === 'bytes' && typeof value === 'string') return Buffer.from(value, 'base64');
    if (Array.isArray(value)) return value.map((v) => revive(v, ''));
    if (typeof value === 'object' && value !== null && key !== 'json' && key !== 'input' && key !== 'additionalModelRequestFields')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v, k)]));
    return value;
  };
  return { modelId, ...(revive(body, '') as object) } as ConverseCommandInput;
}

/** What the SDK sent for `input`, read off the wire (its call fails on the server's error answer, as intended). */
async function sent(input: ConverseCommandInput): Promise<{ path: string; body: unknown; error: unknown }> {
  seen = null;
  const c = client();
  let error: unknown = null;
  try {
    await c.send(new ConverseCommand(input));
  } catch (err) {
    error = err;
  } finally {
    c.destroy();
  }
  assert.ok(seen !== null, 'the SDK reached the server');
  const { path, body } = seen as { path: string; body: string };
  return { path, body: JSON.parse(body), error };
}

const PNG = Buffer.from('not really a png').toString('base64');

describe('the Bedrock writer against the AWS SDK', { timeout: 20_000 }, () => {
  it("writes an Anthropic client's request as the SDK sends it: every field known to the service model", async () => {
    const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
    const read = anthropicRequestToCanonical({
      model,
      max_tokens: 3000,
      system: [{ type: 'text', text: 'Be exact.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      top_k: 4,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      stop_sequences: ['END'],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            { type: 'text', text: 'What is this?', cache_control: { type: 'ephemeral' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'look', input: { zoom: 2 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: 'blurry' }] },
      ],
      tools: [
        {
          name: 'look',
          description: 'Look closer',
          input_schema: { type: 'object', properties: { zoom: { type: 'number' } } },
          strict: true,
        },
      ],
      tool_choice: { type: 'any' },
    });
    assert.ok(read.ok);
    const written = canonicalToBedrockRequest(read.value, { client: 'anthropic' });
    assert.ok(written.ok);
    const wire = await sent(sdkInput(model, written.value.body));
    assert.equal(wire.path, `/model/${encodeURIComponent(model)}/converse`);
    assert.deepEqual(wire.body, written.value.body);
  });

  it("writes an OpenAI client's structured output and tools as the SDK sends them", async () => {
    const model = 'amazon.nova-pro-v1:0';
    const read = openaiRequestToCanonical({
      model,
      messages: [
        { role: 'system', content: 'JSON only.' },
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/webp;base64,${PNG}` } },
            { type: 'text', text: 'Describe' },
          ],
        },
      ],
      max_tokens: 100,
      temperature: 0.2,
      top_p: 0.8,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      response_format: { type: 'json_schema', json_schema: { name: 'out', description: 'The answer', schema: { type: 'object' } } },
    });
    assert.ok(read.ok);
    const written = canonicalToBedrockRequest(read.value, { client: 'openai' });
    assert.ok(written.ok);
    const wire = await sent(sdkInput(model, written.value.body));
    assert.deepEqual(wire.body, written.value.body);
  });

  it("reads Bedrock's error answer as the SDK does: its type from x-amzn-errortype, its message from the body", async () => {
    answer = {
      status: 400,
      type: 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/',
      body: '{"message":"Input is too long for requested model."}',
    };
    const { error } = await sent({ modelId: 'm', messages: [{ role: 'user', content: [{ text: 'x' }] }] });
    assert.equal((error as { name?: string }).name, 'ValidationException');
    assert.equal((error as Error).message, 'Input is too long for requested model.');
    const verdict = readBedrockAnswer(400, answer.body, (name) => (name === 'x-amzn-errortype' ? answer.type : undefined));
    assert.equal(verdict.answerClass, 'context_length');
    assert.equal(JSON.parse(translateErrorResponse(400, answer.body, 'bedrock', 'openai').body).error.message, (error as Error).message);
  });

  it('decodes a ConverseStream as the SDK does: the same text, tool call, stop reason and usage', async () => {
    const frame = bedrockEventFrame;
    stream = Buffer.concat([
      frame('messageStart', { role: 'assistant' }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Let me look.' } }),
      frame('contentBlockStop', { contentBlockIndex: 0 }),
      frame('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_a', name: 'look' } } }),
      frame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"zoom":' } } }),
      frame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '3}' } } }),
      frame('contentBlockStop', { contentBlockIndex: 1 }),
      frame('messageStop', { stopReason: 'tool_use' }),
      frame('metadata', { usage: { inputTokens: 11, outputTokens: 6, totalTokens: 17 }, metrics: { latencyMs: 30 } }),
    ]);
    const c = client();
    const events: Record<string, unknown>[] = [];
    try {
      const out = await c.send(new ConverseStreamCommand({ modelId: 'm', messages: [{ role: 'user', content: [{ text: 'x' }] }] }));
      for await (const e of out.stream ?? []) events.push(e as unknown as Record<string, unknown>);
    } finally {
      c.destroy();
      const body = stream;
      stream = null;
      const t = new StreamTranslator({ from: 'bedrock', to: 'openai', includeUsage: true });
      const text = t.push(body) + t.end();
      assert.ok(t.complete);
      assert.deepEqual(t.usage, { inputTokens: 11, outputTokens: 6 });
      assert.match(text, /"content":"Let me look\."/);
      assert.match(text, /"id":"tooluse_a","type":"function","function":\{"name":"look"/);
      assert.match(text, /"finish_reason":"tool_calls"/);
    }
    const sdk = (name: string) => events.filter((e) => e[name] !== undefined).map((e) => e[name]);
    assert.deepEqual(sdk('contentBlockStart'), [{ contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_a', name: 'look' } } }]);
    assert.deepEqual(
      sdk('contentBlockDelta').map((d) => (d as { delta: unknown }).delta),
      [{ text: 'Let me look.' }, { toolUse: { input: '{"zoom":' } }, { toolUse: { input: '3}' } }],
    );
    assert.deepEqual(sdk('messageStop'), [{ stopReason: 'tool_use' }]);
    assert.deepEqual((sdk('metadata')[0] as { usage: unknown }).usage, { inputTokens: 11, outputTokens: 6, totalTokens: 17 });
  });
});
