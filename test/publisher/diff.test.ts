import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ParsedOverlay, parseOverlay } from '../../src/contract/index.js';
import { diffOverlays, envelopeFor, formatDiff, parseInventory, renderOverlay } from '../../src/publisher/index.js';

function overlayOf(providers: string): ParsedOverlay {
  const inventory = parseInventory(`network: prod\ngateway: gw\nnamespace: ai\nlocal_site: east\nproviders:\n${providers}`);
  const env = envelopeFor(inventory, renderOverlay(inventory), {
    sourceUid: 'u',
    sourceGeneration: 1,
    producerVersion: '0',
    renderedAt: new Date(0),
  });
  const parsed = parseOverlay(JSON.stringify(env));
  assert.ok(parsed.ok);
  return parsed.overlay;
}

describe('overlay diff', () => {
  const before = overlayOf(`  - { cluster: a, site: east, region: r, models: [m, n] }
  - { cluster: b, site: east, region: r, models: [m], weight: 2 }
  - { cluster: c, site: east, region: r, models: [m] }
`);
  const after = overlayOf(`  - { cluster: a, site: east, region: r, models: [m, n], state: drain }
  - { cluster: b, site: east, region: r, models: [m], weight: 7 }
  - { cluster: d, site: east, region: r, models: [m] }
`);

  it('reports, per model, candidates added, removed, changed in admission, and reweighted', () => {
    const diff = diffOverlays(before, after);
    const m = diff.models.find((x) => x.model === 'm');
    assert.deepEqual(
      m?.added.map((c) => c.cluster),
      ['d'],
    );
    assert.deepEqual(
      m?.removed.map((c) => c.cluster),
      ['c'],
    );
    assert.deepEqual(
      m?.admission.map((c) => [c.cluster, c.from, c.to]),
      [['a', 'new_and_existing', 'existing_only']],
    );
    assert.deepEqual(
      m?.reweighted.map((c) => [c.cluster, c.from, c.to]),
      [['b', 2, 7]],
    );
    assert.deepEqual(
      diff.models.map((x) => x.model),
      ['m', 'n'],
    );
    const text = formatDiff(diff);
    assert.match(text, /model m:\n {2}\+ added {6}d@east/);
    assert.match(text, /~ weight {5}b@east \([0-9a-f]{8}\): 2 -> 7/);
  });

  it('says so when nothing changed', () => {
    assert.deepEqual(diffOverlays(before, before).models, []);
    assert.match(formatDiff(diffOverlays(before, before)), /no changes/);
  });

  it('reports tools apart from models, labelled as tools, even when a tool shares a model name', () => {
    const was = overlayOf(`  - { cluster: a, site: east, region: r, models: [m], tools: [echo, m] }
  - { cluster: b, site: east, region: r, tools: [echo], weight: 2 }
`);
    const now = overlayOf(`  - { cluster: a, site: east, region: r, models: [m], tools: [echo, m], state: drain }
  - { cluster: b, site: east, region: r, tools: [echo], weight: 4 }
  - { cluster: c, site: east, region: r, tools: [search] }
`);
    const diff = diffOverlays(was, now);
    assert.deepEqual(
      diff.models.map((x) => [x.model, x.admission.map((c) => c.cluster)]),
      [['m', ['a']]],
    );
    assert.deepEqual(
      diff.tools.map((x) => x.tool),
      ['echo', 'm', 'search'],
    );
    const echo = diff.tools.find((x) => x.tool === 'echo');
    assert.deepEqual(
      echo?.reweighted.map((c) => [c.cluster, c.from, c.to]),
      [['b', 2, 4]],
    );
    assert.deepEqual(
      echo?.admission.map((c) => [c.cluster, c.from, c.to]),
      [['a', 'new_and_existing', 'existing_only']],
    );
    const text = formatDiff(diff);
    assert.match(text, /model m:\n {2}~ admission {2}a@east/);
    assert.match(text, /tool echo:\n {2}~ admission {2}a@east \([0-9a-f]{8}\): new_and_existing -> existing_only\n {2}~ weight {5}b@east/);
    assert.match(text, /tool search:\n {2}\+ added {6}c@east/);
    assert.ok(text.indexOf('model m:') < text.indexOf('tool echo:'), 'models come first');
  });

  it('keeps the model-only output as it was: no tools section', () => {
    assert.deepEqual(diffOverlays(before, after).tools, []);
    assert.doesNotMatch(formatDiff(diffOverlays(before, after)), /^tool /m);
  });
});
