import assert from 'node:assert/strict';
import { before, beforeEach, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { agentClient, agentProvider, rpc, rpcCount, sendParams, taskOf, wireMessage } from '../support/a2a-fleet.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// Data residency on /a2a (ADR 0043), through a real gateway process and mock agents: a team
// limited to `eu` sends its messages, its task reads and its ListTasks only to the agent
// labelled eu; an agent only the us one serves is refused with 403 naming the zones. The mock
// agents' own counters are the witness that the us agent received nothing.

const resources = fileResources('switchyard-a2a-residency-');
const KEY_EU = 'sk-a2a-residency-eu-0123456789abcdef';
const KEY_OPEN = 'sk-a2a-residency-open-0123456789abcdef';

let euAgent: MockProvider;
let usAgent: MockProvider;
let gw: GatewayProcess;

describe('data residency on /a2a', () => {
  before(async () => {
    [euAgent, usAgent] = await Promise.all([
      resources.startMock({ name: 'eu-agent', protocol: 'a2a' }),
      resources.startMock({ name: 'us-agent', protocol: 'a2a' }),
    ]);
    gw = await resources.startGw({
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 1000 },
      log: { level: 'info' },
      providers: {
        'worker-us': agentProvider(usAgent.baseUrl, 'worker', { zones: ['us'] }),
        'worker-eu': agentProvider(euAgent.baseUrl, 'worker', { zones: ['eu'] }),
      },
      routing: {
        routes: {},
        agents: {
          worker: { policy: 'ordered', candidates: [{ provider: 'worker-us' }, { provider: 'worker-eu' }] },
          'us-worker': { candidates: [{ provider: 'worker-us' }] },
        },
      },
      teams: { eu: { residency: { allow: ['eu'] } }, open: {} },
      keys: [
        { id: 'k-eu', team: 'eu', sha256: hashKey(KEY_EU) },
        { id: 'k-open', team: 'open', sha256: hashKey(KEY_OPEN) },
      ],
    });
  });

  beforeEach(() => {
    euAgent.reset();
    usAgent.reset();
  });

  it('a message (official SDK), a read of its task and ListTasks reach only the eu agent; the access line lists the us one as residency', async () => {
    const client = await agentClient(gw, KEY_EU, 'worker');
    const task = taskOf(await client.sendMessage(sendParams('steps:0')));
    const read = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    assert.equal(read.id, task.id);
    const listed = await client.listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageToken: '',
      statusTimestampAfter: undefined,
    } as Parameters<typeof client.listTasks>[0]);
    assert.deepEqual(
      listed.tasks.map((t) => t.id),
      [task.id],
    );
    assert.ok(rpcCount(euAgent) >= 3);
    assert.equal(rpcCount(usAgent), 0, 'the us agent received no call');
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.agent === 'worker' && Array.isArray(l.fallback));
    assert.deepEqual(line.fallback, ['worker-us:residency']);
    // A caller without a rule is served by the us agent, first in the route: the test can tell.
    const open = await rpc(gw, KEY_OPEN, 'worker', 'SendMessage', { message: wireMessage('steps:0') });
    assert.equal(open.status, 200, JSON.stringify(open.body));
    assert.equal(rpcCount(usAgent), 1);
  });

  it('an agent only the us provider serves is 403 residency_not_allowed naming the zones, and nothing is sent', async () => {
    for (const method of ['SendMessage', 'ListTasks']) {
      const params = method === 'SendMessage' ? { message: wireMessage('steps:0') } : {};
      const refused = await rpc(gw, KEY_EU, 'us-worker', method, params);
      assert.equal(refused.status, 403, `${method}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error?.data?.code, 'residency_not_allowed');
      assert.match(refused.body.error?.message ?? '', /\beu\b/);
      assert.doesNotMatch(refused.body.error?.message ?? '', /worker-us|us-agent/);
    }
    assert.equal(rpcCount(usAgent), 0, 'the us agent received no call');
  });
});
