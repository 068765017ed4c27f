import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { parseOverlay } from '../../src/contract/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { parseInventory, renderOverlay } from '../../src/publisher/index.js';
import { adminStatusBody } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { type GridProcess, startGridProcess } from '../support/grid-process.js';
import { chatCount, metricValue, tally, waitUntil } from '../support/observe.js';
import { kubeletWrite } from '../support/overlay.js';
import { attributionHeaders, overlayConfig, waitForServing, writeByRename } from '../support/overlay-gateway.js';

// Grid's qualification run, end to end and in order: three mock providers, a gateway in
// overlay mode watching a kubelet-layout directory, and `switchyard grid` writing that
// directory from an inventory it watches and health checks it runs. Each step edits the
// inventory (or kills a provider), then waits, by polling, for the revision that the
// publisher's own renderer says must follow, to be published and serving.

const names = ['alpha', 'bravo', 'charlie'] as const;
type Name = (typeof names)[number];
type State = 'active' | 'drain' | 'withdrawn';
const MODEL = 'qual-model';
/** χ² with 2 degrees of freedom at p = 0.001: a correct weighted choice exceeds it once in a thousand runs. */
const CHI2_CRITICAL_2DF = 13.82;

let mocks: Record<Name, MockProvider>;
let grid: GridProcess;
let gw: GatewayProcess;
let client: OpenAI;
let dir: string;
let inventoryPath: string;
let gatewayPid: number | undefined;
let session: string;
let inventory: {
  states: Record<Name, State>;
  weights: Record<Name, number>;
  mode: string;
  tools: Partial<Record<Name, string[]>>;
} = {
  states: { alpha: 'active', bravo: 'active', charlie: 'active' },
  weights: { alpha: 1, bravo: 1, charlie: 1 },
  mode: 'roundRobin',
  tools: {},
};

function inventoryText(): string {
  return stringify({
    network: 'qual',
    gateway: 'qual-gw',
    namespace: 'ai',
    local_site: 'hq',
    local_region: 'r1',
    selection_policy: { mode: inventory.mode },
    providers: names.map((name) => ({
      cluster: name,
      site: `${name}-site`,
      region: 'r1',
      models: [MODEL],
      ...(inventory.tools[name] === undefined ? {} : { tools: inventory.tools[name] }),
      state: inventory.states[name],
      weight: inventory.weights[name],
      health: { url: `${mocks[name].baseUrl}/models`, interval_ms: 100, timeout_ms: 500, unhealthy_after: 2, healthy_after: 2 },
    })),
  });
}

/** The revision the publisher must publish for the current inventory, with these providers unhealthy. */
function expectedRevision(unhealthy: readonly Name[] = []): string {
  return renderOverlay(parseInventory(inventoryText()), (c) => !unhealthy.includes(c as Name)).revision;
}

/** Edits the inventory, then waits until the revision it renders is published (grid) and serving (gateway). */
async function edit(change: Partial<typeof inventory>, unhealthy: readonly Name[] = []): Promise<string> {
  const before = expectedRevision(unhealthy);
  inventory = { ...inventory, ...change };
  writeByRename(inventoryPath, inventoryText());
  const revision = expectedRevision(unhealthy);
  assert.notEqual(revision, before, 'each step is a new revision');
  return servingNow(revision);
}

async function servingNow(revision: string): Promise<string> {
  await waitUntil(async () => (await grid.status()).published_revision === revision, `grid publishes ${revision.slice(0, 12)}`, 15_000);
  const status = await waitForServing(gw, revision, 15_000);
  assert.equal(status.overlay?.accepted_revision, status.overlay?.serving_revision, '/admin/status: serving equals published');
  assert.equal(gw.child.pid, gatewayPid, 'the gateway was never restarted');
  assert.equal(gw.child.exitCode, null);
  return revision;
}

interface Answer {
  readonly status: number;
  readonly provider: string | null;
  readonly revision: string | null;
  readonly headers: Headers;
  readonly code?: string;
}

async function ask(sessionId?: string): Promise<Answer> {
  const headers = sessionId === undefined ? {} : { 'x-session-id': sessionId };
  try {
    const { response } = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { headers })
      .withResponse();
    return {
      status: response.status,
      provider: response.headers.get('x-switchyard-provider'),
      revision: response.headers.get('x-switchyard-revision'),
      headers: response.headers,
    };
  } catch (err) {
    if (!(err instanceof OpenAI.APIError) || err.status === undefined) throw err;
    const h = err.headers ?? new Headers();
    return { status: err.status, provider: h.get('x-switchyard-provider'), revision: null, headers: h, code: String(err.code) };
  }
}

/** n sessionless requests, `width` at a time; every one must be a 200. */
async function providersOf(n: number, width = 1): Promise<string[]> {
  const out: string[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        const a = await ask();
        assert.equal(a.status, 200, `request ${i}: ${a.status} ${a.code ?? ''}`);
        out[i] = a.provider ?? '(none)';
      }
    }),
  );
  return out;
}

/** A fresh session id that the gateway binds to `provider` (round-robin reaches it within a cycle). */
async function sessionBoundTo(provider: Name, prefix: string): Promise<string> {
  for (let i = 0; i < 12; i++) {
    const id = `${prefix}-${i}`;
    if ((await ask(id)).provider === provider) return id;
  }
  throw new Error(`no new session was bound to ${provider} in 12 tries`);
}

function counts(): Record<Name, number> {
  return { alpha: chatCount(mocks.alpha), bravo: chatCount(mocks.bravo), charlie: chatCount(mocks.charlie) };
}

function chiSquare(observed: Record<string, number>, weights: Record<Name, number>, n: number): number {
  const total = names.reduce((s, name) => s + weights[name], 0);
  return names.reduce((chi, name) => {
    const expected = (n * weights[name]) / total;
    return chi + ((observed[name] ?? 0) - expected) ** 2 / expected;
  }, 0);
}

describe('qualification: render -> publish -> accept -> serve -> withdraw -> empty -> restore', { timeout: 120_000 }, () => {
  before(async () => {
    const started = await Promise.all(names.map((name) => startMockProvider({ name })));
    mocks = { alpha: started[0]!, bravo: started[1]!, charlie: started[2]! };
    dir = mkdtempSync(join(tmpdir(), 'switchyard-qualification-'));
    inventoryPath = join(dir, 'inventory', 'inventory.yaml');
    mkdirSync(join(dir, 'inventory'));
    writeByRename(inventoryPath, inventoryText());
    grid = await startGridProcess(inventoryPath, join(dir, 'overlay'), ['--layout', 'kubelet']);
    gw = await startGatewayProcess(
      overlayConfig(
        Object.fromEntries(names.map((n) => [n, mocks[n].baseUrl])),
        { file: join(dir, 'overlay', 'routing-overlay.json'), expected_scope: { network: 'qual', gateway: 'qual-gw', namespace: 'ai' } },
        { routing: { session_affinity: { header: 'x-session-id', ttl_s: 3600, max_entries: 1000 } } },
      ),
      { dir, env: { SWITCHYARD_RANDOM_SEED: '20261201' } },
    );
    gatewayPid = gw.child.pid;
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
  });

  after(async () => {
    await gw?.stop();
    await grid?.stop();
    await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('1. baseline round-robin: 60 requests, a repeating A/B/C cycle, 20 each, one revision', async () => {
    const revision = await servingNow(expectedRevision());
    const seen: Answer[] = [];
    for (let i = 0; i < 60; i++) seen.push(await ask());
    assert.ok(
      seen.every((a) => a.status === 200),
      'all 200',
    );
    const order = seen.map((a) => a.provider);
    assert.equal(new Set(order.slice(0, 3)).size, 3, `the first three are A, B and C: ${order.slice(0, 3)}`);
    for (let i = 3; i < 60; i++) assert.equal(order[i], order[i - 3], `request ${i} continues the cycle`);
    assert.deepEqual(tally(order as string[]), { alpha: 20, bravo: 20, charlie: 20 });
    assert.deepEqual(new Set(seen.map((a) => a.revision)), new Set([revision]), 'the revision is stable throughout');
  });

  it('2. a session S binds to A', async () => {
    session = await sessionBoundTo('alpha', 'S');
    for (let i = 0; i < 3; i++) assert.equal((await ask(session)).provider, 'alpha');
  });

  it('3. withdraw A: a new revision serves, new requests cover exactly {B, C}, S fails over, A sees nothing', async () => {
    const before = counts();
    await edit({ states: { alpha: 'withdrawn', bravo: 'active', charlie: 'active' } });
    assert.deepEqual(new Set(await providersOf(6)), new Set(['bravo', 'charlie']));
    const s = await ask(session);
    assert.equal(s.status, 200);
    assert.ok(s.provider === 'bravo' || s.provider === 'charlie', `S failed over to ${s.provider}`);
    assert.equal(counts().alpha, before.alpha, "A's mock counter does not move");
  });

  it('4. withdraw B and C: an empty revision serves; new sessions and S get an unattributed 404; no mock is called', async () => {
    await edit({ states: { alpha: 'withdrawn', bravo: 'withdrawn', charlie: 'withdrawn' } });
    assert.equal((await adminStatusBody(gw)).overlay?.candidate_count, 0);
    const before = counts();
    for (const id of ['N1', 'N2', 'N3', session]) {
      const a = await ask(id);
      assert.equal(a.status, 404, `session ${id}`);
      assert.equal(a.code, 'no_route');
      assert.deepEqual(attributionHeaders(a.headers), [], `session ${id}: no attribution`);
    }
    assert.deepEqual(counts(), before, 'no mock counter moves');
    assert.equal(gw.child.pid, gatewayPid);
  });

  it('5. restore A: a new revision, and an attributed 200', async () => {
    const revision = await edit({ states: { alpha: 'active', bravo: 'withdrawn', charlie: 'withdrawn' } });
    const a = await ask();
    assert.equal(a.status, 200);
    assert.equal(a.provider, 'alpha');
    assert.equal(a.revision, revision);
  });

  for (const weights of [
    { alpha: 50, bravo: 30, charlie: 20 },
    { alpha: 20, bravo: 30, charlie: 50 },
    { alpha: 1, bravo: 1, charlie: 1 },
  ]) {
    it(`6. weightedRandom ${weights.alpha}/${weights.bravo}/${weights.charlie}: 600 requests fit the weights (χ² < ${CHI2_CRITICAL_2DF})`, async () => {
      const revision = await edit({ states: { alpha: 'active', bravo: 'active', charlie: 'active' }, weights, mode: 'weightedRandom' });
      const observed = tally(await providersOf(600, 6));
      const chi = chiSquare(observed, weights, 600);
      assert.ok(chi < CHI2_CRITICAL_2DF, `χ² = ${chi.toFixed(2)} for ${JSON.stringify(observed)} against ${JSON.stringify(weights)}`);
      assert.equal((await adminStatusBody(gw)).overlay?.serving_revision, revision);
    });
  }

  it('7. drain B: a session bound to B keeps B; new sessions never get B', async () => {
    await edit({ mode: 'roundRobin', weights: { alpha: 1, bravo: 1, charlie: 1 } });
    const onB = await sessionBoundTo('bravo', 'SB');
    await edit({ states: { alpha: 'active', bravo: 'drain', charlie: 'active' } });
    for (let i = 0; i < 3; i++) assert.equal((await ask(onB)).provider, 'bravo', 'the bound session keeps B');
    const fresh: string[] = [];
    for (let i = 0; i < 12; i++) fresh.push((await ask(`fresh-${i}`)).provider ?? '(none)');
    assert.equal(fresh.includes('bravo'), false, `new sessions: ${fresh}`);
    assert.deepEqual(new Set(fresh), new Set(['alpha', 'charlie']));
  });

  it('8. health withdrawal: C is withdrawn when its mock dies, no request fails after that, and restored when it returns', async () => {
    const port = mocks.charlie.port;
    await mocks.charlie.close();
    await servingNow(expectedRevision(['charlie']));
    const after = await providersOf(30);
    assert.deepEqual(new Set(after), new Set(['alpha']), 'B is drained and C withdrawn: only A serves new requests');
    const status = await grid.status();
    const c = status.providers.find((p) => p.cluster === 'charlie');
    assert.equal(c?.health?.verdict, 'unhealthy');
    assert.ok(c?.health?.last_error !== null, '/status shows the last probe error');
    assert.ok(
      (metricValue(await grid.metrics(), 'switchyard_publisher_probes_total', { provider: 'charlie', result: 'failure' }) ?? 0) >= 2,
    );

    mocks.charlie = await startMockProvider({ name: 'charlie', port });
    await servingNow(expectedRevision());
    await waitUntil(async () => (await ask()).provider === 'charlie', 'C serves again', 5_000);
  });

  it('an invalid inventory edit is logged with its error and path, and the last published revision stays', async () => {
    const published = (await grid.status()).published_revision;
    writeByRename(inventoryPath, `${inventoryText()}unexpected_key: 1\n`);
    const line = await grid.waitForLog((l) => l.msg === 'inventory refused; keeping the last valid one', 'the refusal is logged');
    assert.equal(line.code, 'inventory_invalid');
    assert.match(String(line.error), /unexpected_key: unknown key/);
    assert.equal(line.path, inventoryPath);
    const status = await grid.status();
    assert.equal(status.published_revision, published);
    assert.equal(status.inventory.last_error?.code, 'inventory_invalid');
    assert.equal((await adminStatusBody(gw)).overlay?.serving_revision, published);
    writeByRename(inventoryPath, inventoryText());
    await waitUntil(async () => (await grid.status()).inventory.last_error === null, 'the fixed inventory is read', 15_000);
  });

  it('9. a malformed overlay written by hand: the gateway keeps the last revision and shows the rejection', async () => {
    const serving = (await adminStatusBody(gw)).overlay?.serving_revision;
    kubeletWrite(join(dir, 'overlay'), { 'routing-overlay.json': '{"schema_version": "1.0.0", "revision": ' });
    let rejection: { reason: string; message: string } | null | undefined;
    await waitUntil(async () => {
      rejection = (await adminStatusBody(gw)).overlay?.last_rejection;
      return rejection != null;
    }, 'the gateway reports the rejection');
    assert.equal(rejection?.reason, 'invalid_json');
    assert.match(rejection?.message ?? '', /not valid JSON/);
    assert.equal((await adminStatusBody(gw)).overlay?.serving_revision, serving);
    const a = await ask();
    assert.equal(a.status, 200);
    assert.equal(a.revision, serving);
  });

  it('10. tools: a revision with mcp_tool candidates is published and serving, its tools intact, and models route as before', async () => {
    const revision = await edit({ tools: { alpha: ['qual_tool', MODEL], bravo: ['qual_tool'] } });
    const published = parseOverlay(readFileSync(join(dir, 'overlay', 'routing-overlay.json')), {
      expectedScope: { network: 'qual', gateway: 'qual-gw', namespace: 'ai' },
    });
    assert.ok(published.ok, published.ok ? '' : published.message);
    assert.equal(published.overlay.revision, revision);
    const wanted = renderOverlay(parseInventory(inventoryText())).payload.candidates.filter((c) => c.kind === 'mcp_tool');
    assert.deepEqual(
      published.overlay.candidates
        .filter((c) => c.kind === 'mcp_tool')
        .map((c) => [c.name, c.cluster, c.stableId, c.admissionState, c.rank, c.selectionGroup]),
      wanted.map((c) => [c.name, c.cluster, c.stable_id, c.admission_state, c.rank, c.selection_group]),
    );
    assert.equal(wanted.length, 3, 'a tool named like the model is its own candidate');
    const metrics = await grid.metrics();
    assert.equal(metricValue(metrics, 'switchyard_publisher_tool_candidates', { tool: 'qual_tool' }), 2);
    assert.equal(metricValue(metrics, 'switchyard_publisher_candidates', { model: MODEL }), 3, 'tools do not count as models');
    const a = await ask();
    assert.equal(a.status, 200);
    assert.equal(a.revision, revision);
  });

  it('SIGTERM stops the grid loop cleanly', async () => {
    assert.equal(await grid.stop(), 0);
    assert.ok(grid.logs().some((l) => l.msg === 'grid stopped'));
  });
});
