import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Message, SendMessageResult, StreamResponse, Task } from '@a2a-js/sdk';
import { Role, TaskState, verifyAgentCardSignature } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { isLegacyAgentCard, LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import type { JWK } from 'jose';
import type { MockProvider } from '../../src/mock/index.js';
import { ASKER_QUESTION, startMockProvider, WORKER_DEFAULT_STEPS } from '../../src/mock/index.js';

// A worker told to take this many steps is still running whenever a test needs it to be.
const LONG = 'steps:1000';

function userMessage(text: string, ids: { taskId?: string; contextId?: string } = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: ids.contextId ?? '',
    taskId: ids.taskId ?? '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function send(text: string, ids?: { taskId?: string; contextId?: string }) {
  return { tenant: '', message: userMessage(text, ids), configuration: undefined, metadata: undefined };
}

function isTask(result: SendMessageResult): result is Task {
  return 'status' in result;
}

function textOf(message: Message | undefined): string {
  return (message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

function kinds(events: readonly StreamResponse[]): string[] {
  return events.map((e) => {
    const p = e.payload;
    if (p?.$case === 'statusUpdate') return `status:${TaskState[p.value.status?.state ?? 0]}`;
    return p?.$case ?? 'none';
  });
}

/** The agent's card URL, whole: the SDK resolves its default card path against the origin, not the agent's path. */
function cardUrl(agentUrl: string): string {
  return `${agentUrl}/.well-known/agent-card.json`;
}

/** A client made the way an SDK user makes one: card discovery, then the JSON-RPC transport it names. */
function clientFor(url: string, legacyCompat = false): Promise<Client> {
  const compat = { legacyCompat: { enabled: legacyCompat } };
  return new ClientFactory({
    transports: [new JsonRpcTransportFactory(compat)],
    cardResolver: new DefaultAgentCardResolver(compat),
  }).createFromUrl(cardUrl(url), '');
}

async function rpc(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

function sseData(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>);
}

const legacyMessage = (text: string) => ({
  message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }] },
});

describe('the mock A2A agents, through the official 1.0 client', { timeout: 30_000 }, () => {
  let mock: MockProvider;
  // A push webhook, closed only after the mock: the SDK may still post a task's last event after its stream ended.
  const webhook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      onPush(body);
      res.end();
    });
  });
  let onPush: (body: string) => void = () => undefined;
  before(async () => {
    mock = await startMockProvider({ name: 'agents', protocol: 'a2a', a2aStepMs: 5 });
    await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    await mock.close();
    webhook.closeAllConnections();
    await new Promise((r) => webhook.close(r));
  });

  it('lists its agents at / and serves each card, found by the SDK resolver', async () => {
    const list = (await (await fetch(`${mock.baseUrl}/`)).json()) as { agents: { name: string; card_url: string }[] };
    assert.deepEqual(
      list.agents.map((a) => a.name),
      ['instant', 'worker', 'asker', 'failer'],
    );
    assert.equal(list.agents[1]?.card_url, `${mock.baseUrl}/worker/.well-known/agent-card.json`);
    const card = await new DefaultAgentCardResolver().resolve(cardUrl(`${mock.baseUrl}/worker`), '');
    assert.equal(card.name, 'worker');
    assert.deepEqual(
      card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
      [
        [`${mock.baseUrl}/worker`, 'JSONRPC', '1.0'],
        [`${mock.baseUrl}/worker`, 'JSONRPC', '0.3'],
      ],
    );
    assert.equal(card.capabilities?.streaming, true);
    assert.equal(card.capabilities?.pushNotifications, true);
    assert.equal(card.skills[0]?.id, 'worker');
    assert.equal(card.signatures.length, 0, 'unsigned unless asked');
    assert.equal((await new DefaultAgentCardResolver().resolve(cardUrl(`${mock.baseUrl}/instant`), '')).capabilities?.streaming, true);
  });

  it('serves the hybrid 0.3 card without A2A-Version, the 1.0 card with 1.0, and varies on the header', async () => {
    const bare = await fetch(`${mock.baseUrl}/asker/.well-known/agent-card.json`);
    assert.equal(bare.headers.get('vary'), 'A2A-Version');
    const hybrid = (await bare.json()) as Record<string, unknown>;
    assert.equal(hybrid.url, `${mock.baseUrl}/asker`);
    assert.equal(hybrid.preferredTransport, 'JSONRPC');
    assert.equal(hybrid.protocolVersion, '0.3');
    assert.ok(Array.isArray(hybrid.supportedInterfaces));
    // Both shapes in one document: the SDK's 0.3 detector lets the 1.0 list win.
    assert.equal(isLegacyAgentCard(hybrid), false);
    const v1 = (await (
      await fetch(`${mock.baseUrl}/asker/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as Record<string, unknown>;
    assert.equal(v1.url, undefined);
    assert.equal((v1.supportedInterfaces as unknown[]).length, 2);
  });

  it('SendMessage to instant answers a message echoing the text in the same context', async () => {
    const client = await clientFor(`${mock.baseUrl}/instant`);
    const contextId = randomUUID();
    const result = await client.sendMessage(send('hello there', { contextId }));
    assert.equal(isTask(result), false);
    const message = result as Message;
    assert.equal(message.role, Role.ROLE_AGENT);
    assert.equal(textOf(message), 'echo: hello there');
    assert.equal(message.contextId, contextId);
  });

  it('a streamed worker task goes submitted, working, one artifact per step, completed; GetTask then holds them all', async () => {
    const client = await clientFor(`${mock.baseUrl}/worker`);
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(send('work please'))) events.push(event);
    assert.deepEqual(kinds(events), [
      'task',
      'status:TASK_STATE_WORKING',
      ...Array.from({ length: WORKER_DEFAULT_STEPS }, () => 'artifactUpdate'),
      'status:TASK_STATE_COMPLETED',
    ]);
    const first = events[0]?.payload;
    assert.ok(first?.$case === 'task');
    assert.equal(first.value.status?.state, TaskState.TASK_STATE_SUBMITTED);
    const texts = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value.artifact?.parts[0]?.content] : []));
    assert.deepEqual(
      texts.map((c) => (c?.$case === 'text' ? c.value : '')),
      ['chunk 1', 'chunk 2', 'chunk 3'],
    );

    const task = await client.getTask({ tenant: '', id: first.value.id });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(task.artifacts.length, WORKER_DEFAULT_STEPS);
    assert.equal(task.contextId, first.value.contextId);
  });

  it('steps:N sets the number of artifacts', async () => {
    const client = await clientFor(`${mock.baseUrl}/worker`);
    const result = await client.sendMessage(send('work steps:5'));
    assert.ok(isTask(result));
    assert.equal(result.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(result.artifacts.length, 5);
  });

  it('CancelTask on a running worker task ends it canceled, and its stream with it', async () => {
    const client = await clientFor(`${mock.baseUrl}/worker`);
    const stream = client.sendMessageStream(send(`work ${LONG}`));
    const seen: StreamResponse[] = [];
    let taskId = '';
    for await (const event of stream) {
      seen.push(event);
      if (event.payload?.$case === 'task') taskId = event.payload.value.id;
      if (event.payload?.$case === 'artifactUpdate' && seen.length === 3) {
        const canceled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
        assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      }
      assert.ok(seen.length < 1000, 'the stream went on after the cancel');
    }
    assert.equal(kinds(seen).at(-1), 'status:TASK_STATE_CANCELED');
    assert.equal((await client.getTask({ tenant: '', id: taskId })).status?.state, TaskState.TASK_STATE_CANCELED);
  });

  it('SubscribeToTask joins a running worker task: its snapshot first, then the live events to completion', async () => {
    const client = await clientFor(`${mock.baseUrl}/worker`);
    const original = client.sendMessageStream(send('work steps:40'));
    let taskId = '';
    for await (const event of original) {
      if (event.payload?.$case === 'task') taskId = event.payload.value.id;
      if (event.payload?.$case === 'artifactUpdate') break;
    }
    const other = await clientFor(`${mock.baseUrl}/worker`);
    const events: StreamResponse[] = [];
    for await (const event of other.resubscribeTask({ tenant: '', id: taskId })) events.push(event);
    const first = events[0]?.payload;
    assert.ok(first?.$case === 'task');
    assert.equal(first.value.id, taskId);
    assert.equal(first.value.status?.state, TaskState.TASK_STATE_WORKING);
    assert.ok(events.some((e) => e.payload?.$case === 'artifactUpdate'));
    assert.equal(kinds(events).at(-1), 'status:TASK_STATE_COMPLETED');
  });

  it('asker asks first (input-required), and the next message on that task completes it with the answer', async () => {
    const client = await clientFor(`${mock.baseUrl}/asker`);
    const asked = await client.sendMessage(send('start'));
    assert.ok(isTask(asked));
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(textOf(asked.status?.message), ASKER_QUESTION);
    const done = await client.sendMessage(send('forty-two', { taskId: asked.id, contextId: asked.contextId }));
    assert.ok(isTask(done));
    assert.equal(done.id, asked.id);
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    const answer = done.artifacts.find((a) => a.name === 'answer');
    assert.equal(answer?.parts[0]?.content?.$case === 'text' ? answer.parts[0].content.value : null, 'forty-two');
  });

  it('an asker task waiting for input can be canceled', async () => {
    const client = await clientFor(`${mock.baseUrl}/asker`);
    const asked = await client.sendMessage(send('start'));
    assert.ok(isTask(asked));
    const canceled = await client.cancelTask({ tenant: '', id: asked.id, metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  });

  it('failer fails a task whose text says fail, and completes any other', async () => {
    const client = await clientFor(`${mock.baseUrl}/failer`);
    const failed = await client.sendMessage(send('please fail now'));
    assert.ok(isTask(failed));
    assert.equal(failed.status?.state, TaskState.TASK_STATE_FAILED);
    const ok = await client.sendMessage(send('all good'));
    assert.ok(isTask(ok));
    assert.equal(ok.status?.state, TaskState.TASK_STATE_COMPLETED);
  });

  it('takes 0.3 method names on the same endpoint and answers in 0.3 shapes', async () => {
    const sent = await rpc(`${mock.baseUrl}/instant`, { jsonrpc: '2.0', id: 'a', method: 'message/send', params: legacyMessage('old') });
    assert.equal(sent.status, 200);
    const message = (JSON.parse(sent.text) as { result: Record<string, unknown> }).result;
    assert.equal(message.kind, 'message');
    assert.equal(message.role, 'agent');
    assert.deepEqual(message.parts, [{ kind: 'text', text: 'echo: old', metadata: {} }]);

    const streamed = await rpc(`${mock.baseUrl}/worker`, {
      jsonrpc: '2.0',
      id: 7,
      method: 'message/stream',
      params: legacyMessage('steps:2'),
    });
    assert.equal(streamed.type, 'text/event-stream');
    const events = sseData(streamed.text).map((e) => e.result as Record<string, unknown>);
    assert.deepEqual(
      events.map((e) => (e.kind === 'status-update' ? `status:${(e.status as { state: string }).state}` : e.kind)),
      ['task', 'status:working', 'artifact-update', 'artifact-update', 'status:completed'],
    );
    assert.equal(events.at(-1)?.final, true);
    const taskId = events[0]?.id as string;

    const got = await rpc(`${mock.baseUrl}/worker`, { jsonrpc: '2.0', id: 8, method: 'tasks/get', params: { id: taskId } });
    const task = (JSON.parse(got.text) as { result: { kind: string; status: { state: string } } }).result;
    assert.equal(task.kind, 'task');
    assert.equal(task.status.state, 'completed');
  });

  it('0.3 tasks/cancel and tasks/resubscribe reach a running worker task', async () => {
    const url = `${mock.baseUrl}/worker`;
    const started = await rpc(url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { ...legacyMessage(`work ${LONG}`), configuration: { blocking: false } },
    });
    const task = (JSON.parse(started.text) as { result: { id: string; kind: string } }).result;
    assert.equal(task.kind, 'task');
    const resubscribed = fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/resubscribe', params: { id: task.id } }),
    });
    const res = await resubscribed;
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body?.getReader();
    assert.ok(reader);
    const firstChunk = new TextDecoder().decode((await reader.read()).value);
    assert.equal((sseData(firstChunk)[0]?.result as { kind: string } | undefined)?.kind, 'task');
    const canceled = await rpc(url, { jsonrpc: '2.0', id: 3, method: 'tasks/cancel', params: { id: task.id } });
    assert.equal((JSON.parse(canceled.text) as { result: { status: { state: string } } }).result.status.state, 'canceled');
    await reader.cancel();
  });

  it('ListTasks lists the worker tasks, and a push config on a running task gets its events posted to the webhook', async () => {
    const posts: string[] = [];
    const canceledPosted = new Promise<void>((r) => {
      onPush = (body) => {
        posts.push(body);
        if (body.includes('TASK_STATE_CANCELED')) r();
      };
    });
    const client = await clientFor(`${mock.baseUrl}/worker`);
    const stream = client.sendMessageStream(send(`work ${LONG}`));
    const first = await stream.next();
    assert.ok(first.value?.payload?.$case === 'task');
    const taskId = first.value.payload.value.id;
    const url = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/hook`;
    const created = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'hook-1',
      taskId,
      url,
      token: 'tok',
      authentication: undefined,
    });
    assert.equal(created.url, url);
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 10, pageToken: '' });
    assert.deepEqual(
      listed.configs.map((c) => c.id),
      ['hook-1'],
    );
    const tasks = await client.listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    assert.ok(tasks.tasks.some((t) => t.id === taskId));
    await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    await canceledPosted;
    assert.ok(posts.length >= 2, 'the events after the config was made, then the cancel');
    assert.ok(posts.every((p) => p.includes(taskId)));
    await stream.return(undefined);
  });

  it('an unknown agent is a 404, and a GET on an agent endpoint a 405', async () => {
    assert.equal((await fetch(`${mock.baseUrl}/nobody`, { method: 'POST', body: '{}' })).status, 404);
    assert.equal((await fetch(`${mock.baseUrl}/nobody/.well-known/agent-card.json`)).status, 404);
    const get = await fetch(`${mock.baseUrl}/worker`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
  });

  it('a body that is not JSON is a JSON-RPC parse error', async () => {
    const res = await fetch(`${mock.baseUrl}/instant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { code: number } }).error.code, -32700);
  });

  it('counts requests by agent and method as sent, and card fetches, and keeps the headers each agent saw last', async () => {
    const own = await startMockProvider({ name: 'counted', protocol: 'a2a' });
    try {
      await fetch(`${own.baseUrl}/failer/.well-known/agent-card.json`, { headers: { authorization: 'Bearer card' } });
      await rpc(`${own.baseUrl}/failer`, { jsonrpc: '2.0', id: 1, method: 'message/send', params: legacyMessage('x') });
      await rpc(
        `${own.baseUrl}/failer`,
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'y' }] } },
        },
        { 'A2A-Version': '1.0', authorization: 'Bearer rpc' },
      );
      const stats = own.a2aStats();
      assert.deepEqual(stats.requests, { 'failer card': 1, 'failer message/send': 1, 'failer SendMessage': 1 });
      assert.deepEqual(stats.agents.failer, {
        last_rpc: { method: 'SendMessage', a2a_version: '1.0', authorization: 'Bearer rpc' },
        last_card: { a2a_version: null, authorization: 'Bearer card' },
      });
      assert.equal(stats.agents.worker, undefined, 'the worker received nothing');
      assert.deepEqual(await (await fetch(`${own.baseUrl}/__mock/a2a`)).json(), stats);
      assert.equal(own.stats().requests['POST /failer'], 2);
      await fetch(`${own.baseUrl}/__mock/reset`, { method: 'POST' });
      assert.deepEqual(own.a2aStats(), { requests: {}, agents: {} });
    } finally {
      await own.close();
    }
  });
});

describe('the mock A2A agents, one version only', { timeout: 30_000 }, () => {
  it('a 0.3-only mock serves a pure 0.3 card and speaks to the SDK legacy client', async () => {
    const own = await startMockProvider({ name: 'old', protocol: 'a2a', a2aVersions: ['0.3'], a2aStepMs: 1 });
    try {
      const card = (await (
        await fetch(`${own.baseUrl}/worker/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
      ).json()) as Record<string, unknown>;
      assert.equal(card.url, `${own.baseUrl}/worker`);
      assert.equal(card.preferredTransport, 'JSONRPC');
      assert.equal(card.protocolVersion, '0.3.0');
      assert.equal(card.supportedInterfaces, undefined);
      assert.equal(isLegacyAgentCard(card), true);

      const client = await clientFor(`${own.baseUrl}/worker`, true);
      const events: StreamResponse[] = [];
      for await (const event of client.sendMessageStream(send('work steps:2'))) events.push(event);
      assert.deepEqual(kinds(events), [
        'task',
        'status:TASK_STATE_WORKING',
        'artifactUpdate',
        'artifactUpdate',
        'status:TASK_STATE_COMPLETED',
      ]);
      const instant = await clientFor(`${own.baseUrl}/instant`, true);
      assert.equal(textOf((await instant.sendMessage(send('hi'))) as Message), 'echo: hi');
      assert.deepEqual(own.a2aStats().requests, {
        'worker card': 2,
        'worker message/stream': 1,
        'instant card': 1,
        'instant message/send': 1,
      });

      const direct = new LegacyJsonRpcTransport({ endpoint: `${own.baseUrl}/failer` });
      const failed = await direct.sendMessage(send('fail please'));
      assert.ok(isTask(failed));
      assert.equal(failed.status?.state, TaskState.TASK_STATE_FAILED);

      const refused = await rpc(
        `${own.baseUrl}/instant`,
        { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: {} } },
        { 'A2A-Version': '1.0' },
      );
      assert.equal((JSON.parse(refused.text) as { error: { code: number } }).error.code, -32601);
    } finally {
      await own.close();
    }
  });

  it('a 1.0-only mock advertises 1.0 alone and refuses message/send as method not found', async () => {
    const own = await startMockProvider({ name: 'new', protocol: 'a2a', a2aVersions: ['1.0'] });
    try {
      const card = (await (await fetch(`${own.baseUrl}/instant/.well-known/agent-card.json`)).json()) as {
        supportedInterfaces: { protocolVersion: string }[];
        url?: string;
      };
      assert.deepEqual(
        card.supportedInterfaces.map((i) => i.protocolVersion),
        ['1.0'],
      );
      assert.equal(card.url, undefined);
      const refused = await rpc(`${own.baseUrl}/instant`, { jsonrpc: '2.0', id: 5, method: 'message/send', params: legacyMessage('x') });
      const body = JSON.parse(refused.text) as { id: number; error: { code: number } };
      assert.equal(body.error.code, -32601);
      assert.equal(body.id, 5);
      const client = await clientFor(`${own.baseUrl}/instant`);
      assert.equal(textOf((await client.sendMessage(send('hi'))) as Message), 'echo: hi');
    } finally {
      await own.close();
    }
  });
});

describe('the mock A2A card options', { timeout: 30_000 }, () => {
  it('signed cards carry a JWS the SDK verifies with the key at /.well-known/jwks.json, in both card shapes', async () => {
    const own = await startMockProvider({ name: 'signed', protocol: 'a2a', a2aSignedCards: true });
    try {
      const jwks = (await (await fetch(`${own.baseUrl}/.well-known/jwks.json`)).json()) as {
        keys: (Record<string, unknown> & { kid: string })[];
      };
      const key = jwks.keys[0];
      assert.ok(key);
      const card = await new DefaultAgentCardResolver().resolve(cardUrl(`${own.baseUrl}/worker`), '');
      assert.equal(card.signatures.length, 1);
      await verifyAgentCardSignature(async (kid) => {
        assert.equal(kid, key.kid);
        return key as JWK;
      })(card);
      const hybrid = (await (await fetch(`${own.baseUrl}/worker/.well-known/agent-card.json`)).json()) as { signatures?: unknown[] };
      assert.equal(hybrid.signatures?.length, 1);
    } finally {
      await own.close();
    }
  });

  it('a2aPublicUrl is the base the cards and the agent list name', async () => {
    const own = await startMockProvider({ name: 'public', protocol: 'a2a', a2aPublicUrl: 'https://agents.example.com/a2a/' });
    try {
      const card = (await (
        await fetch(`${own.baseUrl}/asker/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
      ).json()) as {
        supportedInterfaces: { url: string }[];
      };
      assert.deepEqual(new Set(card.supportedInterfaces.map((i) => i.url)), new Set(['https://agents.example.com/a2a/asker']));
      const list = (await (await fetch(`${own.baseUrl}/`)).json()) as { agents: { card_url: string }[] };
      assert.equal(list.agents[0]?.card_url, 'https://agents.example.com/a2a/instant/.well-known/agent-card.json');
    } finally {
      await own.close();
    }
  });

  it('A2A options are refused without protocol a2a, and bad ones with it', () => {
    assert.throws(() => startMockProvider({ name: 'x', a2aVersions: ['1.0'] }), /only applies with protocol a2a/);
    assert.throws(() => startMockProvider({ name: 'x', protocol: 'a2a', a2aVersions: [] }), /a2aVersions/);
    assert.throws(() => startMockProvider({ name: 'x', protocol: 'a2a', a2aVersions: ['2.0' as '1.0'] }), /a2aVersions/);
    assert.throws(() => startMockProvider({ name: 'x', protocol: 'a2a', a2aPublicUrl: 'ftp://x' }), /a2aPublicUrl/);
    assert.throws(() => startMockProvider({ name: 'x', protocol: 'a2a', a2aStepMs: -1 }), /a2aStepMs/);
  });

  it('close() ends a worker mid-task and a stream that waits on it', async () => {
    const own = await startMockProvider({ name: 'closing', protocol: 'a2a', a2aStepMs: 50 });
    const client = await clientFor(`${own.baseUrl}/worker`);
    const stream = client.sendMessageStream(send(`work ${LONG}`));
    const first = await stream.next();
    assert.equal(first.value?.payload?.$case, 'task');
    await own.close();
    await assert.rejects(async () => {
      for await (const _ of stream) {
        // drained until the connection drops
      }
      throw new Error('ended');
    });
  });
});

describe('switchyard mock-provider --protocol a2a', { timeout: 90_000 }, () => {
  it('serves the agents with the flags it was given, and exits 0 on SIGTERM', async () => {
    const cli = resolve(import.meta.dirname, '../../src/cli.ts');
    const args = ['--import', 'tsx', cli, 'mock-provider', '--port', '0', '--name', 'cli', '--protocol', 'a2a', '--a2a-versions', '0.3'];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      const origin = await new Promise<string>((res, rej) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /listening on (http:\/\/127\.0\.0\.1:\d+) \(A2A agents at/.exec(out);
          if (m !== null) res(m[1] as string);
        });
        void exited.then((code) => rej(new Error(`mock-provider exited (${code}) before listening:\n${out}`)));
      });
      const card = (await (await fetch(`${origin}/instant/.well-known/agent-card.json`)).json()) as Record<string, unknown>;
      assert.equal(card.protocolVersion, '0.3.0');
      const sent = await rpc(`${origin}/instant`, { jsonrpc: '2.0', id: 1, method: 'message/send', params: legacyMessage('cli') });
      assert.equal((JSON.parse(sent.text) as { result: { parts: { text: string }[] } }).result.parts[0]?.text, 'echo: cli');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      clearTimeout(killer);
      assert.equal(code, 0, 'mock-provider did not exit 0 on SIGTERM');
    }
  });

  it('refuses A2A flags without --protocol a2a', async () => {
    const cli = resolve(import.meta.dirname, '../../src/cli.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', cli, 'mock-provider', '--port', '0', '--name', 'x', '--a2a-step-ms', '5'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    assert.notEqual(await new Promise((r) => child.once('exit', r)), 0);
    assert.match(err, /--a2a-step-ms only applies with --protocol a2a/);
  });
});
