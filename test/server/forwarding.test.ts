import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig, configText, runCli } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// What a real gateway process forwards: configured provider headers go upstream, the
// client's body goes upstream byte for byte (only a renamed model changes), and only an
// allow-list of the upstream's response headers comes back to the client.

const resources = fileResources('switchyard-forwarding-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('configured provider headers', () => {
  it('an ordinary configured header (OpenAI-Organization: org-1) is sent upstream', async () => {
    const config = baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } });
    (config.providers as Record<string, Record<string, unknown>>).east!.headers = { 'OpenAI-Organization': 'org-1' };
    const gw = await resources.startGw(config);
    east.reset();
    const r = await postChat(gw.url, chatBody('m'));
    assert.equal(r.status, 200, r.text);
    assert.equal(east.stats().recent.at(-1)?.headers['openai-organization'], 'org-1');
  });
});

// ---------------------------------------------------------------------------------------

describe('renaming the model changes only the model value', () => {
  it('the upstream body is the client body byte-for-byte, with only the top-level model string replaced', async () => {
    const gw = await resources.startGw(
      baseConfig(
        { east: east.baseUrl },
        {
          alias: { candidates: [{ provider: 'east', model: 'gpt-4o-mini' }] },
          same: { candidates: [{ provider: 'east' }] },
        },
      ),
    );
    // A nested "model" comes first and must stay; big integers, 1.0, \u escapes and odd
    // whitespace would all change if the body were parsed and re-serialized.
    const head = '{ "metadata" : {"model":"alias", "note":"keep me"},\n\t"model" :  ';
    const tail =
      ' ,"seed":9007199254740993, "temperature":1.0,"messages":[{"role":"user","content":"caf\\u00e9 \\"model\\":\\"alias\\""}],"logit_bias":{"50256":-100} }\n';
    east.reset();
    const r = await postChat(gw.url, `${head}"alias"${tail}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(east.stats().recent.at(-1)?.body, `${head}"gpt-4o-mini"${tail}`);

    const unchanged = `${head}"same"${tail}`;
    const s = await postChat(gw.url, unchanged);
    assert.equal(s.status, 200, s.text);
    assert.equal(east.stats().recent.at(-1)?.body, unchanged, 'without a rename the body is forwarded as sent');
  });
});

// ---------------------------------------------------------------------------------------

describe('upstream response headers are an allow-list', () => {
  let upstream: Server;
  let baseUrl: string;
  const KEY = 'sk-forwarding-test-key';

  before(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        // Names in the case providers send them: the allow-list is case-insensitive.
        res.writeHead(200, {
          'Content-Type': 'application/json',
          connection: 'keep-alive, x-upstream-hop',
          'x-upstream-hop': 'v',
          'X-Request-ID': 'req_upstream_1',
          'X-RateLimit-Remaining-Requests': '4999',
          'Anthropic-RateLimit-Requests-Remaining': '49',
          'OpenAI-Organization': 'org-internal',
          'openai-processing-ms': '12',
          'set-cookie': 'session=upstream; Path=/',
          'x-internal-debug': 'shard-7',
          via: '1.1 internal-proxy',
          'x-switchyard-provider': 'spoofed',
        });
        res.end('{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    resources.addUpstream(
      () =>
        new Promise<void>((resolve) => {
          upstream.close(() => resolve());
          upstream.closeAllConnections();
        }),
    );
  });

  it('passes the content type, request id and rate limits; drops cookies, internals and hop-by-hop headers; expose_headers adds one', async () => {
    const config = baseConfig({ p: baseUrl }, { m: { candidates: [{ provider: 'p' }] } });
    (config.providers as Record<string, Record<string, unknown>>).p!.expose_headers = ['OpenAI-Processing-Ms'];
    const gw = await resources.startGw(config);
    const r = await postChat(gw.url, chatBody('m'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.headers.get('x-request-id'), 'req_upstream_1');
    assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '4999');
    assert.equal(r.headers.get('anthropic-ratelimit-requests-remaining'), '49');
    assert.equal(r.headers.get('openai-processing-ms'), '12', 'named by expose_headers (any case)');
    for (const dropped of ['openai-organization', 'set-cookie', 'x-internal-debug', 'via', 'x-upstream-hop'])
      assert.equal(r.headers.get(dropped), null, `${dropped} stays at the gateway`);
    assert.equal(r.headers.get('x-switchyard-provider'), 'p', 'the gateway’s own attribution wins');
  });

  it("a gateway rate limit replaces the provider's rate-limit headers", async () => {
    const sha256 = createHash('sha256').update(KEY).digest('hex');
    const gw = await resources.startGw(
      baseConfig(
        { p: baseUrl },
        { m: { candidates: [{ provider: 'p' }] } },
        { teams: { t: { rate_limit: { rpm: 100 } } }, keys: [{ id: 'k', team: 't', sha256 }] },
      ),
    );
    const r = await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${KEY}` });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-ratelimit-limit-requests'), '100');
    assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '99');
    assert.equal(r.headers.get('anthropic-ratelimit-requests-remaining'), null);
    assert.equal(r.headers.get('x-request-id'), 'req_upstream_1');
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.headers.get('openai-organization'), null, 'without expose_headers, only the allow-list passes');
  });

  it('refuses expose_headers naming a hop-by-hop, framing or gateway header, with its path', async () => {
    const config = baseConfig({ p: baseUrl }, { m: { candidates: [{ provider: 'p' }] } });
    (config.providers as Record<string, Record<string, unknown>>).p!.expose_headers = ['x-fine', 'Set-Cookie'];
    const file = join(resources.tempDir(), 'config.yaml');
    writeFileSync(file, configText(config));
    const out = await runCli(['validate', '--config', file]);
    assert.equal(out.code, 1);
    assert.match(out.stderr + out.stdout, /providers\.p\.expose_headers\[1\]/);
  });
});
