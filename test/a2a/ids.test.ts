import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventIds, pushUrlsOf, requestIds, resultIds, stateOf, taskIdsOfList, withTasks } from '../../src/a2a/ids.js';
import { type A2AMethod, methodOf } from '../../src/a2a/methods.js';
import type { A2AVersion } from '../../src/a2a/types.js';

const m = (name: string): A2AMethod => {
  const found = methodOf(name);
  assert.ok(found, name);
  return found.method;
};

const GARBAGE: unknown[] = [
  undefined,
  null,
  0,
  'x',
  true,
  [],
  [1, 2],
  {},
  { message: 'x' },
  { message: { taskId: 5 } },
  { task: null },
  { task: [] },
  { kind: 'task', status: 'completed' },
  { kind: 'status-update', status: { state: 42 } },
  { statusUpdate: { status: { state: {} } } },
  { configuration: { pushNotificationConfig: 7 } },
  { tasks: 'nope' },
  Object.create(null),
];

describe('a2a request ids', () => {
  it('a send names the task and context of its message, in both versions', () => {
    const params = { message: { messageId: 'm', taskId: 't1', contextId: 'c1', role: 'user', parts: [] } };
    assert.deepEqual(requestIds(m('message/send'), '0.3', params), { taskId: 't1', contextId: 'c1' });
    assert.deepEqual(requestIds(m('SendStreamingMessage'), '1.0', params), { taskId: 't1', contextId: 'c1' });
  });

  it('empty strings, as 1.0 writes absent ids, name nothing', () => {
    const params = { message: { messageId: 'm', taskId: '', contextId: 'c1' } };
    assert.deepEqual(requestIds(m('SendMessage'), '1.0', params), { contextId: 'c1' });
    assert.deepEqual(requestIds(m('SendMessage'), '1.0', { message: { taskId: '', contextId: '' } }), {});
  });

  it('1.0 ids under their proto field names are read too', () => {
    const params = { message: { task_id: 't', context_id: 'c' } };
    assert.deepEqual(requestIds(m('SendMessage'), '1.0', params), { taskId: 't', contextId: 'c' });
  });

  it('get, cancel and subscribe name their task by id', () => {
    for (const name of ['tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'GetTask', 'CancelTask', 'SubscribeToTask']) {
      const found = methodOf(name);
      assert.ok(found);
      assert.deepEqual(requestIds(found.method, found.version, { id: 't9', historyLength: 2 }), { taskId: 't9' });
    }
  });

  it('push-config requests name their task as each version does', () => {
    assert.deepEqual(requestIds(m('CreateTaskPushNotificationConfig'), '1.0', { taskId: 't', url: 'u' }), { taskId: 't' });
    assert.deepEqual(requestIds(m('GetTaskPushNotificationConfig'), '1.0', { taskId: 't', id: 'cfg' }), { taskId: 't' });
    assert.deepEqual(requestIds(m('tasks/pushNotificationConfig/set'), '0.3', { taskId: 't', pushNotificationConfig: { url: 'u' } }), {
      taskId: 't',
    });
    for (const name of ['get', 'list', 'delete']) {
      const params = { id: 't', pushNotificationConfigId: 'cfg' };
      assert.deepEqual(requestIds(m(`tasks/pushNotificationConfig/${name}`), '0.3', params), { taskId: 't' });
    }
  });

  it('ListTasks and the extended card name no task', () => {
    assert.deepEqual(requestIds(m('ListTasks'), '1.0', { contextId: 'c' }), {});
    assert.deepEqual(requestIds(m('GetExtendedAgentCard'), '1.0', {}), {});
  });
});

describe('a2a answer ids', () => {
  it('a 1.0 SendMessage task result teaches the task, context and state', () => {
    const result = { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } };
    assert.deepEqual(resultIds(m('SendMessage'), '1.0', result), {
      taskId: 't',
      contextId: 'c',
      terminal: true,
      state: 'completed',
    });
  });

  it('a message result teaches its context and never ends a task', () => {
    assert.deepEqual(resultIds(m('SendMessage'), '1.0', { message: { messageId: 'm', contextId: 'c' } }), {
      contextId: 'c',
      terminal: false,
    });
    assert.deepEqual(resultIds(m('message/send'), '0.3', { kind: 'message', messageId: 'm', contextId: 'c', taskId: 't' }), {
      taskId: 't',
      contextId: 'c',
      terminal: false,
    });
  });

  it('GetTask and CancelTask answer with the task itself', () => {
    const v1 = { id: 't', contextId: 'c', status: { state: 'TASK_STATE_CANCELED' } };
    const v03 = { kind: 'task', id: 't', contextId: 'c', status: { state: 'working' } };
    assert.deepEqual(resultIds(m('CancelTask'), '1.0', v1), { taskId: 't', contextId: 'c', terminal: true, state: 'canceled' });
    assert.deepEqual(resultIds(m('tasks/get'), '0.3', v03), { taskId: 't', contextId: 'c', terminal: false, state: 'working' });
  });

  it('interrupted states are not terminal; rejected and failed are', () => {
    const at = (state: string) => eventIds('1.0', { task: { id: 't', status: { state } } });
    assert.equal(at('TASK_STATE_INPUT_REQUIRED').terminal, false);
    assert.equal(at('TASK_STATE_AUTH_REQUIRED').state, 'auth-required');
    assert.equal(at('TASK_STATE_REJECTED').terminal, true);
    assert.equal(at('TASK_STATE_FAILED').terminal, true);
    assert.equal(at('TASK_STATE_UNSPECIFIED').state, 'unknown');
    assert.equal(eventIds('1.0', { task: { id: 't', status: { state: 3 } } }).state, 'completed');
    assert.equal(at('completed').state, undefined, '0.3 spelling in a 1.0 answer is not a state');
  });

  it('a stream of events yields ids and the end of the task, in both versions', () => {
    const v1Stream = [
      { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED' } } },
      { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } },
      { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [{ text: 'hi' }] } } },
      { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } },
    ];
    const v03Stream = [
      { kind: 'task', id: 't', contextId: 'c', status: { state: 'submitted' } },
      { kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'working' }, final: false },
      { kind: 'artifact-update', taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [] } },
      { kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'completed' }, final: true },
    ];
    const expected = [
      { taskId: 't', contextId: 'c', terminal: false, state: 'submitted' },
      { taskId: 't', contextId: 'c', terminal: false, state: 'working' },
      { taskId: 't', contextId: 'c', terminal: false },
      { taskId: 't', contextId: 'c', terminal: true, state: 'completed' },
    ];
    assert.deepEqual(
      v1Stream.map((e) => eventIds('1.0', e)),
      expected,
    );
    assert.deepEqual(
      v03Stream.map((e) => eventIds('0.3', e)),
      expected,
    );
  });

  it('push-config, list and card results teach nothing', () => {
    assert.deepEqual(resultIds(m('CreateTaskPushNotificationConfig'), '1.0', { taskId: 't', url: 'u' }), { terminal: false });
    assert.deepEqual(resultIds(m('ListTasks'), '1.0', { tasks: [{ id: 't' }] }), { terminal: false });
  });

  it('garbage never throws and teaches nothing terminal', () => {
    const versions: A2AVersion[] = ['1.0', '0.3'];
    for (const version of versions) {
      for (const g of GARBAGE) {
        assert.equal(eventIds(version, g).terminal, false);
        for (const found of ['SendMessage', 'GetTask', 'ListTasks', 'CreateTaskPushNotificationConfig']) {
          assert.equal(resultIds(m(found), version, g).terminal, false);
          requestIds(m(found), version, g);
          pushUrlsOf(m(found), version, g);
        }
        stateOf(version, g);
      }
    }
    for (const g of GARBAGE) {
      taskIdsOfList(g);
      withTasks(g, () => true);
    }
  });
});

describe('a2a push URLs', () => {
  it('finds the webhook of a send configuration in each version', () => {
    const v1 = { message: {}, configuration: { taskPushNotificationConfig: { url: 'https://hook.example/1' } } };
    const v03 = { message: {}, configuration: { pushNotificationConfig: { url: 'https://hook.example/2' } } };
    assert.deepEqual(pushUrlsOf(m('SendMessage'), '1.0', v1), ['https://hook.example/1']);
    assert.deepEqual(pushUrlsOf(m('message/stream'), '0.3', v03), ['https://hook.example/2']);
    assert.deepEqual(pushUrlsOf(m('SendMessage'), '1.0', { message: {} }), []);
  });

  it('finds the webhook of a push-config create: flat in 1.0, nested in 0.3', () => {
    assert.deepEqual(pushUrlsOf(m('CreateTaskPushNotificationConfig'), '1.0', { taskId: 't', url: 'https://a' }), ['https://a']);
    assert.deepEqual(
      pushUrlsOf(m('tasks/pushNotificationConfig/set'), '0.3', { taskId: 't', pushNotificationConfig: { url: 'https://b' } }),
      ['https://b'],
    );
    assert.deepEqual(pushUrlsOf(m('GetTaskPushNotificationConfig'), '1.0', { taskId: 't', url: 'https://c' }), []);
  });

  it('a config with a missing or non-string URL yields "" so it is refused, not overlooked', () => {
    assert.deepEqual(pushUrlsOf(m('CreateTaskPushNotificationConfig'), '1.0', { taskId: 't' }), ['']);
    assert.deepEqual(pushUrlsOf(m('CreateTaskPushNotificationConfig'), '1.0', { taskId: 't', url: 5 }), ['']);
    assert.deepEqual(pushUrlsOf(m('message/send'), '0.3', { configuration: { pushNotificationConfig: 'x' } }), ['']);
    assert.deepEqual(pushUrlsOf(m('SendMessage'), '1.0', { configuration: { taskPushNotificationConfig: { url: ['a'] } } }), ['']);
  });
});

describe('a2a task state and task lists', () => {
  it('reads a task state in either spelling', () => {
    assert.equal(stateOf('1.0', { status: { state: 'TASK_STATE_INPUT_REQUIRED' } }), 'input-required');
    assert.equal(stateOf('0.3', { status: { state: 'input-required' } }), 'input-required');
    assert.equal(stateOf('0.3', { status: { state: 'TASK_STATE_WORKING' } }), undefined);
    assert.equal(stateOf('0.3', { status: { state: 'toString' } }), undefined);
    assert.equal(stateOf('1.0', {}), undefined);
  });

  it('lists the task ids of a ListTasks result, skipping unreadable tasks', () => {
    assert.deepEqual(taskIdsOfList({ tasks: [{ id: 'a' }, { id: 2 }, null, { id: 'b' }] }), ['a', 'b']);
  });

  it('keeps only the tasks a caller may see and lowers totalSize by those dropped', () => {
    const result = { tasks: [{ id: 'a' }, { id: 'b' }, { id: 'c' }], nextPageToken: 'n', pageSize: 3, totalSize: 10 };
    const kept = withTasks(result, (id) => id !== 'b');
    assert.deepEqual(kept, { tasks: [{ id: 'a' }, { id: 'c' }], nextPageToken: 'n', pageSize: 3, totalSize: 9 });
    assert.equal(result.tasks.length, 3, 'the input is not changed');
    assert.deepEqual(
      withTasks({ tasks: [{ id: 'a' }], totalSize: 0 }, () => false),
      { tasks: [], totalSize: 0 },
    );
  });
});
