import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { StreamResponse } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { hashKey } from '../../src/governance/index.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import {
  agentClient,
  agentProvider,
  idsOfEvent,
  rpc,
  rpcCount,
  sendParams,
  startBareAgent,
  taskOf,
  wireMessage,
} from '../support/a2a-fleet.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';
import { fileResources } from '../support/resources.js';

// A2A through a fleet: two gateway processes on one private Redis (the task owners' store),
// each agent served by two mock agents. Replica A lists the candidates in one order and
// replica B in the other, so that a follow-up on B that reached B's first candidate instead
// of the task's owner would show in that mock's counts. Teams: a task or context id of one
// team is, for another, one that does not exist.

const resources = fileResources('switchyard-a2a-fleet-');
const KEY_A = 'sk-a2a-fleet-alpha-0123456789abcdef';
const KEY_B = 'sk-a2a-fleet-bravo-0123456789abcdef';
const PREFIX = 'a2a-fleet:';

/** ListTasks with no filter. */
const ALL_TASKS = { tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined };

let redis: ChildProcess;
let redisUrl: string;

before(async () => {
  const port = await freePort();
  redis = await startRedis(port);
  redisUrl = `redis://127.0.0.1:${port}`;
});

after(async () => {
  if (redis !== undefined) await stopRedis(redis);
});

interface Fleet {
  readonly one: MockProvider;
  readonly two: MockProvider;
  /** Candidates in the order one, two. */
  readonly a: GatewayProcess;
  /** Candidates in the order two, one. */
  readonly b: GatewayProcess;
}

function fleetConfig(one: MockProvider, two: MockProvider, order: 'one-first' | 'two-first'): Record<string, unknown> {
  const pair = (agent: string) => {
    const list = [{ provider: `${agent}-one` }, { provider: `${agent}-two` }];
    return { candidates: order === 'one-first' ? list : list.reverse() };
  };
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 1000 },
    log: { level: 'info', access: false },
    providers: {
      'worker-one': agentProvider(one.baseUrl, 'worker'),
      'worker-two': agentProvider(two.baseUrl, 'worker'),
      'asker-one': agentProvider(one.baseUrl, 'asker'),
      'asker-two': agentProvider(two.baseUrl, 'asker'),
    },
    routing: { agents: { worker: pair('worker'), asker: pair('asker') } },
    a2a: { card_recheck_ms: 0 },
    governance: { store: 'redis', redis_url: redisUrl, key_prefix: PREFIX },
    teams: { alpha: {}, bravo: {} },
    keys: [
      { id: 'a', team: 'alpha', sha256: hashKey(KEY_A) },
      { id: 'b', team: 'bravo', sha256: hashKey(KEY_B) },
    ],
  };
}

let fleet: Promise<Fleet> | undefined;

/** The fleet, started once for the file's describes that share it. */
function startFleet(): Promise<Fleet> {
  fleet ??= launchFleet();
  return fleet;
}

async function launchFleet(): Promise<Fleet> {
  const one = await resources.startMock({ name: 'one', protocol: 'a2a', a2aStepMs: 150 });
  const two = await resources.startMock({ name: 'two', protocol: 'a2a', a2aStepMs: 150 });
  const a = await resources.startGw(fleetConfig(one, two, 'one-first'));
  const b = await resources.startGw(fleetConfig(one, two, 'two-first'));
  return { one, two, a, b };
}

/** One gateway, owners in memory, key A in team alpha and key B in team bravo unless `teams`/`keys` say otherwise. */
function singleConfig(o: {
  providers: Record<string, unknown>;
  agents: Record<string, unknown>;
  teams?: Record<string, unknown>;
  keys?: unknown[];
  a2a?: Record<string, unknown>;
}): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 1000 },
    log: { level: 'info', access: false },
    providers: o.providers,
    routing: { agents: o.agents },
    a2a: o.a2a ?? { card_recheck_ms: 0 },
    teams: o.teams ?? { alpha: {}, bravo: {} },
    keys: o.keys ?? [
      { id: 'a', team: 'alpha', sha256: hashKey(KEY_A) },
      { id: 'b', team: 'bravo', sha256: hashKey(KEY_B) },
    ],
  };
}

function resetMocks(f: Fleet): void {
  f.one.reset();
  f.two.reset();
}

/** Every event of an SDK stream, read to its end. */
async function drain(stream: AsyncGenerator<StreamResponse, void, undefined>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const e of stream) {
    events.push(e);
    if (events.length > 10_000) throw new Error('a stream that never ends');
  }
  return events;
}

function lastState(events: StreamResponse[]): TaskState | undefined {
  for (const e of [...events].reverse()) {
    const p = e.payload;
    if (p?.$case === 'task') return p.value.status?.state;
    if (p?.$case === 'statusUpdate') return p.value.status?.state;
  }
  return undefined;
}

describe('two replicas on one Redis: a task started on one is followed up on the other, at its owner', () => {
  it('a streamed task started on A is read on B, and a message naming it on B reaches the same agent', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onA = await agentClient(f.a, KEY_A, 'worker');
    const events = await drain(onA.sendMessageStream(sendParams('steps:2')));
    assert.equal(lastState(events), TaskState.TASK_STATE_COMPLETED);
    const ids = idsOfEvent(events[0] as StreamResponse);
    assert.ok(ids !== null && ids.taskId !== '');
    assert.equal(rpcCount(f.one), 1, 'replica A sends a new task to its first candidate');
    assert.equal(rpcCount(f.two), 0);

    resetMocks(f);
    const onB = await agentClient(f.b, KEY_A, 'worker');
    const task = await onB.getTask({ tenant: '', id: ids.taskId });
    assert.equal(task.id, ids.taskId);
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(task.artifacts.length, 2);
    // A finished task takes no more messages: the owner says so, and only the owner was asked.
    const more = await rpc(f.b, KEY_A, 'worker', 'SendMessage', { message: wireMessage('again', ids) });
    assert.ok(more.body.error !== undefined, JSON.stringify(more.body));
    assert.notEqual(more.body.error.code, -32001, 'the owner knows the task');
    assert.equal(f.one.a2aStats().requests['worker GetTask'], 1);
    assert.equal(f.one.a2aStats().requests['worker SendMessage'], 1);
    assert.equal(rpcCount(f.two), 0, "B's first candidate saw nothing of a task it does not own");
  });

  it('a task sent plainly on A is read, subscribed to and canceled on B, at its owner', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onA = await agentClient(f.a, KEY_A, 'worker');
    const started = taskOf(await onA.sendMessage(sendParams('steps:200', {}, true)));
    assert.notEqual(started.status?.state, TaskState.TASK_STATE_COMPLETED);

    const onB = await agentClient(f.b, KEY_A, 'worker');
    const read = await onB.getTask({ tenant: '', id: started.id });
    assert.equal(read.id, started.id);
    assert.equal(read.status?.state, TaskState.TASK_STATE_WORKING);

    const subscription = onB.resubscribeTask({ tenant: '', id: started.id });
    const first = await subscription.next();
    assert.equal(first.done, false);
    assert.equal(idsOfEvent(first.value as StreamResponse)?.taskId, started.id);

    const canceled = await onB.cancelTask({ tenant: '', id: started.id, metadata: {} });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    // The subscription ends with the task.
    const rest = await drain(subscription);
    assert.equal(lastState([first.value as StreamResponse, ...rest]), TaskState.TASK_STATE_CANCELED);

    const seen = f.one.a2aStats().requests;
    assert.equal(seen['worker GetTask'], 1);
    assert.equal(seen['worker SubscribeToTask'], 1);
    assert.equal(seen['worker CancelTask'], 1);
    assert.equal(rpcCount(f.two), 0, "B's first candidate saw nothing of a task it does not own");
  });

  it('an input-required task started on A is answered on B, at its owner', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onA = await agentClient(f.a, KEY_A, 'asker');
    const asked = taskOf(await onA.sendMessage(sendParams('start')));
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);

    const onB = await agentClient(f.b, KEY_A, 'asker');
    const answered = taskOf(await onB.sendMessage(sendParams('the answer', { taskId: asked.id, contextId: asked.contextId })));
    assert.equal(answered.id, asked.id);
    assert.equal(answered.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(f.one.a2aStats().requests['asker SendMessage'], 2);
    assert.equal(rpcCount(f.two), 0);
  });

  it('an input-required task streamed on A is continued with a stream on B, at its owner', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onA = await agentClient(f.a, KEY_A, 'asker');
    // The asker's stream reaches input-required and waits there: read up to it, then leave.
    // The gateway records a task's owner before it relays the event that names it.
    const opened = onA.sendMessageStream(sendParams('start'));
    const seen: StreamResponse[] = [];
    for (let i = 0; i < 10 && lastState(seen) !== TaskState.TASK_STATE_INPUT_REQUIRED; i++) {
      const next = await opened.next();
      if (next.done === true) break;
      seen.push(next.value as StreamResponse);
    }
    await opened.return();
    assert.equal(lastState(seen), TaskState.TASK_STATE_INPUT_REQUIRED);
    const first = { value: seen[0] };
    const ids = idsOfEvent(first.value as StreamResponse);
    assert.ok(ids !== null);

    const onB = await agentClient(f.b, KEY_A, 'asker');
    const answered = await drain(onB.sendMessageStream(sendParams('the answer', ids)));
    assert.equal(lastState(answered), TaskState.TASK_STATE_COMPLETED);
    assert.equal(f.one.a2aStats().requests['asker SendStreamingMessage'], 2);
    assert.equal(rpcCount(f.two), 0);
  });

  it('a task is known on B as soon as A relays the event that names it, while its stream goes on', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onA = await agentClient(f.a, KEY_A, 'worker');
    const stream = onA.sendMessageStream(sendParams('steps:4'));
    const first = await stream.next();
    assert.equal(first.done, false);
    const ids = idsOfEvent(first.value as StreamResponse);
    assert.ok(ids !== null);
    const onB = await agentClient(f.b, KEY_A, 'worker');
    const read = await onB.getTask({ tenant: '', id: ids.taskId });
    assert.equal(read.id, ids.taskId);
    const rest = await drain(stream);
    assert.equal(lastState(rest), TaskState.TASK_STATE_COMPLETED);
    assert.equal(rpcCount(f.two), 0);
  });

  it('a message naming only a context started on A goes, on B, to the agent that owns the context', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onA = await agentClient(f.a, KEY_A, 'worker');
    const first = taskOf(await onA.sendMessage(sendParams('steps:0')));
    const onB = await agentClient(f.b, KEY_A, 'worker');
    const second = taskOf(await onB.sendMessage(sendParams('steps:0', { contextId: first.contextId })));
    assert.equal(second.contextId, first.contextId);
    assert.notEqual(second.id, first.id);
    assert.equal(f.one.a2aStats().requests['worker SendMessage'], 2);
    assert.equal(rpcCount(f.two), 0, "B's first candidate knows nothing of the context");
    // The new task of that context is the context owner's too.
    const read = await onB.getTask({ tenant: '', id: second.id });
    assert.equal(read.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(rpcCount(f.two), 0);
  });

  it('a task started in A2A 0.3 on A is read and canceled in 0.3 on B, at its owner; team B cannot see it', async () => {
    const f = await startFleet();
    resetMocks(f);
    const started = await rpc(f.a, KEY_A, 'worker', 'message/send', {
      message: { kind: 'message', messageId: 'legacy-1', role: 'user', parts: [{ kind: 'text', text: 'steps:200' }] },
      configuration: { blocking: false },
    });
    const task = started.body.result as { kind?: string; id?: string; contextId?: string } | undefined;
    assert.equal(task?.kind, 'task', JSON.stringify(started.body));
    const id = task?.id as string;

    const read = await rpc(f.b, KEY_A, 'worker', 'tasks/get', { id });
    assert.equal((read.body.result as { id?: string } | undefined)?.id, id, JSON.stringify(read.body));
    const foreign = await rpc(f.b, KEY_B, 'worker', 'tasks/get', { id });
    assert.equal(foreign.body.error?.code, -32001, JSON.stringify(foreign.body));
    const canceled = await rpc(f.b, KEY_A, 'worker', 'tasks/cancel', { id });
    assert.equal(
      (canceled.body.result as { status?: { state?: string } } | undefined)?.status?.state,
      'canceled',
      JSON.stringify(canceled.body),
    );
    assert.equal(f.one.a2aStats().requests['worker tasks/get'], 1);
    assert.equal(f.one.a2aStats().requests['worker tasks/cancel'], 1);
    assert.equal(rpcCount(f.two), 0);
  });

  it('a new task on B goes to B s first candidate (the order the other tests rely on)', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onB = await agentClient(f.b, KEY_A, 'asker');
    taskOf(await onB.sendMessage(sendParams('start')));
    assert.equal(rpcCount(f.two), 1);
    assert.equal(rpcCount(f.one), 0);
  });
});

describe('team isolation: another team s task and context ids are tasks that do not exist', () => {
  it('team B gets -32001 for team A s task and context, on either replica, and no agent is asked', async () => {
    const f = await startFleet();
    const onA = await agentClient(f.a, KEY_A, 'asker');
    const asked = taskOf(await onA.sendMessage(sendParams('start')));
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    resetMocks(f);

    for (const gw of [f.a, f.b]) {
      const calls: Array<[string, unknown]> = [
        ['GetTask', { id: asked.id }],
        ['CancelTask', { id: asked.id }],
        ['SubscribeToTask', { id: asked.id }],
        ['SendMessage', { message: wireMessage('mine now', { taskId: asked.id }) }],
        ['SendMessage', { message: wireMessage('mine now', { contextId: asked.contextId }) }],
      ];
      for (const [method, params] of calls) {
        const answer = await rpc(gw, KEY_B, 'asker', method, params);
        assert.equal(answer.status, 200, `${method}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error?.code, -32001, `${method}: ${JSON.stringify(answer.body)}`);
      }
    }
    assert.equal(rpcCount(f.one), 0, 'no agent was asked');
    assert.equal(rpcCount(f.two), 0, 'no agent was asked');

    // Team A still owns it, untouched: its answer completes the task.
    const onB = await agentClient(f.b, KEY_A, 'asker');
    const answered = taskOf(await onB.sendMessage(sendParams('the answer', { taskId: asked.id, contextId: asked.contextId })));
    assert.equal(answered.status?.state, TaskState.TASK_STATE_COMPLETED);
  });

  it('ListTasks by team B shows none of team A s tasks, and team A sees its own', async () => {
    const f = await startFleet();
    const onA = await agentClient(f.a, KEY_A, 'asker');
    const mine = taskOf(await onA.sendMessage(sendParams('start')));
    const onBravo = await agentClient(f.b, KEY_B, 'asker');
    const theirs = taskOf(await onBravo.sendMessage(sendParams('start')));

    const bravoList = await onBravo.listTasks(ALL_TASKS);
    const bravoIds = bravoList.tasks.map((t) => t.id);
    assert.ok(bravoIds.includes(theirs.id), JSON.stringify(bravoIds));
    assert.ok(!bravoIds.includes(mine.id), 'team A s task is not listed for team B');

    const alphaList = await (await agentClient(f.b, KEY_A, 'asker')).listTasks(ALL_TASKS);
    const alphaIds = alphaList.tasks.map((t) => t.id);
    assert.ok(alphaIds.includes(mine.id));
    assert.ok(!alphaIds.includes(theirs.id));
  });
});

describe('the task owners store down: follow-ups are refused, never guessed', () => {
  it('with Redis gone, a follow-up is refused with store_unavailable and reaches no agent', async () => {
    const port = await freePort();
    const ownRedis = await startRedis(port);
    try {
      const one = await resources.startMock({ name: 'one', protocol: 'a2a', a2aStepMs: 150 });
      const gw = await resources.startGw({
        ...singleConfig({
          providers: { 'worker-one': agentProvider(one.baseUrl, 'worker') },
          agents: { worker: { candidates: [{ provider: 'worker-one' }] } },
        }),
        governance: { store: 'redis', redis_url: `redis://127.0.0.1:${port}`, key_prefix: PREFIX },
      });
      const started = await rpc(gw, KEY_A, 'worker', 'SendMessage', { message: wireMessage('steps:0') });
      const taskId = (started.body.result?.task as { id: string } | undefined)?.id;
      assert.ok(taskId !== undefined, JSON.stringify(started.body));
      await stopRedis(ownRedis);
      one.reset();
      const read = await rpc(gw, KEY_A, 'worker', 'GetTask', { id: taskId });
      assert.equal(read.body.error?.code, -32040, JSON.stringify(read.body));
      assert.equal(read.body.error?.data?.code, 'store_unavailable');
      assert.equal(read.status, 503);
      assert.equal(rpcCount(one), 0);
    } finally {
      await stopRedis(ownRedis);
    }
  });
});

describe('failover: a new task moves on only when it never reached an agent; a follow-up stays with its owner', () => {
  it('a new task whose first candidate refuses connections goes to the second; the first one s task gets an error, not the second', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a', a2aStepMs: 150 });
    // Closed by the test (a refused connection is what it is for), so not one of the file's resources.
    const gone = await startMockProvider({ name: 'gone', protocol: 'a2a', a2aStepMs: 150 });
    const closedPort = await freePort();
    const gw = await resources.startGw(
      singleConfig({
        providers: {
          'worker-gone': agentProvider(gone.baseUrl, 'worker'),
          'worker-one': agentProvider(one.baseUrl, 'worker'),
          'worker-nowhere': agentProvider(`http://127.0.0.1:${closedPort}`, 'worker'),
        },
        agents: {
          relay: { candidates: [{ provider: 'worker-gone' }, { provider: 'worker-one' }] },
          unreachable: { candidates: [{ provider: 'worker-nowhere' }, { provider: 'worker-one' }] },
        },
      }),
    );
    const client = await agentClient(gw, KEY_A, 'relay');
    const owned = taskOf(await client.sendMessage(sendParams('steps:200', {}, true)));
    assert.equal(rpcCount(gone), 1, 'the first candidate takes new tasks while it is up');
    await gone.close();
    one.reset();

    const moved = taskOf(await client.sendMessage(sendParams('steps:0')));
    assert.equal(moved.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(one.a2aStats().requests['worker SendMessage'], 1, 'the second candidate took the new task');

    one.reset();
    for (const [method, params] of [
      ['GetTask', { id: owned.id }],
      ['CancelTask', { id: owned.id }],
      ['SendMessage', { message: wireMessage('more', { taskId: owned.id }) }],
    ] as const) {
      const answer = await rpc(gw, KEY_A, 'relay', method, params);
      assert.equal(answer.body.error?.code, -32050, `${method}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error?.data?.code, 'upstream_unavailable', JSON.stringify(answer.body));
      assert.equal(answer.status, 503);
    }
    assert.equal(rpcCount(one), 0, 'a follow-up is never sent to an agent that does not own the task');

    // A candidate that was never up (no card, connections refused) is passed over the same way.
    const viaSecond = await rpc(gw, KEY_A, 'unreachable', 'SendMessage', { message: wireMessage('steps:0') });
    assert.equal(viaSecond.status, 200, JSON.stringify(viaSecond.body));
    assert.ok(viaSecond.body.result !== undefined, JSON.stringify(viaSecond.body));
    assert.equal(rpcCount(one), 1);
  });

  it('a first candidate answering 503 without a JSON-RPC body is passed over; one answering a JSON-RPC error is not', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const bare = await startBareAgent((_call, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('overloaded');
    });
    resources.addUpstream(() => bare.close());
    const gw = await resources.startGw(
      singleConfig({
        providers: { bare: { type: 'a2a', base_url: bare.baseUrl, timeout_ms: 5000 }, 'worker-one': agentProvider(one.baseUrl, 'worker') },
        agents: { flaky: { candidates: [{ provider: 'bare' }, { provider: 'worker-one' }] } },
      }),
    );
    const moved = await rpc(gw, KEY_A, 'flaky', 'SendMessage', { message: wireMessage('steps:0') });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.ok(moved.body.result?.task !== undefined, JSON.stringify(moved.body));
    assert.equal(bare.calls.length, 1);
    assert.equal(rpcCount(one), 1);

    for (const status of [200, 503]) {
      one.reset();
      bare.answer = (call, res) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: call.body.id ?? null, error: { code: -32603, message: 'the agent broke' } }));
      };
      const kept = await rpc(gw, KEY_A, 'flaky', 'SendMessage', { message: wireMessage('steps:0') });
      assert.ok(kept.body.error !== undefined, `${status}: ${JSON.stringify(kept.body)}`);
      assert.equal(rpcCount(one), 0, `a JSON-RPC error (HTTP ${status}) is the agent's answer: nothing moves on`);
    }
  });
});

describe('failover and the breaker: an open breaker turns new tasks away, not the follow-ups of the tasks it owns', () => {
  it('a task s follow-up reaches its owner past the owner s open breaker', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const mode = { down: false };
    const bare = await startBareAgent((call, res) => {
      if (mode.down) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end('down for maintenance');
        return;
      }
      const task = {
        id: 'breaker-task',
        contextId: 'breaker-context',
        status: { state: 'TASK_STATE_WORKING' },
        artifacts: [],
        history: [],
      };
      const body = JSON.stringify({ jsonrpc: '2.0', id: call.body.id ?? null, result: call.method === 'SendMessage' ? { task } : task });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    resources.addUpstream(() => bare.close());
    const gw = await resources.startGw({
      ...singleConfig({
        providers: { bare: { type: 'a2a', base_url: bare.baseUrl, timeout_ms: 5000 }, 'worker-one': agentProvider(one.baseUrl, 'worker') },
        agents: { flaky: { candidates: [{ provider: 'bare' }, { provider: 'worker-one' }] } },
      }),
      resilience: { breaker: { failure_threshold: 2, open_base_ms: 600_000, open_max_ms: 600_000 } },
    });
    const owned = await rpc(gw, KEY_A, 'flaky', 'SendMessage', { message: wireMessage('start') });
    assert.equal((owned.body.result?.task as { id: string } | undefined)?.id, 'breaker-task', JSON.stringify(owned.body));

    mode.down = true;
    for (let i = 0; i < 3; i++) {
      const moved = await rpc(gw, KEY_A, 'flaky', 'SendMessage', { message: wireMessage('steps:0') });
      assert.ok(moved.body.result?.task !== undefined, JSON.stringify(moved.body));
    }
    const callsWhenOpen = bare.calls.length;
    const skipped = await rpc(gw, KEY_A, 'flaky', 'SendMessage', { message: wireMessage('steps:0') });
    assert.ok(skipped.body.result?.task !== undefined);
    assert.equal(bare.calls.length, callsWhenOpen, 'the open breaker keeps new tasks away');

    mode.down = false;
    one.reset();
    const read = await rpc(gw, KEY_A, 'flaky', 'GetTask', { id: 'breaker-task' });
    assert.equal((read.body.result as { id?: string } | undefined)?.id, 'breaker-task', JSON.stringify(read.body));
    assert.equal(bare.calls.at(-1)?.method, 'GetTask');
    assert.equal(rpcCount(one), 0);
  });
});

describe('governance on /a2a: allow-lists, rpm counting only messages, the daily message quota', () => {
  it('an agent outside the team s or the key s allowed_agents is refused with 403 and hidden from GET /a2a', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const gw = await resources.startGw(
      singleConfig({
        providers: { 'worker-one': agentProvider(one.baseUrl, 'worker'), 'instant-one': agentProvider(one.baseUrl, 'instant') },
        agents: { worker: { candidates: [{ provider: 'worker-one' }] }, instant: { candidates: [{ provider: 'instant-one' }] } },
        teams: { alpha: {}, bravo: { allowed_agents: ['inst*'] } },
        keys: [
          { id: 'a', team: 'alpha', sha256: hashKey(KEY_A), allowed_agents: ['work?r'] },
          { id: 'b', team: 'bravo', sha256: hashKey(KEY_B) },
        ],
      }),
    );
    for (const [key, allowed, denied] of [
      [KEY_A, 'worker', 'instant'],
      [KEY_B, 'instant', 'worker'],
    ] as const) {
      const list = await fetch(`${gw.url}/a2a`, { headers: { authorization: `Bearer ${key}` } });
      const names = ((await list.json()) as { agents: Array<{ name: string }> }).agents.map((a) => a.name);
      assert.deepEqual(names, [allowed]);
      one.reset();
      const refused = await rpc(gw, key, denied, 'SendMessage', { message: wireMessage('hello') });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error?.code, -32040);
      assert.equal(refused.body.error?.data?.code, 'agent_not_allowed');
      const card = await fetch(`${gw.url}/a2a/${denied}/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(card.status, 403);
      await card.arrayBuffer();
      assert.equal(rpcCount(one), 0);
      const ok = await rpc(gw, key, allowed, 'SendMessage', { message: wireMessage('steps:0 hello') });
      assert.ok(ok.body.result !== undefined, JSON.stringify(ok.body));
    }
  });

  it('rpm counts messages only: reads go on past the limit, the next message is refused with 429', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const gw = await resources.startGw(
      singleConfig({
        providers: { 'worker-one': agentProvider(one.baseUrl, 'worker') },
        agents: { worker: { candidates: [{ provider: 'worker-one' }] } },
        teams: { alpha: { rate_limit: { rpm: 2 } }, bravo: {} },
      }),
    );
    const first = await rpc(gw, KEY_A, 'worker', 'SendMessage', { message: wireMessage('steps:0') });
    const taskId = (first.body.result?.task as { id: string } | undefined)?.id;
    assert.ok(taskId !== undefined, JSON.stringify(first.body));
    for (let i = 0; i < 4; i++) {
      const read = await rpc(gw, KEY_A, 'worker', 'GetTask', { id: taskId });
      assert.ok(read.body.result !== undefined, `GetTask ${i}: ${JSON.stringify(read.body)}`);
    }
    // A2A 0.3's message/send is a message too.
    const second = await rpc(gw, KEY_A, 'worker', 'message/send', {
      message: { kind: 'message', messageId: 'm-2', role: 'user', parts: [{ kind: 'text', text: 'steps:0' }] },
    });
    assert.ok(second.body.result !== undefined, JSON.stringify(second.body));
    one.reset();
    const third = await rpc(gw, KEY_A, 'worker', 'SendMessage', { message: wireMessage('steps:0') });
    assert.equal(third.status, 429, JSON.stringify(third.body));
    assert.equal(third.body.error?.code, -32040);
    assert.equal(third.body.error?.data?.code, 'rate_limit_exceeded');
    const streamed = await rpc(gw, KEY_A, 'worker', 'SendStreamingMessage', { message: wireMessage('steps:0') });
    assert.equal(streamed.status, 429, 'a streamed message counts too');
    assert.equal(rpcCount(one), 0, 'a refused message reaches no agent');
    const stillReads = await rpc(gw, KEY_A, 'worker', 'GetTask', { id: taskId });
    assert.ok(stillReads.body.result !== undefined, JSON.stringify(stillReads.body));
  });

  it('quota.agent_messages_per_day (team) and agent_messages_per_day (key) refuse with 429 quota_exceeded', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const gw = await resources.startGw(
      singleConfig({
        providers: { 'instant-one': agentProvider(one.baseUrl, 'instant') },
        agents: { instant: { candidates: [{ provider: 'instant-one' }] } },
        teams: { alpha: { quota: { agent_messages_per_day: 2 } }, bravo: {} },
        keys: [
          { id: 'a', team: 'alpha', sha256: hashKey(KEY_A) },
          { id: 'b', team: 'bravo', sha256: hashKey(KEY_B), agent_messages_per_day: 1 },
        ],
      }),
    );
    for (const [key, allowed] of [
      [KEY_A, 2],
      [KEY_B, 1],
    ] as const) {
      for (let i = 0; i < allowed; i++) {
        const ok = await rpc(gw, key, 'instant', 'SendMessage', { message: wireMessage(`hello ${i}`) });
        assert.ok(ok.body.result?.message !== undefined, JSON.stringify(ok.body));
      }
      one.reset();
      const over = await rpc(gw, key, 'instant', 'SendMessage', { message: wireMessage('one too many') });
      assert.equal(over.status, 429, JSON.stringify(over.body));
      assert.equal(over.body.error?.code, -32040);
      assert.equal(over.body.error?.data?.code, 'quota_exceeded');
      assert.equal(rpcCount(one), 0);
    }
  });
});

describe('governance on /a2a: what a message that reached no agent costs', () => {
  it('a message no agent could take does not use up the day s quota', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const closedPort = await freePort();
    const gw = await resources.startGw(
      singleConfig({
        providers: {
          'instant-one': agentProvider(one.baseUrl, 'instant'),
          'instant-nowhere': agentProvider(`http://127.0.0.1:${closedPort}`, 'instant'),
        },
        agents: { instant: { candidates: [{ provider: 'instant-one' }] }, down: { candidates: [{ provider: 'instant-nowhere' }] } },
        teams: { alpha: { quota: { agent_messages_per_day: 1 } }, bravo: {} },
      }),
    );
    const lost = await rpc(gw, KEY_A, 'down', 'SendMessage', { message: wireMessage('anyone?') });
    assert.equal(lost.status, 503, JSON.stringify(lost.body));
    assert.equal(lost.body.error?.data?.code, 'upstream_unavailable');
    const counted = await rpc(gw, KEY_A, 'instant', 'SendMessage', { message: wireMessage('hello') });
    assert.ok(counted.body.result?.message !== undefined, JSON.stringify(counted.body));
    const over = await rpc(gw, KEY_A, 'instant', 'SendMessage', { message: wireMessage('again') });
    assert.equal(over.body.error?.data?.code, 'quota_exceeded', JSON.stringify(over.body));
  });
});

describe('ListTasks pages through a team s own tasks', () => {
  it('a team s task behind another team s tasks on the agent s first page is still reachable by paging', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const gw = await resources.startGw(
      singleConfig({
        providers: { 'worker-one': agentProvider(one.baseUrl, 'worker') },
        agents: { worker: { candidates: [{ provider: 'worker-one' }] } },
      }),
    );
    const theirs = await rpc(gw, KEY_B, 'worker', 'SendMessage', { message: wireMessage('steps:0 bravo') });
    const bravoTask = (theirs.body.result?.task as { id: string } | undefined)?.id;
    assert.ok(bravoTask !== undefined, JSON.stringify(theirs.body));
    for (let i = 0; i < 3; i++) await rpc(gw, KEY_A, 'worker', 'SendMessage', { message: wireMessage(`steps:0 alpha ${i}`) });

    const seen: string[] = [];
    let pageToken = '';
    for (let page = 0; page < 10; page++) {
      const list = await rpc(gw, KEY_B, 'worker', 'ListTasks', { pageSize: 1, ...(pageToken === '' ? {} : { pageToken }) });
      const result = list.body.result as { tasks: Array<{ id: string }>; nextPageToken?: string } | undefined;
      assert.ok(result !== undefined, JSON.stringify(list.body));
      seen.push(...result.tasks.map((t) => t.id));
      pageToken = result.nextPageToken ?? '';
      if (pageToken === '') break;
    }
    assert.deepEqual(seen, [bravoTask]);
  });
});

describe('push-notification URLs: loopback refused before any agent sees it; a2a.push_urls lets one through', () => {
  it('http://127.0.0.1, https://127.0.0.1 and https://localhost webhooks get -32602 and reach no agent', async () => {
    const one = await resources.startMock({ name: 'one', protocol: 'a2a' });
    const hooks = await startBareAgent((_call, res) => {
      res.writeHead(200);
      res.end();
    });
    resources.addUpstream(() => hooks.close());
    const allowed = `${hooks.baseUrl}/hooks/`;
    const gw = await resources.startGw(
      singleConfig({
        providers: { 'worker-one': agentProvider(one.baseUrl, 'worker') },
        agents: { worker: { candidates: [{ provider: 'worker-one' }] } },
        a2a: { card_recheck_ms: 0, push_urls: [allowed] },
      }),
    );
    const push = (url: string) => ({ url, id: '', taskId: '', token: 'tok' });
    const refused = [
      'http://127.0.0.1/hook',
      'https://127.0.0.1/hook',
      'https://localhost/hook',
      // The same places spelled otherwise.
      'https://LOCALHOST/hook',
      'https://localhost./hook',
      'https://127.1/hook',
      'https://2130706433/hook',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://169.254.169.254/latest/meta-data',
      // Beside the listed prefix, or stepping out of it.
      `${hooks.baseUrl}/other`,
      `${allowed}../other`,
      `${allowed.replace('http://', 'http://user:pw@')}x`,
    ];
    for (const url of refused) {
      one.reset();
      const send = await rpc(gw, KEY_A, 'worker', 'SendMessage', {
        message: wireMessage('steps:0'),
        configuration: { taskPushNotificationConfig: push(url) },
      });
      assert.equal(send.body.error?.code, -32602, `${url}: ${JSON.stringify(send.body)}`);
      const create = await rpc(gw, KEY_A, 'worker', 'CreateTaskPushNotificationConfig', { ...push(url), taskId: 'some-task' });
      assert.equal(create.body.error?.code, -32602, `${url}: ${JSON.stringify(create.body)}`);
      // The same in A2A 0.3's words.
      const legacySend = await rpc(gw, KEY_A, 'worker', 'message/send', {
        message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'steps:0' }] },
        configuration: { pushNotificationConfig: { url } },
      });
      assert.equal(legacySend.body.error?.code, -32602, `0.3 ${url}: ${JSON.stringify(legacySend.body)}`);
      const legacySet = await rpc(gw, KEY_A, 'worker', 'tasks/pushNotificationConfig/set', {
        taskId: 'some-task',
        pushNotificationConfig: { url },
      });
      assert.equal(legacySet.body.error?.code, -32602, `0.3 ${url}: ${JSON.stringify(legacySet.body)}`);
      assert.equal(rpcCount(one), 0, `${url} reached the agent`);
    }
    one.reset();
    const through = await rpc(gw, KEY_A, 'worker', 'SendMessage', {
      message: wireMessage('steps:0'),
      configuration: { taskPushNotificationConfig: push(`${allowed}task-1`) },
    });
    assert.ok(through.body.result !== undefined, JSON.stringify(through.body));
    assert.equal(one.a2aStats().requests['worker SendMessage'], 1);
  });
});
