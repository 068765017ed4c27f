import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { resolve } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { ConverseStreamOutput, Message } from '@aws-sdk/client-bedrock-runtime';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  ServiceUnavailableException,
  ThrottlingException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

// The mock's Bedrock Runtime Converse API, with AWS's own SDK as its client (over HTTP/2,
// the SDK's default toward an http:// endpoint) and with hand-signed HTTP/1.1 requests: if
// the SDK reads every answer, error and stream exception as it reads AWS's, and refuses
// nothing the mock accepts, the mock is a faithful stand-in for the gateway's tests.

const AKID = 'AKIAMOCKBEDROCK00001';
const SECRET = 'mock/secret+key/0123456789abcdefghijklmn';
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const REPLY = 'Hello from br.';

let mock: MockProvider;
let client: BedrockRuntimeClient;

function clientWith(accessKeyId: string, secretAccessKey: string): BedrockRuntimeClient {
  return new BedrockRuntimeClient({
    region: 'us-east-1',
    endpoint: mock.origin,
    credentials: { accessKeyId, secretAccessKey },
    maxAttempts: 1,
  });
}

const user = (text: string): Message => ({ role: 'user', content: [{ text }] });

const weather = {
  toolSpec: {
    name: 'get_weather',
    description: 'Current weather',
    inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  },
};

before(async () => {
  mock = await startMockProvider({ name: 'br', protocol: 'bedrock', awsAccessKeyId: AKID, awsSecretAccessKey: SECRET });
  client = clientWith(AKID, SECRET);
});
after(async () => {
  client.destroy();
  await mock.close();
});
beforeEach(() => mock.reset());

async function collect(stream: AsyncIterable<ConverseStreamOutput> | undefined): Promise<ConverseStreamOutput[]> {
  const events: ConverseStreamOutput[] = [];
  for await (const event of stream ?? []) events.push(event);
  return events;
}

describe('the mock Bedrock Converse API, through @aws-sdk/client-bedrock-runtime', () => {
  it('answers Converse with text, end_turn, usage and metrics, over HTTP/2, for a model id with a colon', async () => {
    const res = await client.send(new ConverseCommand({ modelId: MODEL, messages: [user('Hi there')] }));
    assert.deepEqual(res.output?.message?.content, [{ text: REPLY }]);
    assert.equal(res.output?.message?.role, 'assistant');
    assert.equal(res.stopReason, 'end_turn');
    const usage = res.usage;
    assert.ok(usage?.inputTokens !== undefined && usage.outputTokens !== undefined);
    assert.equal(usage.inputTokens, 2);
    assert.equal(usage.outputTokens, 4);
    assert.equal(usage.totalTokens, 6);
    assert.equal(usage.cacheReadInputTokens, undefined);
    assert.equal(typeof res.metrics?.latencyMs, 'number');
    const seen = mock.stats().recent.at(-1);
    assert.equal(seen?.httpVersion, '2.0', 'the SDK spoke HTTP/2 (h2c) to the mock');
    assert.equal(seen?.path, '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse');
    assert.equal(res.$metadata.httpStatusCode, 200);
    assert.match(
      String(seen?.headers.authorization),
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${AKID}/\\d{8}/us-east-1/bedrock/aws4_request`),
    );
  });

  it('calls a tool when asked to use one (toolUse, stopReason tool_use), then answers its result', async () => {
    const toolConfig = { tools: [weather] };
    const first = await client.send(new ConverseCommand({ modelId: MODEL, messages: [user('Use the tool for Oslo')], toolConfig }));
    assert.equal(first.stopReason, 'tool_use');
    const call = first.output?.message?.content?.[0]?.toolUse;
    assert.equal(call?.name, 'get_weather');
    assert.match(call?.toolUseId ?? '', /^tooluse_/);
    assert.equal(typeof (call?.input as { city?: unknown } | undefined)?.city, 'string');
    const second = await client.send(
      new ConverseCommand({
        modelId: MODEL,
        toolConfig,
        messages: [
          user('Use the tool for Oslo'),
          { role: 'assistant', content: [{ toolUse: { toolUseId: call?.toolUseId, name: 'get_weather', input: call?.input } }] },
          { role: 'user', content: [{ toolResult: { toolUseId: call?.toolUseId, content: [{ text: 'sunny, 21C' }] } }] },
        ],
      }),
    );
    assert.equal(second.stopReason, 'end_turn');
    assert.deepEqual(second.output?.message?.content, [{ text: `${REPLY} The tool said: sunny, 21C` }]);
  });

  it('forces the tool named by toolChoice, and calls none with no tools offered', async () => {
    const other = { toolSpec: { name: 'other', inputSchema: { json: { type: 'object' } } } };
    const forced = await client.send(
      new ConverseCommand({
        modelId: MODEL,
        messages: [user('hello')],
        toolConfig: { tools: [other, weather], toolChoice: { tool: { name: 'get_weather' } } },
      }),
    );
    assert.equal(forced.output?.message?.content?.[0]?.toolUse?.name, 'get_weather');
    const plain = await client.send(new ConverseCommand({ modelId: MODEL, messages: [user('use a tool')] }));
    assert.equal(plain.stopReason, 'end_turn');
  });

  it('takes an image as bytes and bills it at a flat 1600 tokens', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    const res = await client.send(
      new ConverseCommand({
        modelId: MODEL,
        messages: [{ role: 'user', content: [{ text: 'What is this?' }, { image: { format: 'png', source: { bytes: png } } }] }],
      }),
    );
    assert.equal(res.stopReason, 'end_turn');
    // 'What is this?' is 13 characters: ceil(13 / 4 + 1600).
    assert.equal(res.usage?.inputTokens, 1604);
    const sent = JSON.parse(mock.stats().recent.at(-1)?.body ?? '{}') as {
      messages: Array<{ content: Array<{ image?: { source: { bytes: string } } }> }>;
    };
    assert.equal(sent.messages[0]?.content[1]?.image?.source.bytes, Buffer.from(png).toString('base64'));
  });

  it('writes the prefix before a cachePoint on first sight and reads it on a repeat, with exact token counts', async () => {
    const system = [{ text: 's'.repeat(400) }, { cachePoint: { type: 'default' as const } }];
    const ask = () => client.send(new ConverseCommand({ modelId: MODEL, system, messages: [user('hi')] }));
    // 400 + 2 characters: 101 tokens, 100 of them the cached system prompt.
    const first = await ask();
    assert.deepEqual(
      { ...first.usage },
      { inputTokens: 1, outputTokens: 4, totalTokens: 105, cacheReadInputTokens: 0, cacheWriteInputTokens: 100 },
    );
    const second = await ask();
    assert.deepEqual(
      { ...second.usage },
      { inputTokens: 1, outputTokens: 4, totalTokens: 105, cacheReadInputTokens: 100, cacheWriteInputTokens: 0 },
    );
  });

  it('stops at maxTokens (max_tokens) and before a stop sequence (stop_sequence)', async () => {
    const short = await client.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')], inferenceConfig: { maxTokens: 1 } }));
    assert.equal(short.stopReason, 'max_tokens');
    assert.deepEqual(short.output?.message?.content, [{ text: 'Hell' }]);
    assert.equal(short.usage?.outputTokens, 1);
    const stopped = await client.send(
      new ConverseCommand({ modelId: MODEL, messages: [user('hi')], inferenceConfig: { stopSequences: ['from'] } }),
    );
    assert.equal(stopped.stopReason, 'stop_sequence');
    assert.deepEqual(stopped.output?.message?.content, [{ text: 'Hello ' }]);
  });

  it('answers outputConfig json_schema with JSON valid for the schema', async () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, temp: { type: 'integer', minimum: 5 } },
      required: ['city', 'temp'],
    };
    const res = await client.send(
      new ConverseCommand({
        modelId: MODEL,
        messages: [user('weather?')],
        outputConfig: { textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify(schema), name: 'w' } } } },
      }),
    );
    const value = JSON.parse(res.output?.message?.content?.[0]?.text ?? '') as { city: unknown; temp: number };
    assert.equal(typeof value.city, 'string');
    assert.ok(Number.isInteger(value.temp) && value.temp >= 5);
  });

  it('streams with ConverseStream: messageStart, text deltas that join to the reply, stop, metadata usage', async () => {
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [user('Hi')] }));
    const events = await collect(res.stream);
    assert.deepEqual(events[0], { messageStart: { role: 'assistant' } });
    const text = events.map((e) => e.contentBlockDelta?.delta?.text ?? '').join('');
    assert.equal(text, REPLY);
    assert.equal(events.filter((e) => e.contentBlockDelta !== undefined).length, 5);
    assert.ok(events.some((e) => e.contentBlockStop?.contentBlockIndex === 0));
    assert.equal(events.find((e) => e.messageStop !== undefined)?.messageStop?.stopReason, 'end_turn');
    const meta = events.at(-1)?.metadata;
    assert.deepEqual({ ...meta?.usage }, { inputTokens: 1, outputTokens: 4, totalTokens: 5 });
    assert.equal(typeof meta?.metrics?.latencyMs, 'number');
    assert.equal(mock.stats().recent.at(-1)?.path, '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream');
  });

  it('streams a tool call: contentBlockStart with its id and name, input deltas that join to JSON, tool_use', async () => {
    const res = await client.send(
      new ConverseStreamCommand({ modelId: MODEL, messages: [user('use the tool')], toolConfig: { tools: [weather] } }),
    );
    const events = await collect(res.stream);
    const start = events.find((e) => e.contentBlockStart !== undefined)?.contentBlockStart;
    assert.equal(start?.contentBlockIndex, 0);
    assert.equal(start?.start?.toolUse?.name, 'get_weather');
    assert.match(start?.start?.toolUse?.toolUseId ?? '', /^tooluse_/);
    const input = events.map((e) => e.contentBlockDelta?.delta?.toolUse?.input ?? '').join('');
    assert.equal(typeof (JSON.parse(input) as { city: unknown }).city, 'string');
    assert.equal(events.find((e) => e.messageStop !== undefined)?.messageStop?.stopReason, 'tool_use');
    assert.ok((events.at(-1)?.metadata?.usage?.outputTokens ?? 0) > 0);
  });
});

describe('the mock Bedrock API refuses what AWS refuses, in AWS shapes', () => {
  it('a wrong secret is the SDK InvalidSignatureException; an unknown key id its UnrecognizedClientException', async () => {
    const wrong = clientWith(AKID, 'not-the-secret');
    await assert.rejects(
      wrong.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] })),
      (err: Error & { $metadata?: { httpStatusCode?: number } }) => {
        assert.equal(err.name, 'InvalidSignatureException');
        assert.equal(err.$metadata?.httpStatusCode, 403);
        assert.match(err.message, /signature we calculated does not match/);
        return true;
      },
    );
    wrong.destroy();
    const stranger = clientWith('AKIAUNKNOWN000000000', SECRET);
    await assert.rejects(stranger.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] })), (err: Error) => {
      assert.equal(err.name, 'UnrecognizedClientException');
      assert.equal(err.message, 'The security token included in the request is invalid.');
      return true;
    });
    stranger.destroy();
  });

  it('a 429 status fault is the SDK ThrottlingException, a 503 its ServiceUnavailableException', async () => {
    mock.addFault({ mode: 'status', status: 429, count: 1 });
    mock.addFault({ mode: 'status', status: 503, count: 1 });
    await assert.rejects(client.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] })), ThrottlingException);
    await assert.rejects(client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [user('hi')] })), ServiceUnavailableException);
  });

  it('a stream_exception fault puts the exception inside the 200 stream, and the SDK stream throws its type', async () => {
    mock.addFault({ mode: 'stream_exception', exception: 'throttlingException', after_chunks: 2, count: 1 });
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [user('hi')] }));
    assert.equal(res.$metadata.httpStatusCode, 200);
    const seen: ConverseStreamOutput[] = [];
    await assert.rejects(
      (async () => {
        for await (const event of res.stream ?? []) seen.push(event);
      })(),
      ThrottlingException,
    );
    assert.equal(seen.filter((e) => e.contentBlockDelta !== undefined).length, 2);
  });

  it('a cut_stream fault cuts the HTTP/2 stream after that many deltas, which still arrive', async () => {
    mock.addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
    const res = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [user('hi')] }));
    const seen: ConverseStreamOutput[] = [];
    await assert.rejects(
      (async () => {
        for await (const event of res.stream ?? []) seen.push(event);
      })(),
      /NGHTTP2_INTERNAL_ERROR/,
    );
    assert.equal(seen.filter((e) => e.contentBlockDelta !== undefined).length, 2);
    assert.equal(mock.stats().aborted, 0, 'a cut on purpose is not a client abort');
  });

  it('a close fault drops the HTTP/2 connection without answering, and it is not counted as a client abort', async () => {
    mock.addFault({ mode: 'close', count: 1 });
    await assert.rejects(client.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] })));
    assert.equal(mock.stats().aborted, 0);
    const res = await client.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] }));
    assert.equal(res.stopReason, 'end_turn', 'the next request is answered on a new connection');
  });

  it('a prompt over 200000 tokens is a ValidationException: Input is too long', async () => {
    await assert.rejects(
      client.send(new ConverseCommand({ modelId: MODEL, messages: [user('x'.repeat(800_004))] })),
      (err: Error) => err instanceof ValidationException && err.message === 'Input is too long for requested model.',
    );
  });
});

interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

interface SignOptions {
  secret?: string;
  /** Send these bytes instead of the signed ones. */
  sendBody?: string;
  signingDate?: Date;
  sessionToken?: string;
  /** Add the session token after signing, so it is not covered. */
  unsignedToken?: string;
  /** false: no x-amz-content-sha256, so only the signature covers the body. */
  applyChecksum?: boolean;
  /** Sign for this service instead of bedrock. */
  service?: string;
  /** Send to this path instead of the signed one. */
  sendPath?: string;
  /** Change the signed headers before sending. */
  tamper?: (headers: Record<string, string>) => void;
}

/** An HTTP/1.1 POST signed as the AWS SDK signs it (the path already percent-encoded, encoded again in the signature). */
async function signedPost(path: string, body: string, opts: SignOptions = {}): Promise<RawReply> {
  const host = `127.0.0.1:${mock.port}`;
  const signer = new SignatureV4({
    service: opts.service ?? 'bedrock',
    region: 'eu-west-3',
    credentials: {
      accessKeyId: AKID,
      secretAccessKey: opts.secret ?? SECRET,
      ...(opts.sessionToken ? { sessionToken: opts.sessionToken } : {}),
    },
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: opts.applyChecksum ?? true,
  });
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: 'http:',
      hostname: '127.0.0.1',
      port: mock.port,
      path,
      query: {},
      headers: { host, 'content-type': 'application/json' },
      body,
    },
    opts.signingDate ? { signingDate: opts.signingDate } : {},
  );
  const headers: Record<string, string> = { ...(signed.headers as Record<string, string>) };
  if (opts.unsignedToken !== undefined) headers['x-amz-security-token'] = opts.unsignedToken;
  opts.tamper?.(headers);
  const sent = Buffer.from(opts.sendBody ?? body);
  headers['content-length'] = String(sent.length);
  return new Promise((resolveReply, reject) => {
    const to = opts.sendPath ?? path;
    const req = httpRequest({ host: '127.0.0.1', port: mock.port, method: 'POST', path: to, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolveReply({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(sent);
  });
}

const converseBody = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }] });
const conversePath = '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse';

function errorOf(reply: RawReply): { type: string; message: string } {
  const type = String(reply.headers['x-amzn-errortype']).split(':')[0] ?? '';
  return { type, message: (JSON.parse(reply.body.toString('utf8')) as { message: string }).message };
}

describe('the mock Bedrock API over HTTP/1.1, signed by hand with SignatureV4', () => {
  it('reaches the same handler as HTTP/2, and names its error type in x-amzn-errortype', async () => {
    const reply = await signedPost(conversePath, converseBody);
    assert.equal(reply.status, 200, reply.body.toString());
    const body = JSON.parse(reply.body.toString()) as { output: { message: { content: unknown } }; stopReason: string };
    assert.deepEqual(body.output.message.content, [{ text: REPLY }]);
    assert.equal(mock.stats().recent.at(-1)?.httpVersion, '1.1');
    assert.equal(reply.headers['x-mock-model'], MODEL, 'the percent-encoded model id is decoded');
    const blank = await signedPost('/model/%20/converse', converseBody);
    assert.equal(blank.status, 400);
    assert.deepEqual(errorOf(blank), { type: 'ValidationException', message: 'The provided model identifier is invalid.' });
    assert.match(String(reply.headers['x-amzn-requestid']), /^[0-9a-f-]{36}$/);

    mock.addFault({ mode: 'status', status: 500, count: 1 });
    const failed = await signedPost(conversePath, converseBody);
    assert.equal(failed.status, 500);
    assert.equal(failed.headers['x-amzn-errortype'], 'InternalServerException:http://internal.amazon.com/coral/com.amazon.bedrock/');
    assert.deepEqual(errorOf(failed), { type: 'InternalServerException', message: 'Mock fault: HTTP 500.' });
  });

  it('refuses a body other than the one signed, with or without x-amz-content-sha256', async () => {
    const other = converseBody.replace('hi', 'ho');
    for (const applyChecksum of [true, false]) {
      const reply = await signedPost(conversePath, converseBody, { sendBody: other, applyChecksum });
      assert.equal(reply.status, 403);
      assert.equal(errorOf(reply).type, 'InvalidSignatureException');
    }
    assert.equal((await signedPost(conversePath, converseBody, { applyChecksum: false })).status, 200);
  });

  it('refuses a signed header, path or scope changed after signing, and a scope for another service', async () => {
    const refused = async (opts: SignOptions, status = 403, type = 'InvalidSignatureException'): Promise<void> => {
      const reply = await signedPost(conversePath, converseBody, opts);
      assert.equal(reply.status, status, reply.body.toString());
      assert.equal(errorOf(reply).type, type);
    };
    await refused({ tamper: (h) => (h['content-type'] = 'application/json; charset=utf-8') });
    await refused({ tamper: (h) => (h.host = `localhost:${mock.port}`) });
    await refused({ tamper: (h) => delete h['content-type'] });
    await refused({ tamper: (h) => (h['x-amz-date'] = String(h['x-amz-date']).replace(/\dZ$/, (d) => `${(Number(d[0]) + 1) % 10}Z`)) });
    await refused({ sendPath: conversePath.replace('%3A0', '%3A1') });
    await refused({ tamper: (h) => (h.authorization = String(h.authorization).replace('/eu-west-3/', '/us-east-1/')) });
    await refused({ tamper: (h) => (h.authorization = String(h.authorization).replace('SignedHeaders=', 'SignedHeaders=x-extra;')) });
    await refused({ service: 'bedrock-runtime' });
    await refused({ tamper: (h) => delete h['x-amz-date'] }, 400, 'IncompleteSignatureException');
    await refused(
      { tamper: (h) => (h.authorization = String(h.authorization).replace(/, Signature=.*$/, '')) },
      400,
      'IncompleteSignatureException',
    );
    // Any region is served, as long as the signature is for the region its scope names.
    assert.equal((await signedPost(conversePath, converseBody, {})).status, 200);
  });

  it('refuses a signature more than 5 minutes old as expired', async () => {
    const reply = await signedPost(conversePath, converseBody, { signingDate: new Date(Date.now() - 10 * 60_000) });
    assert.equal(reply.status, 403);
    const { type, message } = errorOf(reply);
    assert.equal(type, 'InvalidSignatureException');
    assert.match(message, /^Signature expired: \d{8}T\d{6}Z is now earlier than \d{8}T\d{6}Z/);
  });

  it('accepts any session token that is signed, and refuses one that is not', async () => {
    assert.equal((await signedPost(conversePath, converseBody, { sessionToken: 'any-session-token' })).status, 200);
    const unsigned = await signedPost(conversePath, converseBody, { unsignedToken: 'any-session-token' });
    assert.equal(unsigned.status, 403);
    assert.equal(errorOf(unsigned).type, 'InvalidSignatureException');
  });

  it('answers a malformed body with a ValidationException, and an unsigned request with 403', async () => {
    const bad = await signedPost(conversePath, '{"messages": [');
    assert.equal(bad.status, 400);
    assert.equal(errorOf(bad).type, 'ValidationException');
    const empty = await signedPost(conversePath, '{"messages": []}');
    assert.equal(errorOf(empty).type, 'ValidationException');
    const unsigned = await fetch(`${mock.origin}${conversePath}`, { method: 'POST', body: converseBody });
    assert.equal(unsigned.status, 403);
    assert.equal(unsigned.headers.get('x-amzn-errortype')?.split(':')[0], 'MissingAuthenticationTokenException');
  });

  it('frames converse-stream as AWS event-stream messages with JSON payloads', async () => {
    const reply = await signedPost(conversePath.replace(/converse$/, 'converse-stream'), converseBody);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'application/vnd.amazon.eventstream');
    const codec = new EventStreamCodec(
      (b) => Buffer.from(b).toString('utf8'),
      (s) => Buffer.from(s, 'utf8'),
    );
    const types: string[] = [];
    // Each message opens with its total length (4 bytes, big-endian); the codec decodes one at a time.
    for (let at = 0, n = 0; at < reply.body.length && n < 100; n++) {
      const length = reply.body.readUInt32BE(at);
      const message = codec.decode(reply.body.subarray(at, at + length));
      at += length;
      assert.equal(message.headers[':message-type']?.value, 'event');
      assert.equal(message.headers[':content-type']?.value, 'application/json');
      types.push(String(message.headers[':event-type']?.value));
      assert.equal(typeof (JSON.parse(Buffer.from(message.body).toString()) as { p: unknown }).p, 'string');
    }
    assert.deepEqual(types, ['messageStart', ...Array<string>(5).fill('contentBlockDelta'), 'contentBlockStop', 'messageStop', 'metadata']);
  });
});

describe('the mock Bedrock options and CLI flags', () => {
  it('protocol bedrock without a key pair is refused at start', () => {
    assert.throws(() => startMockProvider({ name: 'x', protocol: 'bedrock' }), /awsAccessKeyId is required with protocol bedrock/);
    assert.throws(
      () => startMockProvider({ name: 'x', awsAccessKeyId: AKID, awsSecretAccessKey: SECRET }),
      /only applies with protocol bedrock/,
    );
  });

  it('switchyard mock-provider --protocol bedrock --aws-access-key-id --aws-secret-access-key serves signed Converse', async () => {
    const cli = resolve(import.meta.dirname, '../../src/cli.ts');
    const args = ['--import', 'tsx', cli, 'mock-provider', '--port', '0', '--name', 'cli', '--protocol', 'bedrock'];
    const refused = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let refusal = '';
    refused.stderr.on('data', (c: Buffer) => (refusal += c.toString()));
    assert.notEqual(await new Promise((r) => refused.once('exit', r)), 0);
    assert.match(refusal, /--protocol bedrock requires --aws-access-key-id and --aws-secret-access-key/);

    const child = spawn(process.execPath, [...args, '--aws-access-key-id', AKID, '--aws-secret-access-key', SECRET], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      const origin = await new Promise<string>((res, rej) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          // What a bedrock provider's base_url takes: the bare origin, never .../v1.
          const m = /listening on (http:\/\/127\.0\.0\.1:\d+) \(base_url for a bedrock provider\)/.exec(out);
          if (m !== null) res(m[1] as string);
        });
        void exited.then((code) => rej(new Error(`mock-provider exited (${code}) before listening:\n${out}`)));
      });
      const cliClient = new BedrockRuntimeClient({
        region: 'us-west-2',
        endpoint: origin,
        credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
        maxAttempts: 1,
      });
      const res = await cliClient.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] }));
      cliClient.destroy();
      assert.deepEqual(res.output?.message?.content, [{ text: 'Hello from cli.' }]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      clearTimeout(killer);
      assert.equal(code, 0, 'mock-provider did not exit 0 on SIGTERM');
    }
  });
});

describe('the mock Bedrock listener', () => {
  it('counts HTTP/2 and HTTP/1.1 connections alike, and close() ends a hanging HTTP/2 request', async () => {
    const own = await startMockProvider({ name: 'h2', protocol: 'bedrock', awsAccessKeyId: AKID, awsSecretAccessKey: SECRET });
    const c = new BedrockRuntimeClient({
      region: 'us-east-1',
      endpoint: own.origin,
      credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
      maxAttempts: 1,
    });
    try {
      await c.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] }));
      const before = own.stats().connections;
      assert.ok(before >= 1);
      const plain = await fetch(`${own.origin}/__mock/stats`);
      assert.equal(plain.status, 200, 'the control API answers over HTTP/1.1 too');
      await plain.arrayBuffer();
      assert.equal(own.stats().connections, before + 1);
      own.addFault({ mode: 'hang' });
      const hanging = c.send(new ConverseCommand({ modelId: MODEL, messages: [user('hi')] }));
      for (let i = 0; i < 200 && own.stats().total < 2; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(own.stats().total, 2);
      await own.close();
      await assert.rejects(hanging);
    } finally {
      c.destroy();
      await own.close();
    }
  });
});
