import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { A2A_METHODS, type A2AMethod, methodOf } from '../../src/a2a/methods.js';
import { translateError, translateEvent, translateRequest, translateResult } from '../../src/a2a/translate.js';
import { A2A_ERRORS, type A2AVersion } from '../../src/a2a/types.js';

const m = (name: string): A2AMethod => {
  const found = methodOf(name);
  assert.ok(found, name);
  return found.method;
};

const refusal = (method: string, params: unknown, from: A2AVersion, to: A2AVersion): string => {
  const out = translateRequest(m(method), params, from, to);
  assert.equal(out.ok, false, `${method} ${JSON.stringify(params)} was accepted`);
  if (out.ok) return '';
  assert.equal(out.error.code, A2A_ERRORS.invalidParams);
  return out.error.message;
};

const USER_03 = { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }] };

describe('a2a request translation', () => {
  it('between agents of the same version, method and params pass as they are', () => {
    const params = { message: { anything: true } };
    const out = translateRequest(m('message/send'), params, '0.3', '0.3');
    assert.deepEqual(out, { ok: true, method: 'message/send', params });
    assert.equal(out.ok && out.params, params);
    const list = translateRequest(m('ListTasks'), { pageSize: 5 }, '1.0', '1.0');
    assert.deepEqual(list, { ok: true, method: 'ListTasks', params: { pageSize: 5 } });
  });

  it('ListTasks to a 0.3 agent is refused as an unsupported operation, saying why', () => {
    const out = translateRequest(m('ListTasks'), {}, '1.0', '0.3');
    assert.equal(out.ok, false);
    assert.ok(!out.ok);
    assert.equal(out.error.code, A2A_ERRORS.unsupportedOperation);
    assert.match(out.error.message, /ListTasks/);
    assert.match(out.error.message, /0\.3/);
  });

  it('renames every method that has a counterpart', () => {
    for (const method of A2A_METHODS) {
      if (method.v03 === null) continue;
      const up = translateRequest(method, {}, '0.3', '1.0');
      const down = translateRequest(method, {}, '1.0', '0.3');
      if (up.ok) assert.equal(up.method, method.v1);
      if (down.ok) assert.equal(down.method, method.v03);
    }
  });

  it('names the member path of a malformed 0.3 request', () => {
    assert.equal(refusal('message/send', 'x', '0.3', '1.0'), 'params: must be an object');
    assert.equal(refusal('message/send', {}, '0.3', '1.0'), 'params.message: must be an object');
    assert.equal(
      refusal('message/send', { message: { ...USER_03, messageId: '' } }, '0.3', '1.0'),
      'params.message.messageId: is required',
    );
    assert.equal(
      refusal('message/send', { message: { ...USER_03, role: 'system' } }, '0.3', '1.0'),
      'params.message.role: must be "user" or "agent"',
    );
    assert.equal(refusal('message/send', { message: { ...USER_03, parts: 'hi' } }, '0.3', '1.0'), 'params.message.parts: must be an array');
    assert.equal(
      refusal('message/send', { message: { ...USER_03, parts: [7] } }, '0.3', '1.0'),
      'params.message.parts[0]: must be an object',
    );
    assert.equal(
      refusal('message/stream', { message: { ...USER_03, parts: [{ kind: 'text', text: 'a' }, { kind: 'image' }] } }, '0.3', '1.0'),
      'params.message.parts[1].kind: must be "text", "file" or "data"',
    );
    assert.equal(
      refusal('message/send', { message: { ...USER_03, parts: [{ kind: 'file', file: { name: 'x' } }] } }, '0.3', '1.0'),
      'params.message.parts[0].file: must hold bytes or uri',
    );
    assert.equal(
      refusal('message/send', { message: USER_03, configuration: { pushNotificationConfig: {} } }, '0.3', '1.0'),
      'params.configuration.pushNotificationConfig.url: must be a string',
    );
    assert.equal(refusal('tasks/get', { historyLength: 1 }, '0.3', '1.0'), 'params.id: must be a non-empty string');
    assert.equal(
      refusal('tasks/pushNotificationConfig/delete', { id: 't' }, '0.3', '1.0'),
      'params.pushNotificationConfigId: must be a non-empty string',
    );
    assert.equal(
      refusal('tasks/pushNotificationConfig/set', { taskId: 't', pushNotificationConfig: 'x' }, '0.3', '1.0'),
      'params.pushNotificationConfig: must be an object',
    );
  });

  it('names the member path of a malformed 1.0 request', () => {
    assert.equal(
      refusal('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ metadata: {} }] } }, '1.0', '0.3'),
      'params.message.parts[0]: must hold text, raw, url or data',
    );
    assert.equal(
      refusal('SendMessage', { message: { messageId: 'm', parts: [{ raw: 12 }] } }, '1.0', '0.3'),
      'params.message.parts[0].raw: must be a string',
    );
    assert.equal(refusal('CancelTask', { id: '' }, '1.0', '0.3'), 'params.id: must be a non-empty string');
    assert.equal(refusal('ListTaskPushNotificationConfigs', { id: 't' }, '1.0', '0.3'), 'params.taskId: must be a non-empty string');
  });

  it('0.3 blocking becomes 1.0 returnImmediately the way the SDK reads it', () => {
    const config = (configuration: unknown) => {
      const out = translateRequest(m('message/send'), { message: USER_03, configuration }, '0.3', '1.0');
      assert.ok(out.ok);
      return (out.params as { configuration?: unknown }).configuration;
    };
    assert.deepEqual(config({ blocking: true }), {});
    assert.deepEqual(config({ blocking: false }), { returnImmediately: true });
    assert.deepEqual(config({}), { returnImmediately: true });
    const none = translateRequest(m('message/send'), { message: USER_03 }, '0.3', '1.0');
    assert.ok(none.ok);
    assert.equal((none.params as { configuration?: unknown }).configuration, undefined);
  });

  it('1.0 returnImmediately becomes 0.3 blocking, with acceptedOutputModes always written', () => {
    const message = { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] };
    const down = (configuration: unknown) => {
      const out = translateRequest(m('SendMessage'), { message, configuration }, '1.0', '0.3');
      assert.ok(out.ok);
      return (out.params as { configuration?: unknown }).configuration;
    };
    assert.deepEqual(down({}), { blocking: true, acceptedOutputModes: [] });
    assert.deepEqual(down({ returnImmediately: true, historyLength: 2 }), {
      blocking: false,
      acceptedOutputModes: [],
      historyLength: 2,
    });
  });

  it('push configs: the first 0.3 auth scheme survives, 1.0 tenants are dropped for 0.3', () => {
    const up = translateRequest(
      m('tasks/pushNotificationConfig/set'),
      { taskId: 't', pushNotificationConfig: { url: 'https://h', authentication: { schemes: ['Bearer', 'Basic'] } } },
      '0.3',
      '1.0',
    );
    assert.deepEqual(up, {
      ok: true,
      method: 'CreateTaskPushNotificationConfig',
      params: { taskId: 't', url: 'https://h', authentication: { scheme: 'Bearer' } },
    });
    const down = translateRequest(m('CreateTaskPushNotificationConfig'), { tenant: 'acme', taskId: 't', url: 'https://h' }, '1.0', '0.3');
    assert.deepEqual(down, {
      ok: true,
      method: 'tasks/pushNotificationConfig/set',
      params: { taskId: 't', pushNotificationConfig: { url: 'https://h' } },
    });
    const get = translateRequest(m('GetTaskPushNotificationConfig'), { taskId: 't' }, '1.0', '0.3');
    assert.deepEqual(get, { ok: true, method: 'tasks/pushNotificationConfig/get', params: { id: 't' } });
  });

  it('1.0 members under their proto field names are read', () => {
    const out = translateRequest(
      m('SendMessage'),
      { message: { message_id: 'm', context_id: 'c', role: 'ROLE_USER', parts: [{ text: 'x' }], reference_task_ids: ['r'] } },
      '1.0',
      '0.3',
    );
    assert.ok(out.ok);
    assert.deepEqual((out.params as { message: unknown }).message, {
      kind: 'message',
      messageId: 'm',
      contextId: 'c',
      role: 'user',
      parts: [{ kind: 'text', text: 'x' }],
      referenceTaskIds: ['r'],
    });
  });

  it("GetTask's historyLength crosses in both directions, 1.0's decimal-string int32 included", () => {
    assert.deepEqual(translateRequest(m('tasks/get'), { id: 't', historyLength: 0 }, '0.3', '1.0'), {
      ok: true,
      method: 'GetTask',
      params: { id: 't', historyLength: 0 },
    });
    assert.deepEqual(translateRequest(m('GetTask'), { id: 't', historyLength: '5', tenant: 'x' }, '1.0', '0.3'), {
      ok: true,
      method: 'tasks/get',
      params: { id: 't', historyLength: 5 },
    });
  });

  it('the extended card: 0.3 sends no params, 1.0 an empty object', () => {
    assert.deepEqual(translateRequest(m('agent/getAuthenticatedExtendedCard'), undefined, '0.3', '1.0'), {
      ok: true,
      method: 'GetExtendedAgentCard',
      params: {},
    });
    assert.deepEqual(translateRequest(m('GetExtendedAgentCard'), { tenant: 'x' }, '1.0', '0.3'), {
      ok: true,
      method: 'agent/getAuthenticatedExtendedCard',
      params: undefined,
    });
  });
});

describe('a2a answer translation', () => {
  it('a 0.3 message result becomes a 1.0 {message} payload and back', () => {
    const v03 = { kind: 'message', messageId: 'r', role: 'agent', parts: [{ kind: 'text', text: 'ok' }], contextId: 'c' };
    const v1 = translateResult(m('SendMessage'), v03, '0.3', '1.0');
    assert.deepEqual(v1, { message: { messageId: 'r', role: 'ROLE_AGENT', parts: [{ text: 'ok' }], contextId: 'c' } });
    assert.deepEqual(translateResult(m('SendMessage'), v1, '1.0', '0.3'), v03);
  });

  it('a 1.0 status update gets final only on completed, failed, canceled and rejected', () => {
    const final = (state: string) =>
      (translateEvent({ statusUpdate: { taskId: 't', contextId: 'c', status: { state } } }, '1.0', '0.3') as { final: boolean }).final;
    assert.equal(final('TASK_STATE_COMPLETED'), true);
    assert.equal(final('TASK_STATE_REJECTED'), true);
    assert.equal(final('TASK_STATE_INPUT_REQUIRED'), false);
    assert.equal(final('TASK_STATE_AUTH_REQUIRED'), false);
    assert.equal(final('TASK_STATE_WORKING'), false);
  });

  it('0.3 status updates lose final and 0.3 unknown states lose their state on the way to 1.0', () => {
    const v1 = translateEvent(
      { kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'unknown' }, final: true },
      '0.3',
      '1.0',
    );
    assert.deepEqual(v1, { statusUpdate: { taskId: 't', contextId: 'c', status: {} } });
  });

  it('an answer that cannot be read is handed on unchanged, in both directions', () => {
    const broken03 = { kind: 'task', id: 't', contextId: 'c', status: { state: 'working' }, history: 'nope' };
    assert.equal(translateResult(m('tasks/get'), broken03, '0.3', '1.0'), broken03);
    assert.deepEqual(translateEvent({ kind: 'toString' }, '0.3', '1.0'), { kind: 'toString' });
    const unknownEvent = { kind: 'surprise' };
    assert.equal(translateEvent(unknownEvent, '0.3', '1.0'), unknownEvent);
    const emptyEvent = {};
    assert.equal(translateEvent(emptyEvent, '1.0', '0.3'), emptyEvent);
  });

  it('ListTasks and extended-card results pass as they are', () => {
    const card = { name: 'agent', supportedInterfaces: [] };
    assert.equal(translateResult(m('GetExtendedAgentCard'), card, '1.0', '0.3'), card);
    assert.equal(translateResult(m('DeleteTaskPushNotificationConfig'), null, '0.3', '1.0'), null);
  });

  it('an empty 0.3 push-config list is an empty 1.0 answer', () => {
    assert.deepEqual(translateResult(m('ListTaskPushNotificationConfigs'), [], '0.3', '1.0'), {});
    assert.deepEqual(translateResult(m('ListTaskPushNotificationConfigs'), {}, '1.0', '0.3'), []);
  });
});

describe('a2a error translation', () => {
  it('a 0.3 A2A error gains the ErrorInfo a 1.0 client reads its reason from', () => {
    assert.deepEqual(translateError({ code: -32001, message: 'no such task', data: { id: 't' } }, '0.3', '1.0'), {
      code: -32001,
      message: 'no such task',
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }],
    });
    assert.deepEqual(translateError({ code: -32603, message: 'boom', data: { trace: 'x' } }, '0.3', '1.0'), {
      code: -32603,
      message: 'boom',
      data: { trace: 'x' },
    });
  });

  it('a 1.0 error loses its detail list for a 0.3 client and keeps its code', () => {
    const v1 = {
      code: -32002,
      message: 'cannot cancel',
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org' }],
    };
    assert.deepEqual(translateError(v1, '1.0', '0.3'), { code: -32002, message: 'cannot cancel' });
    assert.deepEqual(translateError({ code: -32600, message: 'bad', data: 'why' }, '1.0', '0.3'), {
      code: -32600,
      message: 'bad',
      data: 'why',
    });
  });

  it('the same version passes the error object through', () => {
    const error = { code: -32004, message: 'no' };
    assert.equal(translateError(error, '1.0', '1.0'), error);
  });
});

describe('a2a translation never throws', () => {
  const garbage: unknown[] = [
    undefined,
    null,
    0,
    -1,
    'text',
    true,
    [],
    [null],
    {},
    { message: null },
    { message: [] },
    { message: { parts: [null, 1, 'x', [], {}] } },
    { message: { messageId: 'm', role: 'user', parts: [{ kind: 'file', file: { bytes: 5 } }] } },
    { message: { messageId: 'm', role: 'user', parts: [{ kind: 'data' }] } },
    { configuration: { pushNotificationConfig: { url: 1 } }, message: {} },
    { task: 'x' },
    { task: { status: [], history: {}, artifacts: [1] } },
    { statusUpdate: 1 },
    { artifactUpdate: {} },
    { kind: 'status-update' },
    { kind: 'artifact-update', artifact: null },
    { kind: 'task', history: [{ parts: 'x' }] },
    { configs: 'x' },
    { id: {}, taskId: [], pushNotificationConfig: null },
    Object.create(null),
    { __proto__: { message: USER_03 } },
  ];
  const pairs: [A2AVersion, A2AVersion][] = [
    ['0.3', '1.0'],
    ['1.0', '0.3'],
  ];

  it('garbage params, results, events and errors give answers, not exceptions', () => {
    let checked = 0;
    for (const method of A2A_METHODS) {
      for (const [from, to] of pairs) {
        for (const g of garbage) {
          const out = translateRequest(method, g, from, to);
          if (!out.ok) {
            assert.ok([A2A_ERRORS.invalidParams, A2A_ERRORS.unsupportedOperation].includes(out.error.code as -32602), out.error.message);
          }
          translateResult(method, g, from, to);
          translateEvent(g, from, to);
          translateError(g as never, from, to);
          checked++;
        }
      }
    }
    assert.equal(checked, A2A_METHODS.length * pairs.length * garbage.length);
  });
});
