import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminStatusBody } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import type { Reply } from '../support/http.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, metricValue, scrapeMetrics, tally } from '../support/observe.js';
import type { EnvelopeOptions } from '../support/overlay.js';
import { candidate, envelope } from '../support/overlay.js';
import { attributionHeaders, overlayConfig, revisionOf, waitForServing, writeByRename } from '../support/overlay-gateway.js';

// Selection over overlay candidates, seen from outside: one gateway process in overlay mode
// in front of three mock providers, a new revision published for each scenario, and real
// requests. Who served is read from the attribution headers and cross-checked at the mocks.

const names = ['east', 'west', 'central'] as const;
type Name = (typeof names)[number];
const MOUNTED_SECRET = 'mounted-bearer-value-7f3a9c';

let mocks: Record<Name, MockProvider>;
let gw: GatewayProcess;
let dir: string;
let overlayFile: string;
let mountBase: string;
let sourceGeneration = 0;

/** Publishes a revision (temp file + rename) and waits until it serves. */
async function publish(candidates: unknown[], o: EnvelopeOptions = {}): Promise<string> {
  sourceGeneration += 1;
  const env = envelope(candidates, { sourceGeneration, ...o });
  writeByRename(overlayFile, JSON.stringify(env));
  await waitForServing(gw, revisionOf(env));
  return revisionOf(env);
}

function ask(model: string, session?: string, headers: Record<string, string> = {}): Promise<Reply> {
  return postChat(gw.url, chatBody(model), session === undefined ? headers : { 'x-session-id': session, ...headers });
}

async function servedBy(model: string, n: number, session?: string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await ask(model, session);
    assert.equal(r.status, 200, r.text);
    out.push(r.headers.get('x-switchyard-provider') ?? '(none)');
  }
  return out;
}

function counts(): Record<Name, number> {
  return { east: chatCount(mocks.east), west: chatCount(mocks.west), central: chatCount(mocks.central) };
}

/** A no_route 404 that names no provider, candidate, revision or generation (invariant 8). */
function assertNoRoute(r: Reply, what: string): void {
  assert.equal(r.status, 404, `${what}: ${r.text}`);
  assert.equal(r.json<{ error: { code: string } }>().error.code, 'no_route', what);
  assert.deepEqual(attributionHeaders(r.headers), [], `${what}: no x-switchyard-* attribution`);
}

describe('overlay selection', () => {
  before(async () => {
    const started = await Promise.all(names.map((name) => startMockProvider({ name })));
    mocks = { east: started[0]!, west: started[1]!, central: started[2]! };
    dir = mkdtempSync(join(tmpdir(), 'switchyard-overlay-selection-'));
    mountBase = join(dir, 'credentials');
    mkdirSync(join(mountBase, 'ai', 'east-key'), { recursive: true });
    writeFileSync(join(mountBase, 'ai', 'east-key', 'token'), `${MOUNTED_SECRET}\n`);
    mkdirSync(join(dir, 'overlay'));
    overlayFile = join(dir, 'overlay', 'routing-overlay.json');
    sourceGeneration += 1;
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east')], { sourceGeneration })));
    gw = await startGatewayProcess(
      overlayConfig(
        Object.fromEntries(names.map((n) => [n, mocks[n].baseUrl])),
        { file: overlayFile, credential_mount_base: mountBase },
        { routing: { session_affinity: { header: 'x-session-id', ttl_s: 3600, max_entries: 1000 } } },
      ),
      { dir },
    );
  });

  after(async () => {
    await gw?.stop();
    await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    for (const m of Object.values(mocks)) m.reset();
  });

  it('a served request carries revision, candidate, provider and generation, and the upstream gets the Grid hop headers', async () => {
    const revision = await publish([candidate('m', 'west', { stable_id: '0badcafe' })]);
    const generation = (await adminStatusBody(gw)).generation!.number;
    const r = await ask('m', undefined, {
      'x-ai-routing-revision': 'forged',
      'x-ai-routing-candidate': 'forged',
      'x-request-id': 'req-overlay-1',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-revision'), revision);
    assert.equal(r.headers.get('x-switchyard-candidate'), '0badcafe');
    assert.equal(r.headers.get('x-switchyard-provider'), 'west');
    assert.equal(r.headers.get('x-switchyard-generation'), String(generation));
    const seen = mocks.west.stats().recent.at(-1)!.headers;
    assert.equal(seen['x-ai-routing-candidate'], '0badcafe');
    assert.equal(seen['x-ai-routing-revision'], revision, "the client's copy of the header was replaced");
    assert.equal(seen['x-ai-routing-request-id'], 'req-overlay-1');
  });

  describe('selection groups', () => {
    it('new requests go to the lowest group that has a new_and_existing member', async () => {
      await publish(
        [
          candidate('m', 'east', { selection_group: 0 }),
          candidate('m', 'west', { selection_group: 1 }),
          candidate('m', 'central', { selection_group: 1 }),
        ],
        { selectionMode: 'roundRobin' },
      );
      assert.deepEqual(tally(await servedBy('m', 12)), { east: 12 });
      assert.deepEqual(counts(), { east: 12, west: 0, central: 0 });
    });

    it('when group 0 becomes existing_only, new requests go to group 1', async () => {
      await publish(
        [
          candidate('m', 'east', { selection_group: 0, admission_state: 'existing_only' }),
          candidate('m', 'west', { selection_group: 1 }),
          candidate('m', 'central', { selection_group: 1 }),
        ],
        { selectionMode: 'roundRobin' },
      );
      const seq = await servedBy('m', 12);
      assert.deepEqual(tally(seq), { west: 6, central: 6 }, `group 1 round-robins: ${seq.join(',')}`);
      assert.equal(counts().east, 0);
    });

    it('a 500 from the group 0 candidate fails over to group 1', async () => {
      await publish([candidate('m', 'east', { selection_group: 0 }), candidate('m', 'west', { selection_group: 1 })]);
      mocks.east.addFault({ mode: 'status', status: 500, count: 1 });
      const r = await ask('m');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-switchyard-provider'), 'west');
      assert.equal(r.headers.get('x-switchyard-fallback'), 'east');
      assert.deepEqual(counts(), { east: 1, west: 1, central: 0 });
      // The fault is spent: the next request is east's again.
      assert.deepEqual(await servedBy('m', 1), ['east']);
    });
  });

  describe('selection modes', () => {
    const three = (extra: (n: Name) => Record<string, unknown> = () => ({})): unknown[] => names.map((n) => candidate('m', n, extra(n)));

    it('deterministic always picks the first candidate in overlay order', async () => {
      await publish([candidate('m', 'central'), candidate('m', 'east'), candidate('m', 'west')], { selectionMode: 'deterministic' });
      assert.deepEqual(tally(await servedBy('m', 20)), { central: 20 });
    });

    it('roundRobin cycles strictly through the group', async () => {
      await publish(three(), { selectionMode: 'roundRobin' });
      const seq = await servedBy('m', 30);
      assert.equal(new Set(seq.slice(0, 3)).size, 3, seq.join(','));
      for (let i = 3; i < seq.length; i++) assert.equal(seq[i], seq[i % 3], `request ${i} breaks the cycle: ${seq.join(',')}`);
      assert.deepEqual(counts(), { east: 10, west: 10, central: 10 });
    });

    it('roundRobin keeps its cycle across revisions that change only another model', async () => {
      // ADR-0006: the rotation is keyed by the group's content, not by the revision.
      const other = (n: number): unknown[] => [candidate('other', names[n % 3] as Name)];
      await publish([...three(), ...other(0)], { selectionMode: 'roundRobin' });
      const seq: string[] = [];
      for (let i = 0; i < 9; i++) {
        seq.push(...(await servedBy('m', 1)));
        await publish([...three(), ...other(i + 1)], { selectionMode: 'roundRobin' });
      }
      assert.equal(new Set(seq.slice(0, 3)).size, 3, `a new revision restarted the rotation: ${seq.join(',')}`);
      for (let i = 3; i < seq.length; i++) assert.equal(seq[i], seq[i % 3], `request ${i} breaks the cycle: ${seq.join(',')}`);
      assert.deepEqual(counts(), { east: 3, west: 3, central: 3 });
    });

    it('random sends traffic to every candidate', async () => {
      await publish(three(), { selectionMode: 'random' });
      await servedBy('m', 60);
      // P(some candidate gets none of 60) = 3 * (2/3)^60, about 1e-10.
      for (const [n, c] of Object.entries(counts())) assert.ok(c > 0, `${n} received nothing: ${JSON.stringify(counts())}`);
    });

    it('weightedRandom follows traffic_weight: weight 9 gets clearly more than weight 1', async () => {
      await publish([candidate('m', 'east', { traffic_weight: 1 }), candidate('m', 'west', { traffic_weight: 9 })], {
        selectionMode: 'weightedRandom',
      });
      const t = tally(await servedBy('m', 200));
      const east = t.east ?? 0;
      const west = t.west ?? 0;
      assert.equal(east + west, 200);
      // Expected 20 / 180; uniform would be 100 / 100. The margins are many standard deviations wide.
      assert.ok(west >= 140 && west > 3 * east, `weight 9 vs 1 over 200 requests: west ${west}, east ${east}`);
      assert.ok(east >= 1, 'weight 1 still gets some traffic');
    });
  });

  describe('sessions and admission', () => {
    it('a session bound to X keeps X after X becomes existing_only, while new sessions never get X', async () => {
      await publish([candidate('m', 'east'), candidate('m', 'west')]);
      assert.deepEqual(await servedBy('m', 1, 'sess-a'), ['east'], 'deterministic: the session binds to east');

      // X in a group of its own, set to existing_only.
      await publish([
        candidate('m', 'east', { selection_group: 0, admission_state: 'existing_only' }),
        candidate('m', 'west', { selection_group: 1 }),
      ]);
      assert.deepEqual(tally(await servedBy('m', 5, 'sess-a')), { east: 5 }, 'the bound session keeps its existing_only candidate');
      for (let i = 0; i < 10; i++) assert.deepEqual(await servedBy('m', 1, `sess-new-${i}`), ['west'], `new session ${i}`);
      assert.deepEqual(tally(await servedBy('m', 5)), { west: 5 }, 'requests without a session never get X');

      // X sharing a group whose state the revision sets to existing_only.
      await publish([
        candidate('m', 'east', { selection_group: 0, admission_state: 'existing_only' }),
        candidate('m', 'central', { selection_group: 0, admission_state: 'existing_only' }),
        candidate('m', 'west', { selection_group: 1 }),
      ]);
      assert.deepEqual(tally(await servedBy('m', 3, 'sess-a')), { east: 3 });
      assert.deepEqual(tally(await servedBy('m', 5, 'sess-other')), { west: 5 });
    });

    describe('candidates without a selection_group: admission is per candidate', () => {
      const bindTo = async (session: string, cluster: Name): Promise<void> => {
        // Deterministic mode serves the first candidate, so listing `cluster` first binds the session to it.
        await publish([candidate('m', cluster), ...names.filter((n) => n !== cluster).map((n) => candidate('m', n))], {
          selectionMode: 'deterministic',
        });
        assert.deepEqual(await servedBy('m', 1, session), [cluster], `the session binds to ${cluster}`);
      };

      for (const [label, order] of [
        ['listed between two active ones', ['east', 'west', 'central']],
        ['listed last', ['east', 'central', 'west']],
      ] as const) {
        it(`an existing_only candidate ${label} never takes a new request, and a session bound to it keeps it`, async () => {
          await bindTo('sess-eo', 'west');
          await publish(
            order.map((n) => candidate('m', n, n === 'west' ? { admission_state: 'existing_only' } : {})),
            { selectionMode: 'roundRobin' },
          );
          const fresh: string[] = [];
          for (let i = 0; i < 12; i++) fresh.push(...(await servedBy('m', 1, `sess-new-${label}-${i}`)));
          assert.deepEqual(
            tally(fresh),
            { east: 6, central: 6 },
            `new sessions round-robin over the active candidates only: ${fresh.join(',')}`,
          );
          assert.deepEqual(
            tally(await servedBy('m', 4)),
            { east: 2, central: 2 },
            'requests without a session never get the existing_only candidate',
          );
          assert.deepEqual(tally(await servedBy('m', 3, 'sess-eo')), { west: 3 }, 'the bound session keeps its existing_only candidate');
          assert.equal(counts().west, 1 + 3, 'west saw the binding request and the bound session only');
        });
      }

      it('a none candidate among them never serves: its bound session moves to an active candidate, an existing_only binding stays', async () => {
        await bindTo('sess-none', 'east');
        await bindTo('sess-kept', 'central');
        await publish(
          [
            candidate('m', 'east', { admission_state: 'none' }),
            candidate('m', 'west'),
            candidate('m', 'central', { admission_state: 'existing_only' }),
          ],
          { selectionMode: 'roundRobin' },
        );
        mocks.east.reset();
        assert.deepEqual(tally(await servedBy('m', 6)), { west: 6 }, 'new requests go to the only new_and_existing candidate');
        assert.deepEqual(
          tally(await servedBy('m', 2, 'sess-none')),
          { west: 2 },
          'the session bound to the none candidate is served as a new one',
        );
        assert.deepEqual(tally(await servedBy('m', 2, 'sess-kept')), { central: 2 });
        assert.equal(counts().east, 0, 'the none candidate is never called');
      });

      it('when only existing_only candidates remain, new requests get 404 no_route without attribution while bound sessions are served', async () => {
        await bindTo('sess-last', 'east');
        await publish([
          candidate('m', 'east', { admission_state: 'existing_only' }),
          candidate('m', 'west', { admission_state: 'existing_only' }),
          candidate('m', 'central', { admission_state: 'none' }),
        ]);
        assertNoRoute(await ask('m'), 'a new request');
        assertNoRoute(await ask('m', 'sess-never-bound'), 'a new session');
        assert.deepEqual(tally(await servedBy('m', 3, 'sess-last')), { east: 3 }, 'the bound session is still served');
        const models = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string }> };
        assert.deepEqual(models.data, [], 'a model that admits no new session is not listed');
      });
    });

    it('Invariant 8 — an empty revision answers 404 no_route without attribution, for new requests and bound sessions; a later revision restores routing in the same process', async () => {
      const pid = gw.child.pid;
      await publish([candidate('m', 'east'), candidate('m', 'west')]);
      assert.deepEqual(await servedBy('m', 1, 'sess-empty'), ['east']);

      await publish([]);
      assertNoRoute(await ask('m'), 'a new request');
      assertNoRoute(await ask('m', 'sess-empty'), 'a session bound before the empty revision');
      const models = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: unknown[] };
      assert.deepEqual(models.data, [], '/v1/models lists nothing');
      const status = await adminStatusBody(gw);
      assert.equal(status.overlay?.candidate_count, 0);
      assert.deepEqual(counts(), { east: 1, west: 0, central: 0 }, 'no upstream saw a request after the withdrawal');

      const restored = await publish([candidate('m', 'west')]);
      const r = await ask('m', 'sess-empty');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-switchyard-revision'), restored);
      assert.equal(r.headers.get('x-switchyard-provider'), 'west', 'the withdrawn binding fails over as a new request');
      assert.equal(gw.child.pid, pid);
      assert.equal(gw.child.exitCode, null, 'the process never exited');
      assert.equal(gw.logs().filter((l) => l.msg === 'listening').length, 1, 'no restart: one listening line');
    });

    it('Invariant 8 — a session bound to a withdrawn candidate gets 404 no_route when the model has no candidate left for new sessions', async () => {
      await publish([candidate('m', 'east'), candidate('m', 'west')]);
      assert.deepEqual(await servedBy('m', 1, 'sess-withdrawn'), ['east']);
      await publish([candidate('m', 'west', { admission_state: 'existing_only' })]);
      assertNoRoute(await ask('m', 'sess-withdrawn'), 'the session whose candidate was withdrawn');
      assertNoRoute(await ask('m'), 'a new request');
      const models = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string }> };
      assert.deepEqual(models.data, [], 'a model that admits no new session is not listed');
    });
  });

  describe('credentials from the mount', () => {
    const ref = (name: string): Record<string, unknown> => ({
      credential: { strategy: 'bearer_token', secretRef: { name, namespace: 'ai', key: 'token' } },
    });

    it('a candidate credential is read from {credential_mount_base}/{namespace}/{name}/{key} and sent as a bearer token', async () => {
      await publish([candidate('cred', 'east', ref('east-key'))]);
      const r = await ask('cred');
      assert.equal(r.status, 200, r.text);
      assert.equal(mocks.east.stats().recent.at(-1)!.headers.authorization, `Bearer ${MOUNTED_SECRET}`);
    });

    it('a candidate whose credential file is missing fails over to the next one; as the only candidate it answers 503 credential_unavailable', async () => {
      await publish([
        candidate('cred-fallback', 'west', ref('absent-key')),
        candidate('cred-fallback', 'central'),
        candidate('cred-only', 'west', ref('absent-key')),
      ]);
      const r = await ask('cred-fallback');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-switchyard-provider'), 'central');
      assert.equal(r.headers.get('x-switchyard-fallback'), 'west');
      assert.equal(
        mocks.central.stats().recent.at(-1)!.headers.authorization,
        undefined,
        'the next candidate carries no borrowed credential',
      );

      const only = await ask('cred-only');
      assert.equal(only.status, 503, only.text);
      const error = only.json<{ error: { code: string; message: string } }>().error;
      assert.equal(error.code, 'credential_unavailable');
      assert.match(error.message, /credential/, 'the reason names the unavailable credential');
      assert.equal(counts().west, 0, 'a candidate without its credential is never called');
      const fallbacks = metricValue(await scrapeMetrics(gw.url), 'switchyard_fallbacks_total', {
        provider: 'west',
        reason: 'credential_unavailable',
      });
      assert.ok(
        fallbacks !== undefined && fallbacks >= 2,
        `switchyard_fallbacks_total{provider="west",reason="credential_unavailable"} = ${fallbacks}`,
      );
    });

    it('Invariant 7 — the mounted secret never appears in gateway output or the admin views', async () => {
      await publish([candidate('cred', 'east', ref('east-key'))]);
      assert.equal((await ask('cred')).status, 200);
      assert.ok(!gw.output.join('\n').includes(MOUNTED_SECRET), 'not in any log line');
      assert.ok(!JSON.stringify(await adminStatusBody(gw)).includes(MOUNTED_SECRET), 'not in /admin/status');
      assert.ok(!(await scrapeMetrics(gw.url)).includes(MOUNTED_SECRET), 'not in /metrics');
    });
  });
});
