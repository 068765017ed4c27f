import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminStatusBody } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';
import type { EnvelopeOptions } from '../support/overlay.js';
import { candidate, envelope } from '../support/overlay.js';
import { overlayConfig, reloadLines, revisionOf, waitForReload, waitForServing, writeByRename } from '../support/overlay-gateway.js';

// The overlay reload path seen from outside: a real gateway process in overlay mode, an
// overlay file rewritten under it, and real requests after each change. Every rejection
// must leave the previous revision serving (a reload validates everything before it swaps);
// the outcome is read from the reload log line, /admin/status and /metrics, never inferred
// from time.

const names = ['east', 'west', 'central'] as const;
// Assembled at run time so that no key-shaped literal sits in the repository.
const SECRET_LOOKING = `sk-${'overlaytestLEAKCHECK0123456789'}`;

let mocks: MockProvider[] = [];
let gw: GatewayProcess;
let dir: string;
let overlayFile: string;
/** Every revision the test has written: none may show up as a metric label value. */
const revisionsSeen = new Set<string>();

function render(candidates: unknown[], o: EnvelopeOptions = {}): { text: string; revision: string } {
  const env = envelope(candidates, { namespace: 'ai', ...o });
  const revision = revisionOf(env);
  revisionsSeen.add(revision);
  return { text: `${JSON.stringify(env, null, 2)}\n`, revision };
}

/** Writes the overlay by temp file + rename, waits until it serves, returns its revision and generation. */
async function publish(candidates: unknown[], o: EnvelopeOptions = {}): Promise<{ revision: string; generation: number; text: string }> {
  const { text, revision } = render(candidates, o);
  writeByRename(overlayFile, text);
  const status = await waitForServing(gw, revision);
  return { revision, generation: status.generation!.number, text };
}

async function servedRevision(model = 'm'): Promise<{ revision: string | null; generation: string | null; provider: string | null }> {
  const r = await postChat(gw.url, chatBody(model));
  assert.equal(r.status, 200, r.text);
  return {
    revision: r.headers.get('x-switchyard-revision'),
    generation: r.headers.get('x-switchyard-generation'),
    provider: r.headers.get('x-switchyard-provider'),
  };
}

describe('overlay reload: retention, same bytes, timestamps, rollback, unknown cluster', () => {
  let baseline: { revision: string; generation: number; text: string };

  before(async () => {
    mocks = await Promise.all(names.map((name) => startMockProvider({ name })));
    dir = mkdtempSync(join(tmpdir(), 'switchyard-overlay-reload-'));
    mkdirSync(join(dir, 'overlay'));
    overlayFile = join(dir, 'overlay', 'routing-overlay.json');
    const first = render([candidate('m', 'east'), candidate('m', 'west')], { sourceGeneration: 5 });
    writeFileSync(overlayFile, first.text);
    gw = await startGatewayProcess(
      overlayConfig(Object.fromEntries(names.map((n, i) => [n, mocks[i]!.baseUrl])), {
        file: overlayFile,
        expected_scope: { network: 'test-net', namespace: 'ai' },
        max_bytes: 4096,
      }),
      { dir },
    );
    const status = await adminStatusBody(gw);
    baseline = { revision: first.revision, generation: status.generation!.number, text: first.text };
    assert.equal(status.overlay?.serving_revision, first.revision);
  });

  after(async () => {
    await gw?.stop();
    await Promise.all(mocks.map((m) => m.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Breaks the overlay with `act`, waits for the rejection with `reason`, proves with a real
   * request that the baseline revision and generation still serve, checks the counter and
   * /admin/status, then puts the serving bytes back (a no-op reload) before the next case.
   */
  async function expectRetained(
    reason: string,
    act: () => void,
    restore: () => void = () => writeByRename(overlayFile, baseline.text),
  ): Promise<void> {
    const from = reloadLines(gw).length;
    act();
    const line = await waitForReload(gw, from, (l) => l.result === 'rejected' && l.reason === reason, `rejected with reason ${reason}`);
    assert.equal(line.revision, baseline.revision, 'the reload line names the revision that keeps serving');
    assert.equal(line.generation, baseline.generation);

    const served = await servedRevision();
    assert.equal(served.revision, baseline.revision, `after a ${reason} rejection the previous revision still serves`);
    assert.equal(served.generation, String(baseline.generation), 'no new generation was swapped in');

    const metrics = await scrapeMetrics(gw.url);
    const rejected = metricValue(metrics, 'switchyard_overlay_reload_total', { result: 'rejected', reason });
    assert.ok(
      rejected !== undefined && rejected >= 1,
      `switchyard_overlay_reload_total{result="rejected",reason="${reason}"} = ${rejected}`,
    );

    const status = await adminStatusBody(gw);
    assert.equal(status.overlay?.serving_revision, baseline.revision);
    assert.equal(status.overlay?.accepted_revision, baseline.revision, 'a rejected overlay is never the accepted revision');
    assert.equal(status.overlay?.last_rejection?.reason, reason);
    assert.ok((status.overlay?.last_rejection?.message ?? '') !== '', 'the last rejection carries a message');

    const back = reloadLines(gw).length;
    restore();
    await waitForReload(gw, back, (l) => l.result === 'unchanged', 'the restored serving bytes are a no-op');
    assert.equal((await servedRevision()).revision, baseline.revision);
  }

  it('Invariant 2 — a deleted overlay file is rejected as missing and the previous revision keeps serving', async () => {
    await expectRetained('missing', () => rmSync(overlayFile));
  });

  it('Invariant 2 — an unreadable overlay path (a directory in place of the file) is rejected and the previous revision keeps serving', async () => {
    // chmod 000 does not stop root from reading, so the unreadable case uses a directory
    // at the overlay path: it opens, but it is not a regular file.
    await expectRetained(
      'unreadable',
      () => {
        rmSync(overlayFile);
        mkdirSync(overlayFile);
      },
      () => {
        rmSync(overlayFile, { recursive: true });
        writeByRename(overlayFile, baseline.text);
      },
    );
  });

  it('Invariant 2 — an overlay file without read permission is rejected as unreadable (non-root only)', async (t) => {
    if (process.getuid?.() === 0) {
      t.skip('running as root: chmod 000 does not stop root from reading; the directory case above covers "unreadable"');
      return;
    }
    await expectRetained(
      'unreadable',
      () => {
        writeByRename(overlayFile, render([candidate('m', 'central')], { sourceGeneration: 6 }).text);
        chmodSync(overlayFile, 0o000);
      },
      () => {
        chmodSync(overlayFile, 0o644);
        writeByRename(overlayFile, baseline.text);
      },
    );
  });

  it('Invariant 2 — an empty overlay file is rejected and the previous revision keeps serving', async () => {
    await expectRetained('empty', () => writeByRename(overlayFile, ''));
  });

  it('Invariant 2 — an overlay file over max_bytes is rejected as too_large and the previous revision keeps serving', async () => {
    // A valid envelope, padded past the configured 4096 bytes: the size alone refuses it.
    const { text } = render([candidate('m', 'central')], { sourceGeneration: 6 });
    await expectRetained('too_large', () => writeByRename(overlayFile, text + ' '.repeat(5000)));
  });

  it('Invariant 2 — malformed JSON is rejected as invalid_json and the previous revision keeps serving', async () => {
    await expectRetained('invalid_json', () => writeByRename(overlayFile, baseline.text.slice(0, Math.floor(baseline.text.length / 2))));
  });

  it('Invariant 2 — a content digest that does not match the overlay is rejected and the previous revision keeps serving', async () => {
    const env = envelope([candidate('m', 'central')], { namespace: 'ai', sourceGeneration: 6 }) as {
      overlay: { candidates: Array<Record<string, unknown>> };
    };
    const tampered = structuredClone(env);
    tampered.overlay.candidates[0]!.cluster = 'west';
    await expectRetained('digest_mismatch', () => writeByRename(overlayFile, JSON.stringify(tampered)));
  });

  it('Invariant 2 — a scope that does not match expected_scope is rejected and the previous revision keeps serving', async () => {
    const { text } = render([candidate('m', 'central')], { namespace: 'other-namespace', sourceGeneration: 6 });
    await expectRetained('scope_mismatch', () => writeByRename(overlayFile, text));
  });

  it('Invariant 2 — an unsupported schema_version is rejected and the previous revision keeps serving', async () => {
    const env = envelope([candidate('m', 'central')], { namespace: 'ai', sourceGeneration: 6 });
    await expectRetained('unsupported_schema_version', () =>
      writeByRename(overlayFile, JSON.stringify({ ...env, schema_version: '2.0.0' })),
    );
  });

  it('Invariant 2 — a duplicate stable_id is rejected and the previous revision keeps serving', async () => {
    const { text } = render([candidate('m', 'east', { stable_id: 'same-id' }), candidate('m', 'central', { stable_id: 'same-id' })], {
      sourceGeneration: 6,
    });
    await expectRetained('duplicate_stable_id', () => writeByRename(overlayFile, text));
  });

  it('Invariant 7 — a credential-looking value in a candidate is rejected, the previous revision keeps serving, and the value is never echoed', async () => {
    const { text } = render([candidate('m', 'central', { annotations: { note: SECRET_LOOKING } })], { sourceGeneration: 6 });
    await expectRetained('credential_value', () => writeByRename(overlayFile, text));
    const { text: keyed } = render([candidate('m', 'central', { api_key: 'plain-looking-value' })], { sourceGeneration: 6 });
    await expectRetained('credential_value', () => writeByRename(overlayFile, keyed));
    assert.ok(!gw.output.join('\n').includes(SECRET_LOOKING), 'the credential-looking value appears in no gateway output');
    assert.ok(!JSON.stringify(await adminStatusBody(gw)).includes(SECRET_LOOKING), 'nor in /admin/status');
  });

  it('Invariant 2 — a lower source_generation from the same source_uid is rejected as rollback and the previous revision keeps serving', async () => {
    const { text } = render([candidate('m', 'central')], { sourceGeneration: 4 });
    await expectRetained('rollback', () => writeByRename(overlayFile, text));
  });

  it('rewriting the overlay with the same bytes produces no new generation (result "unchanged")', async () => {
    const before = await servedRevision();
    for (const write of [() => writeByRename(overlayFile, baseline.text), () => writeFileSync(overlayFile, baseline.text)]) {
      const from = reloadLines(gw).length;
      write();
      const line = await waitForReload(gw, from, (l) => l.trigger === 'overlay_watch', 'the watcher reloads after the rewrite');
      assert.equal(line.result, 'unchanged', `the same bytes are a no-op, got ${line.result}/${line.reason ?? ''}`);
      assert.equal(line.generation, baseline.generation, 'the generation number is unchanged');
    }
    const after = await servedRevision();
    assert.deepEqual(after, { ...before, provider: after.provider });
    assert.equal(after.generation, String(baseline.generation));
    const status = await adminStatusBody(gw);
    assert.equal(status.generation?.number, baseline.generation);
    const unchanged = metricValue(await scrapeMetrics(gw.url), 'switchyard_overlay_reload_total', { result: 'unchanged' });
    assert.ok(unchanged !== undefined && unchanged >= 2, `switchyard_overlay_reload_total{result="unchanged"} = ${unchanged}`);
  });

  it('a timestamp-only change (same revision, new rendered_at) is applied and the round-robin cycle carries on', async () => {
    const rr = [candidate('rr', 'east'), candidate('rr', 'west'), candidate('rr', 'central')];
    const order = ['east', 'west', 'central'];
    const applied = await publish(rr, { sourceGeneration: 10, selectionMode: 'roundRobin', renderedAt: '2026-11-29T10:00:00Z' });
    const first = [(await servedRevision('rr')).provider, (await servedRevision('rr')).provider];
    const k = order.indexOf(first[0]!);
    assert.ok(k >= 0, `served by a known provider: ${first[0]}`);
    assert.equal(first[1], order[(k + 1) % 3], `round robin: ${first.join(',')}`);

    const from = reloadLines(gw).length;
    const restamped = render(rr, { sourceGeneration: 10, selectionMode: 'roundRobin', renderedAt: '2026-11-29T10:05:00Z' });
    assert.equal(restamped.revision, applied.revision, 'the timestamp is outside the digest');
    assert.notEqual(restamped.text, applied.text);
    writeByRename(overlayFile, restamped.text);
    const line = await waitForReload(gw, from, (l) => l.result === 'applied', 'the re-rendered overlay is applied');
    assert.equal(line.revision, applied.revision);
    assert.equal(line.generation, applied.generation + 1, 'a new generation carries the new rendered_at');

    const third = await servedRevision('rr');
    assert.equal(third.generation, String(applied.generation + 1), 'the request ran on the new generation');
    assert.equal(third.revision, applied.revision);
    assert.equal(third.provider, order[(k + 2) % 3], `the cycle continues rather than restarting: ${[...first, third.provider].join(',')}`);
    const status = await adminStatusBody(gw);
    assert.equal((status.overlay as unknown as { rendered_at: string }).rendered_at, '2026-11-29T10:05:00Z');
  });

  it('rollback: a lower source_generation from the same source_uid is refused; from a different source_uid it is accepted', async () => {
    const serving = await publish([candidate('m', 'east')], { sourceGeneration: 20 });
    const from = reloadLines(gw).length;
    const stale = render([candidate('m', 'west')], { sourceGeneration: 19 });
    writeByRename(overlayFile, stale.text);
    await waitForReload(gw, from, (l) => l.result === 'rejected' && l.reason === 'rollback', 'the stale revision is refused');
    const still = await servedRevision();
    assert.equal(still.revision, serving.revision);
    assert.equal(still.provider, 'east');
    assert.equal((await adminStatusBody(gw)).overlay?.source_generation, 20);

    // A recreated source object (new uid) starts its generations over.
    const recreated = await publish([candidate('m', 'west')], { sourceGeneration: 1, sourceUid: 'uid-2' });
    const now = await servedRevision();
    assert.equal(now.revision, recreated.revision);
    assert.equal(now.provider, 'west');
    const status = await adminStatusBody(gw);
    assert.equal(status.overlay?.source_generation, 1);
    assert.equal(status.overlay?.source_uid, 'uid-2');
  });

  it('a candidate naming an unconfigured cluster is never served, the revision is still applied, and it is reported', async () => {
    const from = reloadLines(gw).length;
    const applied = await publish([candidate('m', 'nowhere'), candidate('m', 'central')], { sourceGeneration: 2, sourceUid: 'uid-2' });
    for (let i = 0; i < 10; i++) {
      const r = await servedRevision();
      assert.equal(r.revision, applied.revision);
      assert.equal(r.provider, 'central', 'deterministic order would pick the first candidate, but its cluster is unknown');
    }
    const status = await adminStatusBody(gw);
    assert.deepEqual(status.overlay?.unroutable_candidates, [
      { stable_id: 'inference_model/m/nowhere-site/nowhere', kind: 'inference_model', model: 'm', cluster: 'nowhere' },
    ]);
    assert.equal(status.overlay?.candidates_per_model.m, 2, 'the unroutable candidate still counts as part of the revision');
    assert.equal(metricValue(await scrapeMetrics(gw.url), 'switchyard_overlay_unroutable_candidates'), 1);
    const line = await waitForReload(gw, from, (l) => l.result === 'applied' && l.revision === applied.revision, 'the revision is applied');
    assert.ok(
      JSON.stringify(line.warnings ?? []).includes('nowhere'),
      `the reload line reports the unroutable candidate: ${JSON.stringify(line)}`,
    );

    // Once the candidate is gone, the gauge drops back.
    await publish([candidate('m', 'central')], { sourceGeneration: 3, sourceUid: 'uid-2' });
    assert.equal(metricValue(await scrapeMetrics(gw.url), 'switchyard_overlay_unroutable_candidates'), 0);
    assert.deepEqual((await adminStatusBody(gw)).overlay?.unroutable_candidates, []);
  });

  it('no overlay revision ever appears as a metric label value', async () => {
    assert.ok(revisionsSeen.size >= 5);
    for (const url of [gw.url, gw.adminUrl!]) {
      const text = await scrapeMetrics(url);
      const values = [...text.matchAll(/[A-Za-z_][A-Za-z0-9_]*="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);
      assert.ok(values.length > 0, 'the scrape has labelled series');
      for (const v of values) {
        assert.ok(!revisionsSeen.has(v), `a revision is a label value: ${v}`);
        assert.ok(!/[0-9a-f]{64}/.test(v), `a digest-shaped label value: ${v}`);
      }
      for (const revision of revisionsSeen) assert.ok(!text.includes(revision), `revision ${revision.slice(0, 12)} appears in /metrics`);
    }
  });
});
