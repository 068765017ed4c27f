import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { A2A_METHODS, methodName, methodOf } from '../../src/a2a/methods.js';

describe('a2a methods', () => {
  it('knows every 1.0 method and the 0.3 name the reference SDK pairs it with', () => {
    const pairs = Object.fromEntries(A2A_METHODS.map((m) => [m.v1, m.v03]));
    assert.deepEqual(pairs, {
      SendMessage: 'message/send',
      SendStreamingMessage: 'message/stream',
      GetTask: 'tasks/get',
      CancelTask: 'tasks/cancel',
      SubscribeToTask: 'tasks/resubscribe',
      CreateTaskPushNotificationConfig: 'tasks/pushNotificationConfig/set',
      GetTaskPushNotificationConfig: 'tasks/pushNotificationConfig/get',
      ListTaskPushNotificationConfigs: 'tasks/pushNotificationConfig/list',
      DeleteTaskPushNotificationConfig: 'tasks/pushNotificationConfig/delete',
      ListTasks: null,
      GetExtendedAgentCard: 'agent/getAuthenticatedExtendedCard',
    });
  });

  it('a name in either spelling finds the same method and tells which version spelled it', () => {
    const v1 = methodOf('SendMessage');
    const v03 = methodOf('message/send');
    assert.equal(v1?.method, v03?.method);
    assert.equal(v1?.version, '1.0');
    assert.equal(v03?.version, '0.3');
    assert.equal(methodOf('tasks/pushNotificationConfig/delete')?.method.cls, 'push-config');
    assert.equal(methodOf('agent/getAuthenticatedExtendedCard')?.method.v1, 'GetExtendedAgentCard');
  });

  it('only the two streaming methods answer with events', () => {
    const streaming = A2A_METHODS.filter((m) => m.streams).map((m) => m.v1);
    assert.deepEqual(streaming, ['SendStreamingMessage', 'SubscribeToTask']);
    assert.equal(methodOf('tasks/resubscribe')?.method.streams, true);
  });

  it('unknown, miscased and prototype names find nothing', () => {
    for (const name of ['sendMessage', 'message/Send', 'tasks/list', 'toString', '__proto__', 'constructor', '']) {
      assert.equal(methodOf(name), null, name);
    }
  });

  it('renames a method for either version, and ListTasks has no 0.3 name', () => {
    const list = methodOf('ListTasks')?.method;
    assert.ok(list);
    assert.equal(methodName(list, '1.0'), 'ListTasks');
    assert.equal(methodName(list, '0.3'), null);
    for (const m of A2A_METHODS) {
      assert.equal(methodName(m, '1.0'), m.v1);
      assert.equal(methodName(m, '0.3'), m.v03);
    }
  });

  it('the table cannot be changed at run time', () => {
    assert.ok(Object.isFrozen(A2A_METHODS));
    assert.ok(A2A_METHODS.every((m) => Object.isFrozen(m)));
  });
});
