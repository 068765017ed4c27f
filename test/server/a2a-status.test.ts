import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// The `a2a` section of /admin/status and the agents of the status page's data, against a
// real gateway process and the mock's A2A agents: per exposed agent its candidates (card
// read or not and why, breaker), the ids tracked, and the recent traffic per candidate.

const r = fileResources('switchyard-a2a-status-');

// Nothing listens on port 9 (discard): a card read there is refused.
const NOWHERE = 'http://127.0.0.1:9/agent';

interface CandidateStatus {
  stable_id: string;
  provider: string;
  card_read: boolean;
  card_problem: string | null;
  card_name: string | null;
  breaker: { state: string; consecutive_failures?: number } | null;
  served: number;
  failed: number;
}
interface AgentStatus {
  agent: string;
  policy: string;
  admits_new: boolean;
  served: number;
  candidates: CandidateStatus[];
}
interface A2aSection {
  tasks_tracked: number | null;
  tasks_error: string | null;
  store: string;
  agents: AgentStatus[];
  servers: Array<{ name: string; base_url: string; card_url: string; card_read: boolean; breaker: { state: string } | null }>;
}
interface PageAgentCandidate {
  provider: string;
  state: string;
  breaker: string;
  served: number;
  share: number | null;
  error_rate: number | null;
  card_read: boolean;
  card_age_s: number | null;
  card_problem: string | null;
}

function agentsConfig(alpha: string, bravo: string): Record<string, unknown> {
  return {
    ...baseConfig({}, {}),
    log: { level: 'info', access: false },
    resilience: { breaker: { failure_threshold: 3, open_base_ms: 60_000 } },
    providers: {
      alpha: { type: 'a2a', base_url: `${alpha}/instant`, timeout_ms: 5000 },
      bravo: { type: 'a2a', base_url: `${bravo}/worker`, timeout_ms: 5000, api_key: { env: 'A2A_STATUS_AGENT_KEY' } },
      nowhere: { type: 'a2a', base_url: NOWHERE, timeout_ms: 2000, connect_timeout_ms: 500 },
    },
    routing: {
      agents: {
        echo: { candidates: [{ provider: 'alpha' }] },
        work: { policy: 'ordered', candidates: [{ provider: 'bravo' }, { provider: 'alpha' }] },
        lost: { candidates: [{ provider: 'nowhere' }] },
      },
    },
  };
}

async function send(url: string, text: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: `m-${text}-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } },
    }),
  });
  return (await res.json()) as Record<string, unknown>;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  assert.equal(res.status, 200, url);
  return (await res.json()) as T;
}

/** Waits (bounded) until the gateway has read `provider`'s card: cards are read after the gateway listens. */
async function cardRead(adminUrl: string, provider: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { a2a } = await getJson<{ a2a: A2aSection }>(`${adminUrl}/admin/status`);
    if (a2a.servers.find((s) => s.name === provider)?.card_read === true) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`${provider}'s card was never read`);
}

describe('the a2a status', () => {
  it('lists each agent with its candidates, their cards and breakers, the ids tracked and the calls each candidate served', async () => {
    const [alpha, bravo] = await Promise.all([
      r.startMock({ name: 'alpha', protocol: 'a2a' }),
      r.startMock({ name: 'bravo', protocol: 'a2a', a2aStepMs: 1 }),
    ]);
    const gw = await r.startGw(agentsConfig(alpha.baseUrl, bravo.baseUrl), { env: { A2A_STATUS_AGENT_KEY: 'agent-secret-value' } });
    for (let i = 0; i < 3; i++) assert.ok('result' in (await send(`${gw.url}/a2a/echo`, `hi ${i}`)));
    const task = await send(`${gw.url}/a2a/work`, 'steps:1');
    assert.ok('result' in task, JSON.stringify(task));

    const status = await getJson<{ a2a: A2aSection }>(`${gw.adminUrl}/admin/status`);
    const a2a = status.a2a;
    assert.deepEqual(
      a2a.agents.map((a) => a.agent),
      ['echo', 'work', 'lost'],
    );
    const [echo, work, lost] = a2a.agents as [AgentStatus, AgentStatus, AgentStatus];
    assert.equal(echo.served, 3);
    assert.equal(echo.admits_new, true);
    assert.deepEqual(
      echo.candidates.map((c) => [c.provider, c.card_read, c.card_problem, c.breaker?.state, c.served, c.failed]),
      [['alpha', true, null, 'closed', 3, 0]],
    );
    assert.equal(work.policy, 'ordered');
    assert.deepEqual(
      work.candidates.map((c) => [c.provider, c.card_read, c.served]),
      [
        ['bravo', true, 1],
        ['alpha', true, 0],
      ],
    );
    assert.equal(typeof work.candidates[0]?.card_name, 'string');
    const nowhere = lost.candidates[0] as CandidateStatus;
    assert.equal(nowhere.card_read, false);
    assert.match(nowhere.card_problem ?? '', /connect/);
    // Three instant answers name a context each; the worker's task names a task and a context.
    assert.ok((a2a.tasks_tracked ?? 0) >= 4, `tasks_tracked ${a2a.tasks_tracked}`);
    assert.equal(a2a.tasks_error, null);
    assert.equal(a2a.store, 'memory');
    const bravoServer = a2a.servers.find((s) => s.name === 'bravo');
    assert.equal(bravoServer?.base_url, `${bravo.baseUrl}/worker`);
    assert.equal(bravoServer?.card_read, true);
    assert.ok(!JSON.stringify(status).includes('agent-secret-value'), 'an agent credential is named, never shown');

    // The page's view: the same facts without addresses, and the upstream agents among the providers.
    const page = await getJson<{
      agents: Array<{ agent: string; served: number; candidates: PageAgentCandidate[] }>;
      a2a: { tasks_tracked: number | null } | null;
      providers: Array<{ name: string; type: string; breaker: string }>;
    }>(`${gw.adminUrl}/admin/status/page-data`);
    const pageEcho = page.agents.find((a) => a.agent === 'echo');
    assert.equal(pageEcho?.served, 3);
    assert.deepEqual(
      pageEcho?.candidates.map((c) => [c.provider, c.state, c.breaker, c.served, c.share, c.error_rate, c.card_read]),
      [['alpha', 'serving', 'closed', 3, 1, 0, true]],
    );
    assert.equal(typeof pageEcho?.candidates[0]?.card_age_s, 'number');
    const pageLost = page.agents.find((a) => a.agent === 'lost')?.candidates[0];
    assert.equal(pageLost?.card_read, false);
    assert.equal(pageLost?.card_age_s, null);
    assert.match(pageLost?.card_problem ?? '', /connect/);
    assert.ok(!JSON.stringify(page).includes('127.0.0.1:9'), 'the page data names no agent address');
    assert.ok((page.a2a?.tasks_tracked ?? 0) >= 4);
    assert.deepEqual(
      page.providers.filter((p) => p.type === 'a2a').map((p) => p.name),
      ['alpha', 'bravo', 'nowhere'],
    );
  });

  it("shows a candidate's breaker opening when its agent stops answering, and the calls its fallback served", async () => {
    const [alpha, bravo] = await Promise.all([
      r.startMock({ name: 'alpha', protocol: 'a2a' }),
      r.startMock({ name: 'bravo', protocol: 'a2a' }),
    ]);
    const gw = await r.startGw(agentsConfig(alpha.baseUrl, bravo.baseUrl), { env: { A2A_STATUS_AGENT_KEY: 'k' } });
    // bravo's card is read; then bravo goes away, and work's calls fall back to alpha.
    await cardRead(gw.adminUrl as string, 'bravo');
    await bravo.close();
    for (let i = 0; i < 4; i++) {
      const answer = await send(`${gw.url}/a2a/work`, 'steps:1');
      assert.ok('result' in answer, JSON.stringify(answer));
    }
    const { a2a } = await getJson<{ a2a: A2aSection }>(`${gw.adminUrl}/admin/status`);
    const work = a2a.agents.find((a) => a.agent === 'work') as AgentStatus;
    const [first, second] = work.candidates as [CandidateStatus, CandidateStatus];
    assert.equal(first.provider, 'bravo');
    assert.equal(first.breaker?.state, 'open');
    assert.equal(first.card_read, true, 'the last good card is kept');
    assert.equal(first.served, 0);
    assert.ok(first.failed >= 3, `bravo failed ${first.failed}`);
    assert.equal(second.served, 4);
    assert.equal(a2a.servers.find((s) => s.name === 'bravo')?.breaker?.state, 'open');

    const page = await getJson<{ agents: Array<{ agent: string; candidates: PageAgentCandidate[] }> }>(
      `${gw.adminUrl}/admin/status/page-data`,
    );
    const rows = page.agents.find((a) => a.agent === 'work')?.candidates ?? [];
    assert.deepEqual(
      rows.map((c) => [c.provider, c.breaker, c.served, c.share]),
      [
        ['bravo', 'open', 0, 0],
        ['alpha', 'closed', 4, 1],
      ],
    );
    assert.equal(rows[0]?.error_rate, 1);
  });

  it('is empty with no agent configured: no agents on the page and no a2a facts', async () => {
    const mock = await r.startMock({ name: 'plain' });
    const gw = await r.startGw(baseConfig({ plain: mock.baseUrl }, { m: { candidates: [{ provider: 'plain' }] } }));
    const { a2a } = await getJson<{ a2a: A2aSection }>(`${gw.adminUrl}/admin/status`);
    assert.deepEqual(a2a.agents, []);
    assert.deepEqual(a2a.servers, []);
    const page = await getJson<{ agents: unknown[]; a2a: unknown }>(`${gw.adminUrl}/admin/status/page-data`);
    assert.deepEqual(page.agents, []);
    assert.equal(page.a2a, null);
  });
});
