import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { adminStatusBody } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';

// When failover has nothing left, the client hears the upstream's own answer: its status
// class, its retry-after and its message (after a prefix naming the provider), never a
// credential; an upstream that refuses the gateway's credential is the gateway's fault.

/** The gateway's key for the provider: what an upstream's 401 would echo a fragment of. */
const PROVIDER_KEY = 'sk-proj-abcdef0123456789SECRETxyz';

interface Scripted {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A provider that answers each chat request with whatever the test scripted last. */
class ScriptedUpstream {
  next: Scripted = { status: 200, headers: {}, body: '{}' };
  readonly server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(this.next.status, { 'content-type': 'application/json', ...this.next.headers });
      res.end(this.next.body);
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

const openaiError = (message: string, type: string, code: string | null = null) =>
  JSON.stringify({ error: { message, type, param: null, code } });

describe('the upstream answer when failover has nothing left', () => {
  const east = new ScriptedUpstream();
  let gw: GatewayProcess;
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    const eastUrl = await east.start();
    const config = baseConfig({ east: eastUrl }, { 'gpt-4o': { candidates: [{ provider: 'east' }] } });
    (config.providers as Record<string, Record<string, unknown>>).east!.api_key = { env: 'EAST_KEY' };
    gw = await startGatewayProcess(config, { env: { EAST_KEY: PROVIDER_KEY } });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0, timeout: 10_000 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0, timeout: 10_000 });
  });

  after(async () => {
    await gw?.stop();
    east.server.close();
  });

  async function chatRefusal(): Promise<InstanceType<typeof OpenAI.APIError>> {
    const err = await openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('expected an error'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.APIError, String(err));
    return err;
  }

  it('a 429 reaches the client as 429 with its retry-after and its message after the provider prefix', async () => {
    east.next = {
      status: 429,
      headers: { 'retry-after': '2' },
      body: openaiError('Rate limit reached for gpt-4o in organization org-x on tokens per min.', 'requests', 'rate_limit_exceeded'),
    };
    const err = await chatRefusal();
    assert.equal(err.status, 429);
    assert.equal(err.headers?.get('retry-after'), '2');
    assert.equal(err.code, 'upstream_rate_limited');
    assert.equal(err.message, '429 provider "east" answered 429: Rate limit reached for gpt-4o in organization org-x on tokens per min.');
  });

  it('a 503 with a body reaches an Anthropic client as 503 with its message and retry-after', async () => {
    east.next = { status: 503, headers: { 'retry-after': '7' }, body: openaiError('The engine is currently overloaded', 'server_error') };
    const err = await anthropic.messages.create({ model: 'gpt-4o', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('expected an error'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.equal(err.status, 503);
    assert.equal((err.headers as unknown as Headers | undefined)?.get('retry-after'), '7');
    const body = err.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.error.type, 'overloaded_error');
    assert.equal(body.error.message, 'provider "east" answered 503: The engine is currently overloaded');
  });

  it('a retry-after that is not a sane delay is not passed on', async () => {
    east.next = { status: 429, headers: { 'retry-after': '99999999' }, body: openaiError('slow down', 'requests') };
    const err = await chatRefusal();
    assert.equal(err.status, 429);
    assert.equal(err.headers?.get('retry-after'), null);
    assert.match(err.message, /provider "east" answered 429: slow down$/);
  });

  it('a 500 without a readable message still names the provider and its status, and no body text', async () => {
    east.next = { status: 500, headers: {}, body: '<html>Internal Server Error</html>' };
    const err = await chatRefusal();
    assert.equal(err.status, 502);
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.message, '502 provider "east" answered 500');
  });

  it('a 401 about the gateway credential is 502 upstream_auth_failed, the echoed key removed, and the breaker counts it', async () => {
    east.next = {
      status: 401,
      headers: {},
      body: openaiError(
        `Incorrect API key provided: sk-proj-***********************ETxyz. You can find your API key at https://platform.openai.com/account/api-keys. Also: ${PROVIDER_KEY}`,
        'invalid_request_error',
        'invalid_api_key',
      ),
    };
    const before = (await adminStatusBody(gw)).providers.find((p) => p.name === 'east')?.breaker?.consecutiveFailures ?? 0;
    const err = await chatRefusal();
    assert.equal(err.status, 502);
    assert.equal(err.code, 'upstream_auth_failed');
    assert.equal(err.type, 'server_error');
    assert.match(err.message, /^502 provider "east" answered 401: Incorrect API key provided: \[redacted\]/);
    assert.doesNotMatch(err.message, /ETxyz|SECRET|abcdef0123/);
    const afterwards = (await adminStatusBody(gw)).providers.find((p) => p.name === 'east')?.breaker?.consecutiveFailures ?? 0;
    assert.equal(afterwards, before + 1, 'the breaker counted the refused credential as a failure');
    east.next = { status: 200, headers: {}, body: '{}' };
  });

  it('a 403 is upstream_auth_failed in Anthropic shape too', async () => {
    east.next = {
      status: 403,
      headers: {},
      body: JSON.stringify({ type: 'error', error: { type: 'permission_error', message: 'key not allowed' } }),
    };
    const err = await anthropic.messages.create({ model: 'gpt-4o', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('expected an error'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.equal(err.status, 502);
    const body = err.error as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'api_error');
    assert.equal(body.error.message, 'provider "east" answered 403: key not allowed');
  });
});
