import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { StreamResponse } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import {
  agentClient,
  agentProvider,
  idsOfEvent,
  rpc,
  rpcCount,
  sendParams,
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
    const asked = taskOf(await onA.sendMessage(sendParams('start', {}, true)));
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);

    const onB = await agentClient(f.b, KEY_A, 'asker');
    const answered = taskOf(
      await onB.sendMessage(sendParams('the answer', { taskId: asked.id, contextId: asked.contextId })),
    );
    assert.equal(answered.id, asked.id);
    assert.equal(answered.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(f.one.a2aStats().requests['asker SendMessage'], 2);
    assert.equal(rpcCount(f.two), 0);
  });

  it('a new task on B goes to B s first candidate (the order the other tests rely on)', async () => {
    const f = await startFleet();
    resetMocks(f);
    const onB = await agentClient(f.b, KEY_A, 'asker');
    taskOf(await onB.sendMessage(sendParams('start', {}, true)));
    assert.equal(rpcCount(f.two), 1);
    assert.equal(rpcCount(f.one), 0);
  });
});

describe('team isolation: another team s task and context ids are tasks that do not exist', () => {
  it('team B gets -32001 for team A s task and context, on either replica, and no agent is asked', async () => {
    const f = await startFleet();
    const onA = await agentClient(f.a, KEY_A, 'asker');
    const asked = taskOf(await onA.sendMessage(sendParams('start', {}, true)));
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
    const mine = taskOf(await onA.sendMessage(sendParams('start', {}, true)));
    const onBravo = await agentClient(f.b, KEY_B, 'asker');
    const theirs = taskOf(await onBravo.sendMessage(sendParams('start', {}, true)));

    const bravoList = await onBravo.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '' });
    const bravoIds = bravoList.tasks.map((t) => t.id);
    assert.ok(bravoIds.includes(theirs.id), JSON.stringify(bravoIds));
    assert.ok(!bravoIds.includes(mine.id), 'team A s task is not listed for team B');

    const alphaList = await (await agentClient(f.b, KEY_A, 'asker')).listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageToken: '',
    });
    const alphaIds = alphaList.tasks.map((t) => t.id);
    assert.ok(alphaIds.includes(mine.id));
    assert.ok(!alphaIds.includes(theirs.id));
  });
});
