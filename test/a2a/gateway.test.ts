import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  Role,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskState,
  verifyAgentCardSignature,
} from '@a2a-js/sdk';
import { JsonRpcTaskNotCancelableError, JsonRpcTaskNotFoundError } from '@a2a-js/sdk/errors';
import { importJWK } from 'jose';
import { hashKey } from '../../src/governance/index.js';
import { ASKER_QUESTION, type MockProvider } from '../../src/mock/index.js';
import {
  agentClient,
  type ClientVersion,
  collect,
  eventMeaning,
  isMessage,
  keyedFetch,
  meaningOf,
  postRpc,
  type SecuredAgent,
  startSecuredAgent,
  taskIdOf,
  textsOf,
  UPSTREAM_SECURITY_MARKS,
  userMessage,
} from '../support/a2a-core.js';
import { sqliteDatabase } from '../support/databases.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// A2A through a real gateway process, with the official SDK's clients (1.0, and 0.3 through
// its compat transport) against the mock's agents: the cards the gateway serves in the
// agents' place, every task method in both namings, translation between a client and an
// agent of different versions, the records each call leaves, and bad input answered as
// JSON-RPC errors.

const resources = fileResources('switchyard-a2a-gateway-');
const ADMIN = 'admin-token-for-the-a2a-gateway-tests';
const KEYS = {
  alpha: 'sy-a2a-core-alpha-key-000001',
  beta: 'sy-a2a-core-beta-key-0000001',
  narrow: 'sy-a2a-core-narrow-key-00001',
} as const;
const VERSIONS: readonly ClientVersion[] = ['1.0', '0.3'];
const DUAL_AGENTS = ['instant', 'worker', 'asker', 'failer'] as const;

let dual: MockProvider;
let v1Only: MockProvider;
let v03Only: MockProvider;
let signed: MockProvider;
let secured: SecuredAgent;
const UPSTREAM_KEY = 'upstream-secret-of-the-secured-agent';
let gw: GatewayProcess;
/** The same agents behind a gateway that trusts no proxy. */
let untrusting: GatewayProcess;
let dir: string;

const provider = (baseUrl: string) => ({ type: 'a2a', base_url: baseUrl, timeout_ms: 10_000 });
const agentAt = (g: GatewayProcess, agent: string) => `${g.url}/a2a/${agent}`;
const direct = (mock: MockProvider, agent: string) => `${mock.baseUrl}/${agent}`;

function gatewayConfig(trustedProxies: string[]): Record<string, unknown> {
  const providers: Record<string, unknown> = {};
  const agents: Record<string, unknown> = {};
  const expose = (agent: string, mock: MockProvider, upstreamAgent: string) => {
    providers[`p-${agent}`] = provider(direct(mock, upstreamAgent));
    agents[agent] = { candidates: [{ provider: `p-${agent}` }] };
  };
  for (const name of DUAL_AGENTS) expose(name, dual, name);
  expose('instant-v1', v1Only, 'instant');
  expose('worker-v1', v1Only, 'worker');
  expose('instant-v03', v03Only, 'instant');
  expose('worker-v03', v03Only, 'worker');
  expose('signed', signed, 'instant');
  providers['p-secured'] = { ...provider(secured.baseUrl), api_key: { env: 'UPSTREAM_KEY' } };
  agents.secured = { candidates: [{ provider: 'p-secured' }] };
  return {
    server: {
      listen: '127.0.0.1:0',
      admin_listen: '127.0.0.1:0',
      drain_timeout_ms: 2000,
      admin_token: { env: 'ADMIN_TOKEN' },
      public_metrics: true,
      trusted_proxies: trustedProxies,
    },
    log: { level: 'info', access: true },
    providers,
    routing: { agents },
    teams: { alpha: {}, beta: {} },
    keys: [
      { id: 'alpha-1', team: 'alpha', sha256: hashKey(KEYS.alpha) },
      { id: 'beta-1', team: 'beta', sha256: hashKey(KEYS.beta) },
      { id: 'narrow-1', team: 'alpha', sha256: hashKey(KEYS.narrow), allowed_agents: ['instant*'] },
    ],
  };
}

before(async () => {
  [dual, v1Only, v03Only, signed] = await Promise.all([
    resources.startMock({ name: 'dual', protocol: 'a2a', a2aStepMs: 40 }),
    resources.startMock({ name: 'v1-only', protocol: 'a2a', a2aVersions: ['1.0'], a2aStepMs: 40 }),
    resources.startMock({ name: 'v03-only', protocol: 'a2a', a2aVersions: ['0.3'], a2aStepMs: 40 }),
    resources.startMock({ name: 'signed', protocol: 'a2a', a2aVersions: ['1.0'], a2aSignedCards: true }),
  ]);
  secured = await startSecuredAgent();
  resources.addUpstream(() => secured.close());
  dir = resources.tempDir();
  const database = sqliteDatabase();
  resources.addGateway(() => database.drop());
  const env = { ADMIN_TOKEN: ADMIN, UPSTREAM_KEY };
  [gw, untrusting] = await Promise.all([
    resources.startGw(
      { ...gatewayConfig(['127.0.0.1/32']), audit: { file: join(dir, 'audit.jsonl') }, database: { url: database.url } },
      { dir, env },
    ),
    resources.startGw(gatewayConfig([]), { env }),
  ]);
});

async function cardJson(url: string, headers: Record<string, string> = {}): Promise<Record<string, any>> {
  const res = await keyedFetch(KEYS.alpha, headers)(`${url}/.well-known/agent-card.json`);
  assert.equal(res.status, 200, `card of ${url}`);
  // Which topology served it, as on every answer.
  assert.match(res.headers.get('x-switchyard-topology') ?? '', /^[0-9a-f]{64}$/);
  return (await res.json()) as Record<string, any>;
}

interface AgentList {
  agents: Array<{ name: string; card_url: string }>;
}

async function agentList(key: string, headers: Record<string, string> = {}): Promise<AgentList> {
  const res = await keyedFetch(key, headers)(`${gw.url}/a2a`);
  assert.equal(res.status, 200);
  return (await res.json()) as AgentList;
}

describe('cards through the gateway', { timeout: 60_000 }, () => {
  it("a 1.0 and a 0.3 reader find the gateway's URL and the gateway's schemes, nothing of the upstream's", async () => {
    for (const agent of ['worker', 'instant-v1', 'instant-v03']) {
      const url = agentAt(gw, agent);
      const raw = await cardJson(url, { 'a2a-version': '1.0' });
      const text = JSON.stringify(raw);
      for (const mock of [dual, v1Only, v03Only]) assert.ok(!text.includes(mock.baseUrl), `${agent}: no upstream URL in the card`);

      const v10 = AgentCard.fromJSON(raw);
      assert.ok(v10.supportedInterfaces.length > 0);
      for (const i of v10.supportedInterfaces) assert.equal(i.url, url, `${agent}: every 1.0 interface is the gateway's`);
      assert.deepEqual(Object.keys(v10.securitySchemes).sort(), ['apiKey', 'bearer']);
      assert.equal(v10.securitySchemes.bearer?.scheme?.$case, 'httpAuthSecurityScheme');
      const apiKey = v10.securitySchemes.apiKey?.scheme;
      assert.equal(apiKey?.$case, 'apiKeySecurityScheme');
      assert.equal(apiKey?.$case === 'apiKeySecurityScheme' ? apiKey.value.name : null, 'x-api-key');

      const legacyRaw = await cardJson(url);
      assert.equal(legacyRaw.url, url, `${agent}: the 0.3 url is the gateway's`);
      assert.equal(legacyRaw.securitySchemes?.bearer?.type, 'http');
      assert.deepEqual(legacyRaw.securitySchemes?.apiKey, {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        apiKeySecurityScheme: { location: 'header', name: 'x-api-key' },
      });
      for (const extra of legacyRaw.additionalInterfaces ?? []) assert.equal(extra.url, url);
    }
  });

  it("the SDK's clients of both versions, built from the served card, call the gateway", async () => {
    for (const version of VERSIONS) {
      const client = await agentClient(agentAt(gw, 'instant'), KEYS.alpha, version);
      const before = rpcCalls(dual);
      const result = await client.sendMessage(userMessage('card check'));
      assert.ok(isMessage(result));
      assert.deepEqual(textsOf(result.parts), ['echo: card check']);
      assert.deepEqual(callsSince(dual, before), { [`instant ${WIRE_NAMES[version].send}`]: 1 });
    }
  });

  it("an agent's own security never reaches the served card, nor the caller's key the agent", async () => {
    const url = agentAt(gw, 'secured');
    for (const headers of [{ 'a2a-version': '1.0' }, {}] as Array<Record<string, string>>) {
      const raw = await cardJson(url, headers);
      const text = JSON.stringify(raw);
      for (const mark of UPSTREAM_SECURITY_MARKS) assert.ok(!text.includes(mark), `no ${mark} in the served card`);
      assert.ok(!text.includes(secured.baseUrl));
      assert.deepEqual(Object.keys(raw.securitySchemes).sort(), ['apiKey', 'bearer']);
      for (const skill of raw.skills) assert.equal(skill.securityRequirements, undefined);
    }
    for (const version of VERSIONS) {
      const result = await (await agentClient(url, KEYS.alpha, version)).sendMessage(userMessage('ping'));
      assert.ok(isMessage(result));
      assert.deepEqual(textsOf(result.parts), ['secured pong']);
    }
    assert.deepEqual(secured.authorizations, [`Bearer ${UPSTREAM_KEY}`, `Bearer ${UPSTREAM_KEY}`]);
  });

  it('X-Forwarded-Host and -Proto name the card URLs only from a trusted proxy', async () => {
    const forwarded = { 'x-forwarded-host': 'agents.example.com', 'x-forwarded-proto': 'https' };
    const trusted = await cardJson(agentAt(gw, 'worker'), forwarded);
    assert.equal(trusted.url, 'https://agents.example.com/a2a/worker');
    for (const i of trusted.supportedInterfaces) assert.equal(i.url, 'https://agents.example.com/a2a/worker');
    const listed = await agentList(KEYS.alpha, forwarded);
    assert.ok(listed.agents.some((a) => a.card_url === 'https://agents.example.com/a2a/worker/.well-known/agent-card.json'));

    const ignored = await cardJson(agentAt(untrusting, 'worker'), forwarded);
    assert.equal(ignored.url, agentAt(untrusting, 'worker'));
    for (const i of ignored.supportedInterfaces) assert.equal(i.url, agentAt(untrusting, 'worker'));
  });

  it('a signed card is served as the agent signed it, and its signature still verifies', async () => {
    const served = await cardJson(agentAt(gw, 'signed'), { 'a2a-version': '1.0' });
    const upstream = await (
      await fetch(`${direct(signed, 'instant')}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } })
    ).json();
    assert.deepEqual(served, upstream);
    const jwks = (await (await fetch(`${signed.baseUrl}/.well-known/jwks.json`)).json()) as { keys: Array<Record<string, string>> };
    const verify = verifyAgentCardSignature(async (kid) => {
      const jwk = jwks.keys.find((k) => k.kid === kid);
      assert.ok(jwk, `key ${kid} in the agent's JWKS`);
      return importJWK(jwk, 'ES256') as never;
    });
    await verify(AgentCard.fromJSON(served));
  });

  it('GET /a2a lists the agents the key may use, each with its card URL at the gateway', async () => {
    const all = await agentList(KEYS.alpha);
    const names = all.agents.map((a) => a.name).sort();
    assert.deepEqual(names, [...DUAL_AGENTS, 'instant-v03', 'instant-v1', 'secured', 'signed', 'worker-v03', 'worker-v1'].sort());
    for (const a of all.agents) assert.equal(a.card_url, `${gw.url}/a2a/${a.name}/.well-known/agent-card.json`);
    const narrow = await agentList(KEYS.narrow);
    assert.deepEqual(narrow.agents.map((a) => a.name).sort(), ['instant', 'instant-v03', 'instant-v1']);
  });
});

/** Each version's JSON-RPC method names, as the agent receives them from a client of that version. */
const WIRE_NAMES = {
  '1.0': { send: 'SendMessage', stream: 'SendStreamingMessage', get: 'GetTask', cancel: 'CancelTask', resubscribe: 'SubscribeToTask' },
  '0.3': { send: 'message/send', stream: 'message/stream', get: 'tasks/get', cancel: 'tasks/cancel', resubscribe: 'tasks/resubscribe' },
} as const;

/** The JSON-RPC requests a mock's agents received, by "<agent> <method>" (card reads left out). */
function rpcCalls(mock: MockProvider): Record<string, number> {
  return Object.fromEntries(Object.entries(mock.a2aStats().requests).filter(([k]) => !k.endsWith(' card')));
}

/** What reached the mock's agents since `before`. */
function callsSince(mock: MockProvider, before: Record<string, number>): Record<string, number> {
  const now = rpcCalls(mock);
  return Object.fromEntries(
    Object.entries(now)
      .map(([k, n]) => [k, n - (before[k] ?? 0)] as const)
      .filter(([, n]) => n !== 0),
  );
}

for (const version of VERSIONS) {
  describe(`task methods through the gateway, ${version} client`, { timeout: 60_000 }, () => {
    const client = (agent: string, polling = false) => agentClient(agentAt(gw, agent), KEYS.alpha, version, { polling });
    const wire = WIRE_NAMES[version];

    it('send to the instant agent answers its message', async () => {
      const c = await client('instant');
      const before = rpcCalls(dual);
      const result = await c.sendMessage(userMessage('hello there'));
      assert.ok(isMessage(result));
      assert.equal(result.role, Role.ROLE_AGENT);
      assert.deepEqual(textsOf(result.parts), ['echo: hello there']);
      assert.deepEqual(callsSince(dual, before), { [`instant ${wire.send}`]: 1 });
    });

    it("send to the worker completes its task, and get reads it back by the agent's id", async () => {
      const c = await client('worker');
      const before = rpcCalls(dual);
      const task = await c.sendMessage(userMessage('work steps:2'));
      assert.ok(!isMessage(task));
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.deepEqual(
        task.artifacts.map((a) => textsOf(a.parts)),
        [['chunk 1'], ['chunk 2']],
      );
      const got = await c.getTask(GetTaskRequest.fromJSON({ id: task.id }));
      assert.equal(got.id, task.id);
      assert.equal(got.contextId, task.contextId);
      assert.equal(got.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.deepEqual(callsSince(dual, before), { [`worker ${wire.send}`]: 1, [`worker ${wire.get}`]: 1 });
    });

    it('a stream relays every event of the task, in order, ending completed', async () => {
      const c = await client('worker');
      const before = rpcCalls(dual);
      const events = await collect(c.sendMessageStream(userMessage('work steps:3')));
      assert.deepEqual(callsSince(dual, before), { [`worker ${wire.stream}`]: 1 });
      const meanings = events.map(eventMeaning);
      assert.deepEqual(meanings.at(-1), { statusUpdate: { state: TaskState.TASK_STATE_COMPLETED, texts: ['done in 3 steps'] } });
      const artifacts = meanings.filter((m) => (m as { artifactUpdate?: unknown }).artifactUpdate !== undefined);
      assert.deepEqual(
        artifacts,
        [1, 2, 3].map((i) => ({ artifactUpdate: { name: `chunk-${i}`, texts: [`chunk ${i}`] } })),
      );
      const ids = new Set(events.map(taskIdOf));
      assert.equal(ids.size, 1, 'every event names the one task');
    });

    it('cancel stops a running task, and get then reads it canceled', async () => {
      const c = await client('worker', true);
      const before = rpcCalls(dual);
      const task = await c.sendMessage(userMessage('work steps:1000'));
      assert.ok(!isMessage(task));
      assert.ok(
        [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(task.status?.state as TaskState),
        'returned at once, still running',
      );
      const canceled = await c.cancelTask(CancelTaskRequest.fromJSON({ id: task.id }));
      assert.equal(canceled.id, task.id);
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      const got = await c.getTask(GetTaskRequest.fromJSON({ id: task.id }));
      assert.equal(got.status?.state, TaskState.TASK_STATE_CANCELED);
      assert.deepEqual(callsSince(dual, before), { [`worker ${wire.send}`]: 1, [`worker ${wire.cancel}`]: 1, [`worker ${wire.get}`]: 1 });
    });

    it('resubscribe follows a running task to its end', async () => {
      const c = await client('worker', true);
      const task = await c.sendMessage(userMessage('work steps:40'));
      assert.ok(!isMessage(task));
      const before = rpcCalls(dual);
      const events = await collect(c.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: task.id })));
      assert.deepEqual(callsSince(dual, before), { [`worker ${wire.resubscribe}`]: 1 });
      assert.ok(events.length > 0);
      for (const e of events) assert.equal(taskIdOf(e), task.id);
      assert.deepEqual(eventMeaning(events.at(-1) as never), {
        statusUpdate: { state: TaskState.TASK_STATE_COMPLETED, texts: ['done in 40 steps'] },
      });
    });

    it('the asker asks, and the answer on the same task completes it', async () => {
      const c = await client('asker');
      const asked = await c.sendMessage(userMessage('ask me'));
      assert.ok(!isMessage(asked));
      assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.deepEqual(textsOf(asked.status?.message?.parts), [ASKER_QUESTION]);
      const done = await c.sendMessage(userMessage('forty-two', { taskId: asked.id, contextId: asked.contextId }));
      assert.ok(!isMessage(done));
      assert.equal(done.id, asked.id);
      assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.deepEqual(
        done.artifacts.map((a) => [a.name, textsOf(a.parts)]),
        [['answer', ['forty-two']]],
      );
    });

    it('a stream to the asker ends at its question, and a streamed answer completes the task', async () => {
      const c = await client('asker');
      const asked = await collect(c.sendMessageStream(userMessage('ask me')));
      assert.deepEqual(eventMeaning(asked.at(-1) as never), {
        statusUpdate: { state: TaskState.TASK_STATE_INPUT_REQUIRED, texts: [ASKER_QUESTION] },
      });
      const first = asked[0]?.payload;
      assert.equal(first?.$case, 'task');
      const task = first?.$case === 'task' ? first.value : assert.fail('a task first');
      const answered = await collect(c.sendMessageStream(userMessage('streamed answer', { taskId: task.id, contextId: task.contextId })));
      for (const e of answered) assert.equal(taskIdOf(e), task.id);
      assert.deepEqual(answered.slice(1).map(eventMeaning), [
        { artifactUpdate: { name: 'answer', texts: ['streamed answer'] } },
        { statusUpdate: { state: TaskState.TASK_STATE_COMPLETED, texts: [] } },
      ]);
    });

    it("the agent's own error comes back as it is: a finished task is not cancelable", async () => {
      const c = await client('worker');
      const task = await c.sendMessage(userMessage('work steps:1'));
      assert.ok(!isMessage(task));
      await assert.rejects(c.cancelTask(CancelTaskRequest.fromJSON({ id: task.id })), JsonRpcTaskNotCancelableError);
    });

    it("the failer's failed task comes back failed, not as an error", async () => {
      const task = await (await client('failer')).sendMessage(userMessage('please fail'));
      assert.ok(!isMessage(task));
      assert.equal(task.status?.state, TaskState.TASK_STATE_FAILED);
      assert.deepEqual(textsOf(task.status?.message?.parts), ['failed as asked: please fail']);
    });

    it("an unknown task id, or another team's, is task-not-found and reaches no agent", async () => {
      const theirs = await (await agentClient(agentAt(gw, 'worker'), KEYS.beta, version)).sendMessage(userMessage('work steps:1'));
      assert.ok(!isMessage(theirs));
      const c = await client('worker');
      const before = rpcCalls(dual);
      for (const id of ['no-such-task', theirs.id]) {
        await assert.rejects(c.getTask(GetTaskRequest.fromJSON({ id })), JsonRpcTaskNotFoundError);
      }
      assert.deepEqual(callsSince(dual, before), {}, 'the agent saw nothing');
    });
  });
}

describe('ListTasks', { timeout: 60_000 }, () => {
  it("lists the caller's team's tasks made through the gateway, not another team's nor one made directly", async () => {
    const ours = await agentClient(agentAt(gw, 'worker'), KEYS.alpha, '1.0');
    const mine = await ours.sendMessage(userMessage('work steps:1'));
    const theirs = await (await agentClient(agentAt(gw, 'worker'), KEYS.beta, '1.0')).sendMessage(userMessage('work steps:1'));
    const aside = await (await agentClient(direct(dual, 'worker'), null, '1.0')).sendMessage(userMessage('work steps:1'));
    assert.ok(!isMessage(mine) && !isMessage(theirs) && !isMessage(aside));
    const listed = await ours.listTasks(ListTasksRequest.fromJSON({}));
    const ids = listed.tasks.map((t) => t.id);
    assert.ok(ids.includes(mine.id), 'our task is listed');
    assert.ok(!ids.includes(theirs.id), "the other team's task is not");
    assert.ok(!ids.includes(aside.id), 'a task made directly at the agent is not');
  });

  it("paging with a page size reaches every one of the caller's tasks, however many others the agent holds", async () => {
    const ours = await agentClient(agentAt(gw, 'failer'), KEYS.alpha, '1.0');
    const theirs = await agentClient(agentAt(gw, 'failer'), KEYS.beta, '1.0');
    const mine: string[] = [];
    for (let i = 0; i < 3; i++) {
      const task = await ours.sendMessage(userMessage(`succeed ${i}`));
      assert.ok(!isMessage(task));
      mine.push(task.id);
    }
    // Newer than ours, so the agent's first pages are the other team's.
    for (let i = 0; i < 4; i++) await theirs.sendMessage(userMessage(`succeed ${i}`));
    const listed: string[] = [];
    let pageToken = '';
    for (let page = 0; page < 20; page++) {
      const answer = await ours.listTasks(ListTasksRequest.fromJSON({ pageSize: 2, ...(pageToken === '' ? {} : { pageToken }) }));
      assert.ok(answer.tasks.length <= 2, 'a page holds at most the page size');
      listed.push(...answer.tasks.map((t) => t.id));
      pageToken = answer.nextPageToken;
      if (pageToken === '') break;
    }
    for (const id of mine) assert.ok(listed.includes(id), `task ${id} is reached by paging (listed: ${listed.length})`);
  });
});

describe('translation between client and agent versions', { timeout: 60_000 }, () => {
  const cases: Array<{ title: string; client: ClientVersion; mock: () => MockProvider; suffix: string; agentSees: string }> = [
    { title: 'a 0.3 client to a 1.0-only agent', client: '0.3', mock: () => v1Only, suffix: '-v1', agentSees: 'SendMessage' },
    { title: 'a 1.0 client to a 0.3-only agent', client: '1.0', mock: () => v03Only, suffix: '-v03', agentSees: 'message/send' },
  ];
  for (const c of cases) {
    it(`${c.title}: a message, a task and a stream mean what a direct call's do`, async () => {
      const mock = c.mock();
      const agentVersion: ClientVersion = c.client === '1.0' ? '0.3' : '1.0';
      const via = (agent: string) => agentClient(agentAt(gw, `${agent}${c.suffix}`), KEYS.alpha, c.client);
      const straight = (agent: string) => agentClient(direct(mock, agent), null, agentVersion);
      const seen = mock.a2aStats().requests[`instant ${c.agentSees}`] ?? 0;

      const message = userMessage('translate me');
      assert.deepEqual(
        meaningOf(await (await via('instant')).sendMessage(message)),
        meaningOf(await (await straight('instant')).sendMessage(message)),
      );
      assert.equal((mock.a2aStats().requests[`instant ${c.agentSees}`] ?? 0) - seen, 2, `the agent got ${c.agentSees} both times`);

      const work = userMessage('work steps:2');
      const viaTask = await (await via('worker')).sendMessage(work);
      assert.deepEqual(meaningOf(viaTask), meaningOf(await (await straight('worker')).sendMessage(userMessage('work steps:2'))));
      assert.ok(!isMessage(viaTask));
      assert.equal(viaTask.status?.state, TaskState.TASK_STATE_COMPLETED);

      const viaStream = (await collect((await via('worker')).sendMessageStream(userMessage('work steps:2')))).map(eventMeaning);
      const directStream = (await collect((await straight('worker')).sendMessageStream(userMessage('work steps:2')))).map(eventMeaning);
      assert.deepEqual(viaStream, directStream);
      assert.deepEqual(viaStream.at(-1), { statusUpdate: { state: TaskState.TASK_STATE_COMPLETED, texts: ['done in 2 steps'] } });

      const got = await (await via('worker')).getTask(GetTaskRequest.fromJSON({ id: viaTask.id }));
      assert.deepEqual(meaningOf(got), meaningOf(viaTask));
    });

    it(`${c.title}: resubscribe and cancel are translated both ways`, async () => {
      const polling = await agentClient(agentAt(gw, `worker${c.suffix}`), KEYS.alpha, c.client, { polling: true });
      const running = await polling.sendMessage(userMessage('work steps:30'));
      assert.ok(!isMessage(running));
      const events = await collect(polling.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: running.id })));
      for (const e of events) assert.equal(taskIdOf(e), running.id);
      assert.deepEqual(eventMeaning(events.at(-1) as never), {
        statusUpdate: { state: TaskState.TASK_STATE_COMPLETED, texts: ['done in 30 steps'] },
      });
      const long = await polling.sendMessage(userMessage('work steps:1000'));
      assert.ok(!isMessage(long));
      const canceled = await polling.cancelTask(CancelTaskRequest.fromJSON({ id: long.id }));
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      const got = await polling.getTask(GetTaskRequest.fromJSON({ id: long.id }));
      assert.equal(got.status?.state, TaskState.TASK_STATE_CANCELED);
    });
  }
});

type Row = Record<string, any>;

function auditText(): string {
  return readFileSync(join(dir, 'audit.jsonl'), 'utf8');
}

function auditRecords(): Row[] {
  return auditText()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row);
}

async function ledgerRows(): Promise<Row[]> {
  const page = await v1(gw.adminUrl as string, 'GET', 'usage/requests?limit=1000', { token: ADMIN });
  assert.equal(page.status, 200, page.text);
  return page.body.rows as Row[];
}

describe('records of agent calls', { timeout: 60_000 }, () => {
  it('one access line, one agent_called audit record and one ledger row per call, never the message text', async () => {
    const secret = `the words of a private message ${process.pid}`;
    const ids = { send: `a2a-rec-send-${process.pid}`, stream: `a2a-rec-stream-${process.pid}`, legacy: `a2a-rec-legacy-${process.pid}` };
    const v10 = await agentClient(agentAt(gw, 'worker'), KEYS.alpha, '1.0');
    const task = await v10.sendMessage(userMessage(`work steps:1 ${secret}`), { serviceParameters: { 'x-request-id': ids.send } });
    assert.ok(!isMessage(task));
    await collect(v10.sendMessageStream(userMessage(`work steps:1 ${secret}`), { serviceParameters: { 'x-request-id': ids.stream } }));
    const legacy = await agentClient(agentAt(gw, 'instant'), KEYS.alpha, '0.3');
    await legacy.sendMessage(userMessage(secret), { serviceParameters: { 'x-request-id': ids.legacy } });

    const line = (id: string) => gw.waitForLog((l) => l.msg === 'request' && l.request_id === id);
    const sendLine = await line(ids.send);
    assert.equal(sendLine.agent, 'worker');
    assert.equal(sendLine.a2a_method, 'SendMessage');
    assert.equal(sendLine.a2a_version, '1.0');
    assert.equal(sendLine.task_id, task.id);
    assert.equal(sendLine.context_id, task.contextId);
    assert.equal(sendLine.task_state, 'completed');
    assert.equal(sendLine.outcome, 'answered');
    assert.equal(sendLine.provider, 'p-worker');
    const streamLine = await line(ids.stream);
    assert.equal(streamLine.a2a_method, 'SendStreamingMessage');
    assert.equal(streamLine.task_state, 'completed');
    const legacyLine = await line(ids.legacy);
    assert.equal(legacyLine.agent, 'instant');
    assert.equal(legacyLine.a2a_version, '0.3');
    assert.equal(legacyLine.a2a_method, 'SendMessage');
    for (const id of Object.values(ids)) {
      assert.equal(gw.logs().filter((l) => l.msg === 'request' && l.request_id === id).length, 1, `one access line for ${id}`);
    }

    const audit = auditRecords();
    for (const id of Object.values(ids)) {
      const records = audit.filter((r) => r.request_id === id);
      assert.equal(records.length, 1, `one audit record for ${id}`);
      assert.equal(records[0]?.event, 'agent_called');
    }
    const sendAudit = audit.find((r) => r.request_id === ids.send) as Row;
    assert.equal(sendAudit.agent, 'worker');
    assert.equal(sendAudit.method, 'SendMessage');
    assert.equal(sendAudit.task_id, task.id);
    assert.equal(sendAudit.state, 'completed');
    assert.equal(sendAudit.team, 'alpha');
    assert.equal(sendAudit.key_id, 'alpha-1');
    assert.ok(!auditText().includes('private message'), 'no message text in the audit file');
    assert.ok(!gw.output.some((l) => l.includes('private message')), 'no message text in the logs');

    const rows = await ledgerRows();
    for (const [id, agent] of [
      [ids.send, 'worker'],
      [ids.stream, 'worker'],
      [ids.legacy, 'instant'],
    ] as const) {
      const mine = rows.filter((r) => r.request_id === id);
      assert.equal(mine.length, 1, `one ledger row for ${id}`);
      assert.equal(mine[0]?.endpoint, `/a2a/${agent}`);
      assert.equal(mine[0]?.model, agent);
      assert.equal(mine[0]?.team, 'alpha');
    }
  });

  it('the metrics count agent calls by agent, method and outcome, and time them', async () => {
    await (await agentClient(agentAt(gw, 'instant'), KEYS.alpha, '1.0')).sendMessage(userMessage('count me'));
    const text = await scrapeMetrics(gw.url);
    assert.ok(
      (metricValue(text, 'switchyard_a2a_requests_total', { agent: 'instant', method: 'SendMessage', outcome: 'answered' }) ?? 0) >= 1,
    );
    assert.ok((metricValue(text, 'switchyard_a2a_request_duration_seconds_count', { agent: 'instant', method: 'SendMessage' }) ?? 0) >= 1);
    assert.ok((metricValue(text, 'switchyard_a2a_tasks_tracked') ?? 0) >= 1, 'the tasks made so far are tracked');
  });
});

describe('bad input is a JSON-RPC error, and the gateway keeps serving', { timeout: 60_000 }, () => {
  const auth = { authorization: `Bearer ${KEYS.alpha}` };
  const url = () => agentAt(gw, 'instant');
  const cases: Array<{ title: string; body: unknown; headers?: Record<string, string>; to?: () => string; status?: number; code: number }> =
    [
      { title: 'not JSON', body: '{"jsonrpc": "2.0", "method": ', code: -32700 },
      { title: 'a batch', body: [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }], code: -32600 },
      { title: 'no method', body: { jsonrpc: '2.0', id: 2, params: {} }, code: -32600 },
      { title: 'an unknown method', body: { jsonrpc: '2.0', id: 3, method: 'tasks/frobnicate', params: {} }, code: -32601 },
      { title: 'GetTask without an id', body: { jsonrpc: '2.0', id: 4, method: 'GetTask', params: {} }, code: -32602 },
      { title: 'tasks/get without an id', body: { jsonrpc: '2.0', id: 5, method: 'tasks/get', params: {} }, code: -32602 },
      {
        title: 'a wrong content type',
        body: { jsonrpc: '2.0', id: 6, method: 'GetTask', params: { id: 'x' } },
        headers: { 'content-type': 'text/plain' },
        status: 415,
        code: -32005,
      },
    ];
  for (const c of cases) {
    it(`${c.title}: ${c.code}${c.status === undefined ? '' : ` (HTTP ${c.status})`}`, async () => {
      const before = rpcCalls(dual);
      const reply = await postRpc((c.to ?? url)(), c.body, { ...auth, ...c.headers });
      if (c.status !== undefined) assert.equal(reply.status, c.status);
      assert.match(reply.contentType ?? '', /application\/json/);
      assert.equal(reply.body?.jsonrpc, '2.0', reply.text);
      assert.equal(reply.body?.error?.code, c.code, reply.text);
      assert.equal(typeof reply.body?.error?.message, 'string');
      assert.deepEqual(callsSince(dual, before), {}, 'the agent saw nothing');
    });
  }

  it('an unknown agent is 404, no key 401, each a JSON-RPC error naming the gateway code', async () => {
    const body = { jsonrpc: '2.0', id: 7, method: 'SendMessage', params: SendMessageRequest.toJSON(userMessage('hi')) };
    const unknown = await postRpc(agentAt(gw, 'nobody-here'), body, auth);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body?.jsonrpc, '2.0', unknown.text);
    assert.equal(unknown.body?.error?.data?.code, 'not_found');
    const anonymous = await postRpc(url(), body);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body?.jsonrpc, '2.0', anonymous.text);
    assert.equal(anonymous.body?.error?.data?.code, 'unauthorized');
    const bad = await postRpc(url(), body, { authorization: 'Bearer sy-not-a-key-of-this-gateway' });
    assert.equal(bad.status, 401);
    assert.equal(bad.body?.error?.data?.code, 'unauthorized');
  });

  it("an agent outside the key's allow-list is 403 with -32040 and agent_not_allowed", async () => {
    const body = { jsonrpc: '2.0', id: 8, method: 'GetTask', params: { id: 'any' } };
    const denied = await postRpc(agentAt(gw, 'worker'), body, { authorization: `Bearer ${KEYS.narrow}` });
    assert.equal(denied.status, 403);
    assert.equal(denied.body?.error?.code, -32040, denied.text);
    assert.equal(denied.body?.error?.data?.code, 'agent_not_allowed');
  });

  it('the key in x-api-key, as the card offers, is as good as a bearer', async () => {
    const body = { jsonrpc: '2.0', id: 9, method: 'SendMessage', params: SendMessageRequest.toJSON(userMessage('by header')) };
    const reply = await postRpc(url(), body, { 'x-api-key': KEYS.alpha });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(
      reply.body?.result?.message?.parts?.map((p: { text: string }) => p.text),
      ['echo: by header'],
    );
  });

  it('each refusal leaves one access line naming its reason', async () => {
    const alpha = { authorization: `Bearer ${KEYS.alpha}` };
    const getTask = { jsonrpc: '2.0', id: 10, method: 'GetTask', params: { id: 'no-such-task' } };
    const refusals: Array<{ id: string; body: unknown; headers: Record<string, string>; agent?: string; reason: string }> = [
      { id: 'not-json', body: '{"x', headers: alpha, reason: 'invalid_request' },
      { id: 'unknown-method', body: { jsonrpc: '2.0', id: 11, method: 'Frobnicate' }, headers: alpha, reason: 'method_not_found' },
      { id: 'unknown-task', body: getTask, headers: alpha, reason: 'task_not_found' },
      { id: 'unknown-agent', body: getTask, headers: alpha, agent: 'nobody-here', reason: 'not_found' },
      {
        id: 'not-allowed',
        body: getTask,
        headers: { authorization: `Bearer ${KEYS.narrow}` },
        agent: 'worker',
        reason: 'agent_not_allowed',
      },
      { id: 'no-key', body: getTask, headers: {}, reason: 'unauthorized' },
    ];
    for (const r of refusals) {
      const requestId = `a2a-refused-${r.id}-${process.pid}`;
      await postRpc(agentAt(gw, r.agent ?? 'instant'), r.body, { ...r.headers, 'x-request-id': requestId });
      const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
      assert.equal(line.reason, r.reason, r.id);
      assert.equal(gw.logs().filter((l) => l.msg === 'request' && l.request_id === requestId).length, 1, `${r.id}: one line`);
    }
  });

  it('after all of it, a call is answered as before', async () => {
    const result = await (await agentClient(url(), KEYS.alpha, '1.0')).sendMessage(userMessage('still here'));
    assert.ok(isMessage(result));
    assert.deepEqual(textsOf(result.parts), ['echo: still here']);
    assert.equal(gw.child.exitCode, null);
  });
});
