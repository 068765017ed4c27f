// Proof against the reference SDK's own 0.3 compatibility layer: its server handler (a 0.3
// client in front of a 1.0 agent) and its client transport (a 1.0 client in front of a 0.3
// agent) must see exactly what the gateway's translation produces, both ways.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import {
  ContentTypeNotSupportedError,
  InvalidAgentResponseError,
  PushNotificationNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { type A2ARequestHandler, JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { type A2AMethod, methodOf } from '../../src/a2a/methods.js';
import { translateError, translateEvent, translateRequest, translateResult } from '../../src/a2a/translate.js';
import type { JsonRpcErrorObject } from '../../src/a2a/types.js';

const m = (name: string): A2AMethod => {
  const found = methodOf(name);
  assert.ok(found, name);
  return found.method;
};

const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

// A realistic 1.0 task: every part kind, a data part that is not an object, history, metadata.
const V1_TASK_JSON = {
  id: 'task-1',
  contextId: 'ctx-1',
  status: {
    state: 'TASK_STATE_COMPLETED',
    message: { messageId: 'm2', contextId: 'ctx-1', taskId: 'task-1', role: 'ROLE_AGENT', parts: [{ text: 'done' }] },
    timestamp: '2026-01-01T00:00:00.000Z',
  },
  artifacts: [
    {
      artifactId: 'a1',
      name: 'report',
      description: 'the report',
      parts: [
        { text: 'summary', metadata: { lang: 'en' } },
        { raw: 'aGVsbG8gd29ybGQ=', filename: 'hello.txt', mediaType: 'text/plain' },
        { url: 'https://files.example/chart.png', mediaType: 'image/png' },
        { data: { rows: [1, 2], nested: { ok: true } } },
        { data: [1, 2, 3], metadata: { source: 'calc' } },
        { data: 'just a string' },
      ],
      metadata: { size: 3 },
      extensions: ['https://ext.example/a'],
    },
  ],
  history: [
    {
      messageId: 'm1',
      contextId: 'ctx-1',
      taskId: 'task-1',
      role: 'ROLE_USER',
      parts: [{ text: 'make a report' }, { url: 'https://files.example/in.csv', filename: 'in.csv' }],
      metadata: { client: 'x' },
      extensions: ['https://ext.example/a'],
      referenceTaskIds: ['task-0'],
    },
  ],
  metadata: { owner: 'team' },
};
const V1_TASK = Task.fromJSON(V1_TASK_JSON);

const V1_EVENTS_JSON = [
  { task: { id: 'task-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_SUBMITTED' } } },
  { statusUpdate: { taskId: 'task-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_WORKING' }, metadata: { p: 1 } } },
  {
    artifactUpdate: {
      taskId: 'task-1',
      contextId: 'ctx-1',
      artifact: { artifactId: 'a1', parts: [{ raw: 'AAEC', filename: 'b.bin' }, { data: { k: 'v' } }] },
      append: true,
      lastChunk: true,
    },
  },
  {
    statusUpdate: {
      taskId: 'task-1',
      contextId: 'ctx-1',
      status: { state: 'TASK_STATE_INPUT_REQUIRED', message: { messageId: 'q', role: 'ROLE_AGENT', parts: [{ text: '?' }] } },
    },
  },
  { statusUpdate: { taskId: 'task-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_COMPLETED' } } },
  { message: { messageId: 'm3', contextId: 'ctx-1', role: 'ROLE_AGENT', parts: [{ text: 'bye' }] } },
];
const V1_EVENTS = V1_EVENTS_JSON.map((e) => StreamResponse.fromJSON(e));

const PUSH_CONFIG = TaskPushNotificationConfig.fromJSON({
  id: 'cfg-1',
  taskId: 'task-1',
  url: 'https://hook.example/a2a',
  token: 'tok',
  authentication: { scheme: 'Bearer', credentials: 'secret' },
});

/** A 1.0 agent behind the SDK's 0.3 server handler, recording what each call received. */
function legacyServer() {
  const received: Record<string, unknown> = {};
  const handler = {
    getAgentCard: async () => ({ capabilities: { streaming: true } }),
    getAuthenticatedExtendedAgentCard: async () => {
      throw new Error('not used');
    },
    sendMessage: async (params: unknown) => {
      received.sendMessage = params;
      return V1_TASK;
    },
    sendMessageStream: async function* (params: unknown) {
      received.sendMessageStream = params;
      yield* V1_EVENTS;
    },
    getTask: async (params: unknown) => {
      received.getTask = params;
      return V1_TASK;
    },
    cancelTask: async (params: unknown) => {
      received.cancelTask = params;
      return V1_TASK;
    },
    createTaskPushNotificationConfig: async (params: unknown) => {
      received.createTaskPushNotificationConfig = params;
      return PUSH_CONFIG;
    },
    getTaskPushNotificationConfig: async (params: unknown) => {
      received.getTaskPushNotificationConfig = params;
      return PUSH_CONFIG;
    },
    listTaskPushNotificationConfigs: async (params: unknown) => {
      received.listTaskPushNotificationConfigs = params;
      return { configs: [PUSH_CONFIG, PUSH_CONFIG], nextPageToken: '' };
    },
    deleteTaskPushNotificationConfig: async (params: unknown) => {
      received.deleteTaskPushNotificationConfig = params;
    },
    resubscribe: async function* (params: unknown) {
      received.resubscribe = params;
      yield* V1_EVENTS;
    },
    listTasks: async () => {
      throw new Error('not used');
    },
  } as unknown as A2ARequestHandler;
  const transport = new LegacyJsonRpcTransportHandler(handler);
  const call = async (method: string, params: unknown) => {
    const answer = await transport.handle({ jsonrpc: '2.0', id: 1, method, params }, new ServerCallContext());
    if (Symbol.asyncIterator in answer) {
      const events: unknown[] = [];
      for await (const e of answer) events.push(plain(e.result));
      return events;
    }
    assert.equal(answer.error, undefined, JSON.stringify(answer.error));
    return plain(answer.result);
  };
  return { received, call };
}

const SEND_03 = {
  message: {
    kind: 'message',
    messageId: 'm1',
    role: 'user',
    contextId: 'ctx-1',
    taskId: 'task-1',
    parts: [
      { kind: 'text', text: 'make a report', metadata: { a: 1 } },
      { kind: 'file', file: { bytes: 'aGVsbG8=', name: 'h.txt', mimeType: 'text/plain' } },
      { kind: 'file', file: { uri: 'https://files.example/in.csv' } },
      { kind: 'data', data: { q: [1, 2] } },
      { kind: 'data', data: { value: 42 }, metadata: { data_part_compat: true, keep: 'me' } },
    ],
    referenceTaskIds: ['task-0'],
    extensions: ['https://ext.example/a'],
    metadata: { m: true },
  },
  configuration: {
    acceptedOutputModes: ['text/plain'],
    historyLength: 3,
    blocking: true,
    pushNotificationConfig: {
      id: 'cfg',
      url: 'https://hook.example/a2a',
      token: 't',
      authentication: { schemes: ['Bearer', 'Basic'], credentials: 'c' },
    },
  },
  metadata: { request: 1 },
};

describe('a2a translation against the SDK server handler (0.3 client, 1.0 agent)', () => {
  it('message/send: the 1.0 request the agent receives and the 0.3 task the client gets', async () => {
    const server = legacyServer();
    const sdkResult = await server.call('message/send', SEND_03);
    const ours = translateRequest(m('message/send'), SEND_03, '0.3', '1.0');
    assert.ok(ours.ok);
    assert.equal(ours.method, 'SendMessage');
    assert.deepEqual(SendMessageRequest.fromJSON(ours.params), server.received.sendMessage);
    const v1Result = { task: Task.toJSON(V1_TASK) };
    assert.deepEqual(translateResult(m('SendMessage'), v1Result, '1.0', '0.3'), sdkResult);
  });

  it('configurations with blocking false, left out, or no configuration at all', async () => {
    for (const configuration of [{ blocking: false }, { acceptedOutputModes: [] }, undefined]) {
      const server = legacyServer();
      const params = { message: SEND_03.message, ...(configuration ? { configuration } : {}) };
      await server.call('message/send', params);
      const ours = translateRequest(m('message/send'), params, '0.3', '1.0');
      assert.ok(ours.ok);
      assert.deepEqual(SendMessageRequest.fromJSON(ours.params), server.received.sendMessage, JSON.stringify(configuration));
    }
  });

  it('message/stream: every event, final set the way the SDK sets it', async () => {
    const server = legacyServer();
    const sdkEvents = (await server.call('message/stream', SEND_03)) as unknown[];
    const ours = translateRequest(m('message/stream'), SEND_03, '0.3', '1.0');
    assert.ok(ours.ok);
    assert.deepEqual(SendMessageRequest.fromJSON(ours.params), server.received.sendMessageStream);
    const translated = V1_EVENTS.map((e) => translateEvent(StreamResponse.toJSON(e), '1.0', '0.3'));
    assert.deepEqual(translated, sdkEvents);
    assert.deepEqual(
      sdkEvents.filter((e) => (e as { kind: string }).kind === 'status-update').map((e) => (e as { final: boolean }).final),
      [false, false, true],
    );
  });

  it('tasks/get, tasks/cancel and tasks/resubscribe', async () => {
    const server = legacyServer();
    const get03 = { id: 'task-1', historyLength: 2, metadata: { x: 1 } };
    assert.deepEqual(translateResult(m('GetTask'), Task.toJSON(V1_TASK), '1.0', '0.3'), await server.call('tasks/get', get03));
    const get = translateRequest(m('tasks/get'), get03, '0.3', '1.0');
    assert.ok(get.ok);
    assert.deepEqual(GetTaskRequest.fromJSON(get.params), server.received.getTask);

    const cancel03 = { id: 'task-1', metadata: { why: 'user' } };
    assert.deepEqual(translateResult(m('CancelTask'), Task.toJSON(V1_TASK), '1.0', '0.3'), await server.call('tasks/cancel', cancel03));
    const cancel = translateRequest(m('tasks/cancel'), cancel03, '0.3', '1.0');
    assert.ok(cancel.ok);
    assert.deepEqual(CancelTaskRequest.fromJSON(cancel.params), server.received.cancelTask);

    const events = await server.call('tasks/resubscribe', { id: 'task-1' });
    const sub = translateRequest(m('tasks/resubscribe'), { id: 'task-1' }, '0.3', '1.0');
    assert.ok(sub.ok);
    assert.deepEqual(SubscribeToTaskRequest.fromJSON(sub.params), server.received.resubscribe);
    assert.deepEqual(
      V1_EVENTS.map((e) => translateEvent(StreamResponse.toJSON(e), '1.0', '0.3')),
      events,
    );
  });

  it('push configs: set, get (with and without a config id), list and delete', async () => {
    const server = legacyServer();
    const cases: [string, unknown, string, (p: unknown) => unknown][] = [
      [
        'tasks/pushNotificationConfig/set',
        { taskId: 'task-1', pushNotificationConfig: { url: 'https://hook.example/a2a', token: 't', id: 'cfg' } },
        'createTaskPushNotificationConfig',
        (p) => TaskPushNotificationConfig.fromJSON(p),
      ],
      [
        'tasks/pushNotificationConfig/get',
        { id: 'task-1', pushNotificationConfigId: 'cfg-1' },
        'getTaskPushNotificationConfig',
        (p) => GetTaskPushNotificationConfigRequest.fromJSON(p),
      ],
      [
        'tasks/pushNotificationConfig/get',
        { id: 'task-1' },
        'getTaskPushNotificationConfig',
        (p) => GetTaskPushNotificationConfigRequest.fromJSON(p),
      ],
      [
        'tasks/pushNotificationConfig/list',
        { id: 'task-1' },
        'listTaskPushNotificationConfigs',
        (p) => ListTaskPushNotificationConfigsRequest.fromJSON(p),
      ],
      [
        'tasks/pushNotificationConfig/delete',
        { id: 'task-1', pushNotificationConfigId: 'cfg-1' },
        'deleteTaskPushNotificationConfig',
        (p) => DeleteTaskPushNotificationConfigRequest.fromJSON(p),
      ],
    ];
    for (const [name, params, hook, parse] of cases) {
      const sdkResult = await server.call(name, params);
      const ours = translateRequest(m(name), params, '0.3', '1.0');
      assert.ok(ours.ok, name);
      assert.deepEqual(parse(ours.params), server.received[hook], name);
      const v1Result =
        hook === 'listTaskPushNotificationConfigs'
          ? ListTaskPushNotificationConfigsResponse.toJSON({ configs: [PUSH_CONFIG, PUSH_CONFIG], nextPageToken: '' })
          : hook === 'deleteTaskPushNotificationConfig'
            ? null
            : TaskPushNotificationConfig.toJSON(PUSH_CONFIG);
      assert.deepEqual(translateResult(m(name), v1Result, '1.0', '0.3'), sdkResult, name);
    }
  });
});

/** A 0.3 agent behind the SDK's 0.3 client transport: records the body sent, answers `reply`. */
function legacyAgent(reply: unknown, stream = false) {
  const sent: unknown[] = [];
  const fetchImpl = async (_url: unknown, init?: RequestInit): Promise<Response> => {
    const body = JSON.parse(String(init?.body)) as { id: number };
    sent.push(body);
    if (!stream) return Response.json({ jsonrpc: '2.0', id: body.id, result: reply });
    const frames = (reply as unknown[]).map((r) => `data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: r })}\n\n`);
    return new Response(frames.join(''), { headers: { 'content-type': 'text/event-stream' } });
  };
  return { sent, transport: new LegacyJsonRpcTransport({ endpoint: 'http://agent.invalid/a2a', fetchImpl }) };
}

const V03_TASK = translateResult(m('GetTask'), Task.toJSON(V1_TASK), '1.0', '0.3');

describe('a2a translation against the SDK client transport (1.0 client, 0.3 agent)', () => {
  it('SendMessage: the 0.3 body the agent receives and the 1.0 task the client gets', async () => {
    const agent = legacyAgent(V03_TASK);
    const request = SendMessageRequest.fromJSON({
      message: Message.toJSON(Task.fromJSON(V1_TASK_JSON).history[0] as Message),
      configuration: {
        acceptedOutputModes: ['text/plain'],
        historyLength: 1,
        returnImmediately: true,
        taskPushNotificationConfig: { url: 'https://hook.example/a2a', token: 't', authentication: { scheme: 'Bearer' } },
      },
      metadata: { r: 1 },
    });
    const got = await agent.transport.sendMessage(request);
    const ours = translateRequest(m('SendMessage'), SendMessageRequest.toJSON(request), '1.0', '0.3');
    assert.ok(ours.ok);
    assert.equal(ours.method, 'message/send');
    assert.deepEqual(ours.params, (agent.sent[0] as { params: unknown }).params);
    assert.deepEqual(translateResult(m('message/send'), V03_TASK, '0.3', '1.0'), { task: Task.toJSON(got as Task) });
  });

  it('SendStreamingMessage: each 0.3 event as the SDK client reads it', async () => {
    const v03Events = V1_EVENTS.map((e) => translateEvent(StreamResponse.toJSON(e), '1.0', '0.3'));
    const agent = legacyAgent(v03Events, true);
    const request = SendMessageRequest.fromJSON({ message: { messageId: 'x', role: 'ROLE_USER', parts: [{ text: 'go' }] } });
    const got: unknown[] = [];
    for await (const e of agent.transport.sendMessageStream(request)) got.push(StreamResponse.toJSON(e));
    const ours = translateRequest(m('SendStreamingMessage'), SendMessageRequest.toJSON(request), '1.0', '0.3');
    assert.ok(ours.ok);
    assert.deepEqual(ours.params, (agent.sent[0] as { params: unknown }).params);
    assert.deepEqual(
      v03Events.map((e) => translateEvent(e, '0.3', '1.0')),
      got,
    );
  });

  it('GetTask, CancelTask and the push-config calls', async () => {
    const v03Config = translateResult(m('GetTaskPushNotificationConfig'), TaskPushNotificationConfig.toJSON(PUSH_CONFIG), '1.0', '0.3');
    const calls: [string, unknown, unknown, (t: LegacyJsonRpcTransport) => Promise<unknown>, (r: unknown) => unknown][] = [
      [
        'GetTask',
        { id: 'task-1', historyLength: 4 },
        V03_TASK,
        (t) => t.getTask(GetTaskRequest.fromJSON({ id: 'task-1', historyLength: 4 })),
        (r) => Task.toJSON(r as Task),
      ],
      [
        'CancelTask',
        { id: 'task-1', metadata: { a: 1 } },
        V03_TASK,
        (t) => t.cancelTask(CancelTaskRequest.fromJSON({ id: 'task-1', metadata: { a: 1 } })),
        (r) => Task.toJSON(r as Task),
      ],
      [
        'CreateTaskPushNotificationConfig',
        TaskPushNotificationConfig.toJSON(PUSH_CONFIG),
        v03Config,
        (t) => t.createTaskPushNotificationConfig(PUSH_CONFIG),
        (r) => TaskPushNotificationConfig.toJSON(r as TaskPushNotificationConfig),
      ],
      [
        'GetTaskPushNotificationConfig',
        { taskId: 'task-1', id: 'cfg-1' },
        v03Config,
        (t) => t.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON({ taskId: 'task-1', id: 'cfg-1' })),
        (r) => TaskPushNotificationConfig.toJSON(r as TaskPushNotificationConfig),
      ],
      [
        'ListTaskPushNotificationConfigs',
        { taskId: 'task-1' },
        [v03Config],
        (t) => t.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: 'task-1' })),
        (r) => ListTaskPushNotificationConfigsResponse.toJSON(r as ListTaskPushNotificationConfigsResponse),
      ],
      [
        'DeleteTaskPushNotificationConfig',
        { taskId: 'task-1', id: 'cfg-1' },
        null,
        (t) => t.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: 'task-1', id: 'cfg-1' })),
        () => null,
      ],
    ];
    for (const [name, v1Params, v03Reply, invoke, toJson] of calls) {
      const agent = legacyAgent(v03Reply);
      const got = toJson(await invoke(agent.transport));
      const ours = translateRequest(m(name), v1Params, '1.0', '0.3');
      assert.ok(ours.ok, name);
      const sent = agent.sent[0] as { method: string; params?: unknown };
      assert.equal(ours.method, sent.method, name);
      assert.deepEqual(ours.params, sent.params, name);
      assert.deepEqual(translateResult(m(name), v03Reply, '0.3', '1.0'), got, name);
    }
  });
});

describe('a2a round trips 1.0 -> 0.3 -> 1.0', () => {
  it('a task with file, data and text parts comes back as the SDK writes it', () => {
    const v1 = Task.toJSON(V1_TASK);
    const back = translateResult(m('GetTask'), translateResult(m('GetTask'), v1, '1.0', '0.3'), '0.3', '1.0');
    assert.deepEqual(back, v1);
  });

  it('every stream event comes back unchanged', () => {
    for (const event of V1_EVENTS) {
      const v1 = StreamResponse.toJSON(event);
      assert.deepEqual(translateEvent(translateEvent(v1, '1.0', '0.3'), '0.3', '1.0'), v1);
    }
  });

  it('a SendMessage request comes back unchanged', () => {
    const v1 = SendMessageRequest.toJSON(
      SendMessageRequest.fromJSON({
        message: V1_TASK_JSON.history[0],
        configuration: { acceptedOutputModes: ['a'], historyLength: 0, taskPushNotificationConfig: { url: 'https://h', id: 'c' } },
        metadata: { k: 1 },
      }),
    );
    const to03 = translateRequest(m('SendMessage'), v1, '1.0', '0.3');
    assert.ok(to03.ok);
    const back = translateRequest(m('SendMessage'), to03.params, '0.3', '1.0');
    assert.ok(back.ok);
    assert.deepEqual(back.params, v1);
  });
});

describe('a2a error translation against the SDK handlers of both versions', () => {
  it("an A2A error a 1.0 agent throws reaches each client as that version's SDK handler writes it", async () => {
    const errors = [
      new TaskNotFoundError({ message: 'no task t' }),
      new TaskNotCancelableError({ message: 'done already' }),
      new PushNotificationNotSupportedError({ message: 'no push' }),
      new UnsupportedOperationError({ message: 'nope' }),
      new ContentTypeNotSupportedError({ message: 'no pdf' }),
      new InvalidAgentResponseError({ message: 'bad answer' }),
    ];
    for (const error of errors) {
      const handler = {
        getTask: async () => {
          throw error;
        },
      } as unknown as A2ARequestHandler;
      const v1 = await new JsonRpcTransportHandler(handler).handle(
        { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 't' } },
        new ServerCallContext(),
      );
      const v03 = await new LegacyJsonRpcTransportHandler(handler).handle(
        { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 't' } },
        new ServerCallContext(),
      );
      assert.ok(!(Symbol.asyncIterator in v1) && !(Symbol.asyncIterator in v03));
      const v1Error = plain(v1.error) as JsonRpcErrorObject;
      const v03Error = plain(v03.error) as JsonRpcErrorObject;
      assert.deepEqual(translateError(v1Error, '1.0', '0.3'), v03Error, error.name);
      assert.deepEqual(translateError(v03Error, '0.3', '1.0'), v1Error, error.name);
    }
  });
});
