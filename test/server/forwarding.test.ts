import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// What a real gateway process forwards: configured provider headers go upstream, the
// client's body goes upstream byte for byte (only a renamed model changes), and headers the
// upstream marks hop-by-hop do not come back to the client.

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

describe('headers named by the upstream Connection header', () => {
  let upstream: Server;

  before(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, {
          'content-type': 'application/json',
          connection: 'keep-alive, x-upstream-hop',
          'x-upstream-hop': 'v',
          'x-upstream-other': 'kept',
        });
        res.end('{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    resources.addUpstream(
      () =>
        new Promise<void>((resolve) => {
          upstream.close(() => resolve());
          upstream.closeAllConnections();
        }),
    );
  });

  it('a header the upstream lists in Connection is not forwarded to the client; other headers are', async () => {
    const { port } = upstream.address() as AddressInfo;
    const gw = await resources.startGw(baseConfig({ p: `http://127.0.0.1:${port}/v1` }, { m: { candidates: [{ provider: 'p' }] } }));
    const r = await postChat(gw.url, chatBody('m'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-upstream-other'), 'kept', 'an end-to-end header is forwarded');
    assert.equal(r.headers.get('x-upstream-hop'), null, 'a header named in Connection is hop-by-hop');
  });
});
