import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount } from '../support/observe.js';

// A table of malformed requests against a real gateway process. Each one must get its status
// and an OpenAI-shaped error body, must never reach the provider, and must leave the gateway
// serving.

const MAX_BODY_BYTES = 1024;

let mock: MockProvider;
let gw: GatewayProcess;

interface Raw {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

interface Row {
  readonly name: string;
  readonly method?: string;
  readonly path?: string;
  readonly body?: string;
  readonly status: number;
  readonly code: string;
  readonly param?: string | null;
}

const good = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'hello there' }],
  ...extra,
});

const rows: readonly Row[] = [
  { name: 'invalid JSON', body: '{"model": "gpt-4o-mini", "messages": [', status: 400, code: 'invalid_json', param: null },
  { name: 'an empty body', body: '', status: 400, code: 'invalid_json', param: null },
  { name: 'a JSON array body', body: JSON.stringify([good()]), status: 400, code: 'invalid_request', param: null },
  { name: 'a JSON string body', body: '"gpt-4o-mini"', status: 400, code: 'invalid_request', param: null },
  { name: 'a JSON null body', body: 'null', status: 400, code: 'invalid_request', param: null },
  { name: 'a missing model', body: JSON.stringify({ messages: good().messages }), status: 400, code: 'invalid_request', param: 'model' },
  { name: 'a model that is not a string', body: JSON.stringify(good({ model: 42 })), status: 400, code: 'invalid_request', param: 'model' },
  { name: 'an empty model', body: JSON.stringify(good({ model: '' })), status: 400, code: 'invalid_request', param: 'model' },
  { name: 'missing messages', body: JSON.stringify({ model: 'gpt-4o-mini' }), status: 400, code: 'invalid_request', param: 'messages' },
  {
    name: 'messages that are not an array',
    body: JSON.stringify(good({ messages: 'hello' })),
    status: 400,
    code: 'invalid_request',
    param: 'messages',
  },
  {
    name: 'an empty messages array',
    body: JSON.stringify(good({ messages: [] })),
    status: 400,
    code: 'invalid_request',
    param: 'messages',
  },
  {
    name: 'a message without a role',
    body: JSON.stringify(good({ messages: [{ content: 'hi' }] })),
    status: 400,
    code: 'invalid_request',
    param: 'messages[0]',
  },
  {
    name: 'a later message that is not an object',
    body: JSON.stringify(good({ messages: [{ role: 'user', content: 'hi' }, 'oops'] })),
    status: 400,
    code: 'invalid_request',
    param: 'messages[1]',
  },
  {
    name: 'stream that is not a boolean',
    body: JSON.stringify(good({ stream: 'yes' })),
    status: 400,
    code: 'invalid_request',
    param: 'stream',
  },
  {
    name: 'an unknown model',
    body: JSON.stringify(good({ model: 'no-such-model' })),
    status: 404,
    code: 'model_not_found',
    param: 'model',
  },
  { name: 'GET on /v1/chat/completions', method: 'GET', status: 405, code: 'method_not_allowed', param: null },
  {
    name: 'PUT on /v1/chat/completions',
    method: 'PUT',
    body: JSON.stringify(good()),
    status: 405,
    code: 'method_not_allowed',
    param: null,
  },
  { name: 'POST on /v1/models', method: 'POST', path: '/v1/models', body: '{}', status: 405, code: 'method_not_allowed', param: null },
  { name: 'an unknown path', method: 'GET', path: '/v1/nothing-here', status: 404, code: 'not_found', param: null },
  {
    name: 'an unknown path under POST',
    path: '/v2/chat/completions',
    body: JSON.stringify(good()),
    status: 404,
    code: 'not_found',
    param: null,
  },
];

/** One request on its own connection, with full control of the body and its framing. */
function send(options: { method?: string; path?: string; body?: string; headers?: Record<string, string> }): Promise<Raw> {
  const url = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: options.method ?? 'POST',
        path: options.path ?? '/v1/chat/completions',
        agent: false,
        headers: options.headers,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) {
      req.setHeader('content-type', 'application/json');
      req.setHeader('content-length', Buffer.byteLength(options.body));
      req.end(options.body);
    } else {
      req.end();
    }
  });
}

/**
 * Sends only part of a body, never ending the request, and resolves with the response: a
 * 413 must come from the limit alone, not from reading the whole body first.
 */
function sendPartial(headers: Record<string, string>, chunk: string): Promise<Raw> {
  const url = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method: 'POST', path: '/v1/chat/completions', agent: false, headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
          req.destroy();
        });
      },
    );
    // The gateway may close the connection while we still hold an unsent body: not a failure.
    req.on('error', (err) => reject(err));
    if (chunk === '') req.flushHeaders();
    else req.write(chunk);
  });
}

function assertError(r: Raw, status: number, code: string, param: string | null | undefined): void {
  assert.equal(r.status, status, r.text);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  const body = JSON.parse(r.text) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(typeof body.error.message, 'string');
  assert.ok((body.error.message as string).length > 0, 'the message is empty');
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.code, code);
  if (param !== undefined) assert.equal(body.error.param, param);
}

/** The headers that name who served a request; the request id names only the request, and every answer carries it. */
function attribution(r: Raw): string[] {
  return Object.keys(r.headers).filter((h) => h.startsWith('x-switchyard-') && h !== 'x-switchyard-request-id');
}

describe('malformed input', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    gw = await startGatewayProcess(
      baseConfig(
        { east: mock.baseUrl },
        {
          'gpt-4o-mini': { candidates: [{ provider: 'east' }] },
          'gpt-4o': { candidates: [{ provider: 'east', model: 'gpt-4o-2024-08-06' }] },
        },
        { server: { max_body_bytes: MAX_BODY_BYTES } },
      ),
    );
  });

  after(async () => {
    await gw?.stop();
    await mock?.close();
  });

  for (const row of rows) {
    it(`${row.name} gets ${row.status} ${row.code}`, async () => {
      const r = await send({ method: row.method, path: row.path, body: row.body });
      assertError(r, row.status, row.code, row.param);
      assert.deepEqual(attribution(r), [], 'an error carries no attribution headers');
      if (row.path === undefined) {
        assert.match(String(r.headers['x-switchyard-request-id']), /^[0-9a-f-]{36}$/, 'but it names the request');
      }
    });
  }

  it('an unknown model gets 404 model_not_found with no x-switchyard-provider or other attribution header', async () => {
    const r = await send({ body: JSON.stringify(good({ model: 'gpt-5-imaginary' })) });
    assertError(r, 404, 'model_not_found', 'model');
    assert.equal(r.headers['x-switchyard-provider'], undefined);
    assert.equal(r.headers['x-switchyard-model'], undefined);
    assert.deepEqual(attribution(r), []);
    assert.match(JSON.parse(r.text).error.message as string, /gpt-5-imaginary/);
  });

  it('405 names the allowed method in an Allow header', async () => {
    const chat = await send({ method: 'GET' });
    assertError(chat, 405, 'method_not_allowed', null);
    assert.equal(chat.headers.allow, 'POST');
    const models = await send({ method: 'DELETE', path: '/v1/models' });
    assertError(models, 405, 'method_not_allowed', null);
    assert.equal(models.headers.allow, 'GET');
  });

  it('a declared Content-Length over server.max_body_bytes gets 413 before any body byte is sent', async () => {
    const r = await sendPartial({ 'content-type': 'application/json', 'content-length': String(MAX_BODY_BYTES + 1) }, '');
    assertError(r, 413, 'body_too_large', null);
    assert.match(JSON.parse(r.text).error.message as string, /max_body_bytes/);
  });

  it('a chunked body without Content-Length gets 413 as soon as it grows past server.max_body_bytes', async () => {
    const prefix = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"';
    const chunk = prefix + 'x'.repeat(MAX_BODY_BYTES * 2);
    const r = await sendPartial({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, chunk);
    assertError(r, 413, 'body_too_large', null);
  });

  it('a body of exactly server.max_body_bytes is accepted', async () => {
    const base = JSON.stringify(good({ messages: [{ role: 'user', content: '' }] }));
    const body = JSON.stringify(good({ messages: [{ role: 'user', content: 'x'.repeat(MAX_BODY_BYTES - Buffer.byteLength(base)) }] }));
    assert.equal(Buffer.byteLength(body), MAX_BODY_BYTES);
    const r = await send({ body });
    assert.equal(r.status, 200, r.text);
  });

  it('GET /healthz answers 200', async () => {
    const res = await fetch(`${gw.url}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  it('GET /readyz answers 200 once the first generation is serving', async () => {
    const res = await fetch(`${gw.url}/readyz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ready', governance_store: 'up' });
  });

  it('GET /v1/models lists exactly the configured models in OpenAI list format', async () => {
    const res = await fetch(`${gw.url}/v1/models`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await res.json()) as { object: string; data: Array<Record<string, unknown>> };
    assert.equal(body.object, 'list');
    assert.deepEqual(body.data.map((m) => m.id).sort(), ['gpt-4o', 'gpt-4o-mini'], 'route names, not upstream model names');
    for (const m of body.data) {
      assert.equal(m.object, 'model');
      assert.equal(typeof m.created, 'number');
      assert.ok(Number.isInteger(m.created));
      assert.equal(typeof m.owned_by, 'string');
    }
  });

  it('after every malformed request the gateway still serves, and no malformed request reached the provider', async () => {
    const before = chatCount(mock);
    const r = await postChat(gw.url, chatBody('gpt-4o-mini'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json().object, 'chat.completion');
    assert.equal(r.headers.get('x-switchyard-provider'), 'east');
    assert.equal(chatCount(mock), before + 1);
    // Only the exact-limit request and this one were valid chat requests.
    assert.equal(before, 1, 'a malformed request was forwarded upstream');
    assert.equal(gw.child.exitCode, null, 'the gateway exited');
    assert.equal(gw.child.signalCode, null);
    const unexpected = gw.logs().filter((l) => l.level === 'error' || l.level === 'fatal');
    assert.deepEqual(unexpected, [], 'the gateway logged an unexpected error');
  });
});
