import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// The gateway reads usage from an answer's bytes and passes them on as they are, so it asks
// every upstream for `accept-encoding: identity`. An upstream that compresses anyway is
// treated as a failed attempt before anything reached the client: another candidate may
// answer, and a client is never handed a body in an encoding it did not ask for.

const resources = fileResources('switchyard-encoding-');
let good: MockProvider;
let gzipping: Server;
let gzipOrigin: string;
const seen: IncomingHttpHeaders[] = [];
let gw: GatewayProcess;

const COMPLETION = {
  id: 'chatcmpl-gz',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'compressed' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
};

before(async () => {
  good = await resources.startMock({ name: 'good' });
  gzipping = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => {
      const body = gzipSync(JSON.stringify(COMPLETION));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => gzipping.listen(0, '127.0.0.1', resolve));
  gzipOrigin = `http://127.0.0.1:${(gzipping.address() as AddressInfo).port}`;
  gw = await resources.startGw(
    baseConfig(
      { gz: `${gzipOrigin}/v1`, good: good.baseUrl },
      {
        failover: {
          policy: 'ordered',
          candidates: [
            { provider: 'gz', model: 'gpt-4o-mini' },
            { provider: 'good', model: 'gpt-4o-mini' },
          ],
        },
        'only-gz': { candidates: [{ provider: 'gz', model: 'gpt-4o-mini' }] },
      },
    ),
  );
});

after(async () => {
  await new Promise<void>((resolve) => gzipping.close(() => resolve()));
});

describe('upstream content encoding', () => {
  it('every upstream call asks for accept-encoding: identity', async () => {
    seen.length = 0;
    good.reset();
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    await client.chat.completions.create({ model: 'failover', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(seen.at(-1)?.['accept-encoding'], 'identity');
    assert.equal(good.stats().recent.at(-1)?.headers['accept-encoding'], 'identity');
  });

  it('a compressed answer fails over to the next candidate, which serves the client uncompressed', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ model: 'failover', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(response.headers.get('x-switchyard-provider'), 'good');
    assert.equal(response.headers.get('x-switchyard-fallback'), 'gz');
    assert.equal(response.headers.get('content-encoding'), null);
    assert.notEqual(data.choices[0]?.message.content, 'compressed');
  });

  it('with no other candidate the client gets a 502 naming the encoding, never the compressed body', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: 'only-gz', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.InternalServerError, `not a 5xx: ${String(err)}`);
        assert.equal(err.status, 502);
        assert.equal((err.error as { code?: string } | undefined)?.code, 'upstream_error');
        assert.match(err.message, /content-encoding "gzip", though asked for identity/);
        return true;
      },
    );
  });
});
