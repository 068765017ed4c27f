import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { type HostileMode, type HostileUpstream, startHostileUpstream } from '../support/hostile-upstream.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// Issue 12: an upstream that misbehaves, in front of a healthy one. Each case states what the
// client sees, whether the request failed over, and what the access line says.

const resources = fileResources('switchyard-hostile-');
const TIMEOUT_MS = 300;

let east: MockProvider;
let hostile: HostileUpstream;
let gw: GatewayProcess;

before(async () => {
  east = await resources.startMock({ name: 'east' });
  hostile = await startHostileUpstream('hang_before_headers');
  resources.addUpstream(() => hostile.close());
  const config = baseConfig(
    { hostile: hostile.baseUrl, east: east.baseUrl },
    { m: { policy: 'ordered', candidates: [{ provider: 'hostile' }, { provider: 'east' }] } },
    // Every request must reach the hostile upstream first: no breaker in the way.
    { resilience: { breaker: { failure_threshold: 1000 } } },
  );
  (config.providers as Record<string, { timeout_ms: number }>).hostile!.timeout_ms = TIMEOUT_MS;
  gw = await resources.startGw(config);
});

async function served(mode: HostileMode) {
  hostile.mode = mode;
  const requestId = `hostile-${mode}-${Date.now()}`;
  const reply = await postChat(gw.url, chatBody('m'), { 'x-request-id': requestId });
  const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
  return { reply, line };
}

describe('a hostile upstream before a healthy one', () => {
  const failsOver: Array<[HostileMode, string, string]> = [
    ['hang_before_headers', 'timeout', 'never answers: timed out after timeout_ms'],
    // Issue 12 item 6: the client got an empty reply logged as partial, though nothing had reached it.
    ['hang_after_headers', 'timeout', 'sends headers, then goes silent (non-streamed)'],
    ['trickle_body', 'timeout', 'trickles its body slower than timeout_ms'],
    ['close_mid_body', 'connect_error', 'closes the connection mid-body'],
  ];
  for (const [mode, reason, what] of failsOver) {
    it(`an upstream that ${what} fails over before the first byte: the client gets the next candidate's 200`, async () => {
      const { reply, line } = await served(mode);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.headers.get('x-switchyard-provider'), 'east');
      assert.equal(reply.headers.get('x-switchyard-fallback'), 'hostile');
      assert.equal(reply.json().object, 'chat.completion');
      assert.deepEqual(line.fallback, [`hostile:${reason}`]);
      assert.equal(line.status, 200);
      assert.equal(line.partial, false);
    });
  }

  it('a 200 whose body is not JSON is relayed as it came (a proxy does not rewrite bodies); no usage is read from it', async () => {
    const { reply, line } = await served('invalid_json');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('x-switchyard-provider'), 'hostile');
    assert.equal(reply.text, '{"id": "chatcmpl-broken", "choices": [');
    assert.equal(line.input_tokens, undefined);
  });

  it('a body past the 1 MiB buffering bound is relayed as it comes, whole', async () => {
    const { reply, line } = await served('huge_body');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('x-switchyard-provider'), 'hostile');
    assert.ok(reply.text.length > 8 * 1024 * 1024, `got ${reply.text.length} bytes`);
    assert.equal(reply.json().object, 'chat.completion');
    assert.equal(line.partial, false);
  });

  it('after all of it the gateway still answers at once', async () => {
    const health = await fetch(`${gw.url}/healthz`, { signal: AbortSignal.timeout(1000) });
    assert.equal(health.status, 200);
  });
});
