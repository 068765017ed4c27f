import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { hashKey } from '../../src/governance/index.js';
import {
  type BareAgent,
  type BareCall,
  bareCard,
  readEvents,
  rpc,
  rpcStream,
  startBareAgent,
  wireMessage,
  wireTask,
} from '../support/a2a-fleet.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// Upstream agents that misbehave, each a bare node:http server that speaks just enough A2A
// (a card, and a JSON-RPC endpoint whose answer the test writes): a stream without end, a
// silence, an event far over a2a.max_event_bytes, a card far over a2a.max_card_bytes, an
// answer that claims another team's task, and a client that leaves mid-stream. The gateway
// must bound each one and stay up for the next call.

const resources = fileResources('switchyard-a2a-hostile-');
const KEY_A = 'sk-a2a-hostile-alpha-0123456789abcdef';
const KEY_B = 'sk-a2a-hostile-bravo-0123456789abcdef';
const STREAM_MAX_MS = 1500;
const TIMEOUT_MS = 800;
const MAX_EVENT_BYTES = 64 * 1024;

/** One gateway with the bare agent as the agent `bare`, tight bounds, teams alpha and bravo. */
async function gatewayFor(agent: BareAgent, a2a: Record<string, unknown> = {}): Promise<GatewayProcess> {
  return resources.startGw({
    // Metrics open on the API listener: the 50 MB test reads the gateway's resident memory there.
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 1000, public_metrics: true },
    log: { level: 'info', access: false },
    providers: { bare: { type: 'a2a', base_url: agent.baseUrl, timeout_ms: TIMEOUT_MS, connect_timeout_ms: 1000 } },
    routing: { agents: { bare: { candidates: [{ provider: 'bare' }] } } },
    a2a: { card_recheck_ms: 0, stream_max_ms: STREAM_MAX_MS, max_event_bytes: MAX_EVENT_BYTES, ...a2a },
    teams: { alpha: {}, bravo: {} },
    keys: [
      { id: 'a', team: 'alpha', sha256: hashKey(KEY_A) },
      { id: 'b', team: 'bravo', sha256: hashKey(KEY_B) },
    ],
  });
}

async function bareAgent(answer: Parameters<typeof startBareAgent>[0]): Promise<BareAgent> {
  const agent = await startBareAgent(answer);
  resources.addUpstream(() => agent.close());
  return agent;
}

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

function sse(res: ServerResponse, id: unknown, result: unknown): boolean {
  return res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
}

function answerJson(res: ServerResponse, id: unknown, result: unknown): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id, result });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** A stream that sends a working status every 100 ms until its client goes away. */
function endlessStream(call: BareCall, res: ServerResponse): void {
  const id = call.body.id ?? null;
  sseHead(res);
  sse(res, id, { task: wireTask('endless-task', 'endless-context') });
  const timer = setInterval(() => {
    sse(res, id, { statusUpdate: { taskId: 'endless-task', contextId: 'endless-context', status: { state: 'TASK_STATE_WORKING' } } });
  }, 100);
  res.on('close', () => clearInterval(timer));
}

/** A JSON-RPC answer that always works: the bare agent's instant task. */
function instantTask(call: BareCall, res: ServerResponse): void {
  answerJson(res, call.body.id ?? null, { task: wireTask('instant-task', 'instant-context', 'TASK_STATE_COMPLETED') });
}

/** Whether `p` settles within `ms`: a generous bound that only catches a hang. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), hang]);
  } finally {
    clearTimeout(timer);
  }
}

type RpcEvent = { result?: unknown; error?: { code: number; data?: { code?: string } } };

describe('hostile upstream agents: the gateway bounds each one and answers the next call', () => {
  it('an endless stream is cut at a2a.stream_max_ms with a JSON-RPC error event, and its upstream closed', async () => {
    const agent = await bareAgent(endlessStream);
    const gw = await gatewayFor(agent);
    const res = await rpcStream(gw, KEY_A, 'bare', 'SendStreamingMessage', { message: wireMessage('forever') });
    assert.equal(res.status, 200);
    const events = (await readEvents(res)) as RpcEvent[];
    assert.ok(events.length >= 2, 'events were relayed before the cut');
    const last = events.at(-1) as RpcEvent;
    assert.equal(last.error?.code, -32050, JSON.stringify(last));
    assert.equal(last.error?.data?.code, 'upstream_timeout', JSON.stringify(last));
    assert.ok(events.slice(0, -1).every((e) => e.result !== undefined));
    assert.ok(await settlesWithin((agent.calls[0] as BareCall).socketClosed, 10_000), 'the upstream stream was ended');

    agent.answer = instantTask;
    const next = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('and now') });
    assert.ok(next.body.result !== undefined, JSON.stringify(next.body));
  });

  it('an agent silent for longer than timeout_ms is cut: before its answer, and between two events', async () => {
    const agent = await bareAgent(() => undefined);
    const gw = await gatewayFor(agent);
    const silent = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('hello?') });
    assert.equal(silent.body.error?.code, -32050, JSON.stringify(silent.body));
    assert.equal(silent.body.error?.data?.code, 'upstream_timeout');
    assert.equal(silent.status, 504);
    assert.ok(await settlesWithin((agent.calls[0] as BareCall).socketClosed, 10_000));

    agent.answer = (call, res) => {
      sseHead(res);
      sse(res, call.body.id ?? null, { task: wireTask('quiet-task', 'quiet-context') });
      // then nothing, with the connection open
    };
    const res = await rpcStream(gw, KEY_A, 'bare', 'SendStreamingMessage', { message: wireMessage('hello?') });
    assert.equal(res.status, 200);
    const events = (await readEvents(res)) as RpcEvent[];
    assert.equal(events.length, 2, JSON.stringify(events));
    assert.ok(events[0]?.result !== undefined);
    assert.equal(events[1]?.error?.data?.code, 'upstream_timeout', JSON.stringify(events[1]));
    assert.ok(await settlesWithin((agent.calls[1] as BareCall).socketClosed, 10_000));
  });

  it('an answer trickled without a long silence is cut at a2a.call_timeout_ms', async () => {
    const agent = await bareAgent((call, res) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: call.body.id ?? null, result: { task: wireTask('slow', 'slow') } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      let i = 0;
      const timer = setInterval(() => {
        res.write(body.slice(i, i + 1));
        i += 1;
        if (i >= body.length) {
          clearInterval(timer);
          res.end();
        }
      }, TIMEOUT_MS / 4);
      res.on('close', () => clearInterval(timer));
    });
    const gw = await gatewayFor(agent, { call_timeout_ms: 1500 });
    const slow = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('slowly') });
    assert.equal(slow.status, 504, JSON.stringify(slow.body));
    assert.equal(slow.body.error?.data?.code, 'upstream_timeout');
    assert.ok(await settlesWithin((agent.calls[0] as BareCall).socketClosed, 10_000));
  });

  it('a 50 MB event is refused at a2a.max_event_bytes without the gateway holding it, and the gateway answers on', async () => {
    const TOTAL = 50 * 1024 * 1024;
    let written = 0;
    const agent = await bareAgent((call, res) => {
      sseHead(res);
      sse(res, call.body.id ?? null, { task: wireTask('big-task', 'big-context') });
      res.write('data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"big-task","metadata":{"pad":"');
      const chunk = 'x'.repeat(256 * 1024);
      // Written as the gateway reads it: a gateway that stops reading stops the writer.
      const pump = (): void => {
        while (written < TOTAL && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end('"}}}}\n\n');
      };
      pump();
    });
    const gw = await gatewayFor(agent);
    const before = metricValue(await scrapeMetrics(gw.url), 'switchyard_process_resident_memory_bytes');
    const res = await rpcStream(gw, KEY_A, 'bare', 'SendStreamingMessage', { message: wireMessage('big') });
    assert.equal(res.status, 200);
    const events = (await readEvents(res)) as RpcEvent[];
    assert.equal(events.length, 2, `${events.length} events`);
    assert.ok(events[0]?.result !== undefined);
    assert.equal(events[1]?.error?.code, -32050, JSON.stringify(events[1]));
    assert.equal(events[1]?.error?.data?.code, 'stream_event_too_large', JSON.stringify(events[1]));
    assert.ok(await settlesWithin((agent.calls[0] as BareCall).socketClosed, 10_000), 'the upstream was let go');
    assert.ok(written < TOTAL, `the gateway read all ${written} bytes of an event it had refused`);

    agent.answer = instantTask;
    const next = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('and now') });
    assert.ok(next.body.result !== undefined, JSON.stringify(next.body));
    const afterwards = metricValue(await scrapeMetrics(gw.url), 'switchyard_process_resident_memory_bytes');
    assert.ok(before !== undefined && afterwards !== undefined, 'the gateway exports its resident memory');
    assert.ok(afterwards - before < 40 * 1024 * 1024, `resident memory grew by ${afterwards - before} bytes`);
  });

  it('a2a.max_event_bytes counts bytes: an event of multi-byte characters over the limit is refused', async () => {
    // 30,000 three-byte characters: 90,000 bytes, over the 65,536 limit, though fewer characters than it.
    const agent = await bareAgent((call, res) => {
      sseHead(res);
      sse(res, call.body.id ?? null, { task: wireTask('wide-task', 'wide-context') });
      sse(res, call.body.id ?? null, {
        statusUpdate: {
          taskId: 'wide-task',
          contextId: 'wide-context',
          status: { state: 'TASK_STATE_WORKING' },
          metadata: { pad: '中'.repeat(30_000) },
        },
      });
      res.end();
    });
    const gw = await gatewayFor(agent);
    const res = await rpcStream(gw, KEY_A, 'bare', 'SendStreamingMessage', { message: wireMessage('wide') });
    const events = (await readEvents(res)) as RpcEvent[];
    assert.equal(events.length, 2);
    assert.equal(
      events[1]?.error?.data?.code,
      'stream_event_too_large',
      `the ${JSON.stringify(events[1]).length}-character event went through`,
    );
  });

  it('a card naming an endpoint on another origin is not followed: the call reaches nothing', async () => {
    const elsewhere = await bareAgent(instantTask);
    const agent = await bareAgent(instantTask);
    agent.cardBody = bareCard(`${elsewhere.baseUrl}/rpc`);
    const gw = await gatewayFor(agent);
    const call = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('hello') });
    assert.equal(call.status, 503, JSON.stringify(call.body));
    assert.equal(call.body.error?.data?.code, 'upstream_unavailable');
    assert.equal(elsewhere.calls.length, 0);
    assert.equal(agent.calls.length, 0);
  });

  it('a client that leaves while an agent thinks ends the upstream call', async () => {
    const agent = await bareAgent(() => undefined);
    const gw = await gatewayFor(agent);
    const controller = new AbortController();
    const pending = fetch(`${gw.url}/a2a/bare`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: wireMessage('think') } }),
      signal: controller.signal,
    }).catch(() => undefined);
    for (let i = 0; i < 500 && agent.calls.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(agent.calls.length, 1);
    controller.abort();
    await pending;
    assert.ok(await settlesWithin((agent.calls[0] as BareCall).socketClosed, TIMEOUT_MS / 2), 'the upstream call outlived its client');
  });

  it('a 10 MB card is refused: the agent answers upstream_unavailable, and its endpoint is never called', async () => {
    const agent = await bareAgent(instantTask);
    const card = JSON.parse(await (await fetch(`${agent.baseUrl}/.well-known/agent-card.json`)).text()) as Record<string, unknown>;
    agent.cardBody = JSON.stringify({ ...card, description: 'd'.repeat(10 * 1024 * 1024) });
    const gw = await gatewayFor(agent);
    const call = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('hello') });
    assert.equal(call.status, 503, JSON.stringify(call.body));
    assert.equal(call.body.error?.code, -32050);
    assert.equal(call.body.error?.data?.code, 'upstream_unavailable');
    const served = await fetch(`${gw.url}/a2a/bare/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${KEY_A}` } });
    assert.equal(served.status, 503);
    await served.arrayBuffer();
    assert.equal(agent.calls.length, 0);
  });

  it('an answer naming a task team A owns, given to team B, is not recorded for B: A still owns it', async () => {
    const agent = await bareAgent((call, res) => {
      answerJson(res, call.body.id ?? null, { task: wireTask('owned-task', 'owned-context', 'TASK_STATE_WORKING') });
    });
    const gw = await gatewayFor(agent);
    const mine = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('start') });
    assert.equal((mine.body.result?.task as { id: string } | undefined)?.id, 'owned-task', JSON.stringify(mine.body));

    // The agent gives team B the same task, once as a JSON answer and once in a stream.
    await rpc(gw, KEY_B, 'bare', 'SendMessage', { message: wireMessage('start') });
    agent.answer = (call, res) => {
      sseHead(res);
      sse(res, call.body.id ?? null, { task: wireTask('owned-task', 'owned-context') });
      res.end();
    };
    await readEvents(await rpcStream(gw, KEY_B, 'bare', 'SendStreamingMessage', { message: wireMessage('start') }));

    await gw.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('another team or candidate owns'));
    agent.answer = instantTask;
    const callsBefore = agent.calls.length;
    for (const [method, params] of [
      ['GetTask', { id: 'owned-task' }],
      ['CancelTask', { id: 'owned-task' }],
      ['SendMessage', { message: wireMessage('mine?', { contextId: 'owned-context' }) }],
    ] as const) {
      const theirs = await rpc(gw, KEY_B, 'bare', method, params);
      assert.equal(theirs.body.error?.code, -32001, `${method}: ${JSON.stringify(theirs.body)}`);
    }
    assert.equal(agent.calls.length, callsBefore, "team B's calls on the task reached no agent");
    const stillMine = await rpc(gw, KEY_A, 'bare', 'GetTask', { id: 'owned-task' });
    assert.ok(stillMine.body.result !== undefined, JSON.stringify(stillMine.body));
    assert.equal(agent.calls.at(-1)?.method, 'GetTask');
  });

  it('a client that leaves mid-stream ends the upstream stream', async () => {
    const agent = await bareAgent(endlessStream);
    const gw = await gatewayFor(agent, { stream_max_ms: 600_000 });
    const controller = new AbortController();
    const res = await rpcStream(gw, KEY_A, 'bare', 'SendStreamingMessage', { message: wireMessage('forever') }, controller.signal);
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    assert.equal(first.done, false);
    controller.abort();
    await reader.cancel().catch(() => undefined);
    assert.ok(await settlesWithin((agent.calls[0] as BareCall).socketClosed, 10_000), 'the upstream stream outlived its client');

    agent.answer = instantTask;
    const next = await rpc(gw, KEY_A, 'bare', 'SendMessage', { message: wireMessage('and now') });
    assert.ok(next.body.result !== undefined, JSON.stringify(next.body));
  });

  it('a client slower than its agent gets every event, in order: the agent is paused meanwhile (back-pressure)', async () => {
    const EVENTS = 1500;
    const pad = 'x'.repeat(12 * 1024);
    let pushedBack = false;
    const agent = await bareAgent((call, res) => {
      const id = call.body.id ?? null;
      sseHead(res);
      let i = 0;
      const more = (): void => {
        while (i < EVENTS) {
          i += 1;
          // A new context every 100 events: each is recorded before its event goes on.
          const contextId = `bp-context-${Math.floor(i / 100)}`;
          const open = sse(res, id, {
            statusUpdate: { taskId: 'bp-task', contextId, status: { state: 'TASK_STATE_WORKING' }, metadata: { seq: i, pad } },
          });
          if (!open) {
            pushedBack = true;
            res.once('drain', more);
            return;
          }
        }
        res.end();
      };
      more();
    });
    const gw = await gatewayFor(agent, { stream_max_ms: 60_000 });
    const res = await rpcStream(gw, KEY_A, 'bare', 'SendStreamingMessage', { message: wireMessage('flood') });
    assert.equal(res.status, 200);
    // Nothing is read for a while: the gateway's socket to the client fills up.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const events = (await readEvents(res)) as RpcEvent[];
    assert.equal(pushedBack, true, 'the agent was made to wait');
    const seqs = events.map(
      (e) => (e.result as { statusUpdate?: { metadata?: { seq?: number } } } | undefined)?.statusUpdate?.metadata?.seq,
    );
    assert.equal(seqs.length, EVENTS);
    assert.deepEqual(
      seqs.filter((n, k) => n !== k + 1),
      [],
      'every event arrived, each once, in the order the agent sent them',
    );
  });
});
