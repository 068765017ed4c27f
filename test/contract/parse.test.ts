import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { ContractResult, ParsedOverlay, RejectReason } from '../../src/contract/index.js';
import { computeRevision, MAX_CANDIDATES, MAX_OVERLAY_BYTES, parseOverlay, stableIdFor } from '../../src/contract/index.js';

type Json = Record<string, unknown>;

const candidate = (name: string, site: string, extra: Json = {}): Json => ({
  kind: 'inference_model',
  name,
  site,
  cluster: `provider-${site}`,
  fresh: true,
  ...extra,
});

/** A self-consistent envelope around `candidates`, digest included. */
function envelope(candidates: unknown[], overlayExtra: Json = {}): Json {
  const overlay = { network: 'net', local_site: 'site-a', ...overlayExtra, candidates };
  const digest = computeRevision(overlay);
  return {
    schema_version: '1.0.0',
    revision: { kind: 'content_addressed', algorithm: 'sha256', value: digest },
    content_digest: { algorithm: 'sha256', value: digest },
    scope: { network: 'net', gateway: 'gw', namespace: 'ns', local_site: 'site-a' },
    provenance: {
      producer: 'test',
      producer_version: '0.0.0',
      source_name: 'net',
      source_uid: 'uid',
      source_generation: 1,
      rendered_at: '2026-11-29T16:30:00.123+01:00',
    },
    overlay,
  };
}

const parse = (doc: unknown) => parseOverlay(JSON.stringify(doc));

function accepted(result: ContractResult): ParsedOverlay {
  assert.ok(result.ok, result.ok ? '' : `${result.reason}: ${result.message}`);
  return result.overlay;
}

function refused(result: ContractResult, reason: RejectReason): string {
  assert.equal(result.ok, false, 'the overlay was accepted');
  if (result.ok) return '';
  assert.equal(result.reason, reason, result.message);
  return result.message;
}

/** `count` candidates spread over `models` models, each model's candidates in selection groups. */
function manyCandidates(count: number, models: number): Json[] {
  return Array.from({ length: count }, (_, i) =>
    candidate(`model-${i % models}`, `site-${i}`, {
      stable_id: stableIdFor('inference_model', `model-${i % models}`, `site-${i}`, `provider-site-${i}`),
      selection_group: Math.floor(i / models) % 2,
      traffic_weight: (i % 1000) + 1,
      rank: i,
      labels: { zone: `z${i % 7}` },
    }),
  );
}

test('a 1024-candidate envelope over 256 models is accepted with every candidate normalized', () => {
  const overlay = accepted(parse(envelope(manyCandidates(MAX_CANDIDATES, 256))));
  assert.equal(overlay.candidates.length, 1024);
  assert.equal(new Set(overlay.candidates.map((c) => c.stableId)).size, 1024);
  assert.equal(overlay.candidates[1023]!.trafficWeight, 24);
});

test('an envelope with 1025 candidates is refused as too_large, naming overlay.candidates', () => {
  const message = refused(parse(envelope(manyCandidates(MAX_CANDIDATES + 1, 256))), 'too_large');
  assert.match(message, /^overlay\.candidates: 1025 candidates, at most 1024/);
});

test('a legacy payload with 1025 candidates is refused as too_large, naming candidates', () => {
  const legacy = { local_site: 'site-a', candidates: manyCandidates(MAX_CANDIDATES + 1, 256) };
  assert.match(refused(parse(legacy), 'too_large'), /^candidates: 1025 candidates/);
});

test('defaults apply: stable_id, admission_state, traffic_weight and selection mode', () => {
  const overlay = accepted(parse(envelope([candidate('m', 's')])));
  assert.equal(overlay.selectionMode, 'deterministic');
  assert.deepEqual(overlay.candidates[0], {
    kind: 'inference_model',
    name: 'm',
    site: 's',
    cluster: 'provider-s',
    fresh: true,
    stableId: 'inference_model/m/s/provider-s',
    admissionState: 'new_and_existing',
    trafficWeight: 1,
  });
});

test('a parsed overlay, its candidates and their credentials are frozen', () => {
  const credential = { strategy: 'bearer_token', secretRef: { name: 'n', namespace: 'ns', key: 'k' } };
  const overlay = accepted(parse(envelope([candidate('m', 's', { credential })])));
  assert.ok(Object.isFrozen(overlay));
  assert.ok(Object.isFrozen(overlay.candidates));
  assert.ok(Object.isFrozen(overlay.candidates[0]));
  assert.ok(Object.isFrozen(overlay.candidates[0]!.credential!.secretRef));
  assert.deepEqual(overlay.candidates[0]!.credential, credential);
});

test('bytes and a string of the same overlay parse alike, and rawSha256 is the hash of the raw bytes', () => {
  const text = JSON.stringify(envelope([candidate('modèle', 's')]), null, 2);
  const fromString = accepted(parseOverlay(text));
  const fromBytes = accepted(parseOverlay(new TextEncoder().encode(text)));
  assert.deepEqual(fromString, fromBytes);
  assert.equal(fromBytes.rawSha256, createHash('sha256').update(text, 'utf8').digest('hex'));
});

test('reformatting an envelope changes rawSha256 but not the revision', () => {
  const doc = envelope([candidate('m', 's')]);
  const compact = accepted(parseOverlay(JSON.stringify(doc)));
  const pretty = accepted(parseOverlay(JSON.stringify(doc, null, 4)));
  assert.equal(compact.revision, pretty.revision);
  assert.notEqual(compact.rawSha256, pretty.rawSha256);
});

test('empty or whitespace-only input is refused as empty', () => {
  refused(parseOverlay(new Uint8Array(0)), 'empty');
  refused(parseOverlay(''), 'empty');
  refused(parseOverlay(' \n\t '), 'empty');
});

test('input over 2 MiB is refused as too_large before it is parsed', () => {
  refused(parseOverlay(new Uint8Array(MAX_OVERLAY_BYTES + 1)), 'too_large');
});

test('bad JSON is refused as invalid_json without quoting the text', () => {
  const message = refused(parseOverlay('{"token": sk-live-0123456789abcdef}'), 'invalid_json');
  assert.ok(!message.includes('0123456789'), message);
  refused(parseOverlay(new Uint8Array([0x7b, 0xff, 0x7d])), 'invalid_json');
});

test('a top level that is not an object is refused as malformed_structure', () => {
  refused(parseOverlay('[]'), 'malformed_structure');
  refused(parseOverlay('null'), 'malformed_structure');
  refused(parseOverlay('"overlay"'), 'malformed_structure');
});

test('one envelope field is enough to parse strictly as an envelope, with no legacy fallback', () => {
  const legacy = { network: 'net', local_site: 'site-a', candidates: [candidate('m', 's')] };
  accepted(parse(legacy));
  refused(parse({ ...legacy, provenance: {} }), 'missing_schema_version');
  refused(parse({ ...legacy, scope: {} }), 'missing_schema_version');
  refused(parse({ ...legacy, schema_version: '1.0.0' }), 'malformed_structure');
  refused(parse({ ...envelope([]), schema_version: 1 }), 'unsupported_schema_version');
});

test('an envelope without overlay.network is refused as malformed_structure', () => {
  const doc = envelope([]);
  delete (doc.overlay as Json).network;
  assert.match(refused(parse(doc), 'malformed_structure'), /^overlay\.network: required/);
});

test('a digest in upper-case hex is refused as malformed_structure', () => {
  const doc = envelope([]);
  const digest = doc.content_digest as { value: string };
  digest.value = digest.value.toUpperCase();
  assert.match(refused(parse(doc), 'malformed_structure'), /^content_digest\.value:/);
});

test('an edited candidate without a new digest is refused as digest_mismatch', () => {
  const doc = envelope([candidate('m', 's')]);
  ((doc.overlay as Json).candidates as Json[])[0]!.fresh = false;
  refused(parse(doc), 'digest_mismatch');
});

test('messages name the field path, in envelope and legacy form', () => {
  const weight = refused(parse(envelope([candidate('a', 's'), candidate('b', 's', { traffic_weight: 0 })])), 'invalid_candidate');
  assert.equal(weight, 'overlay.candidates[1].traffic_weight: must be 1-1000 (an integer)');
  const legacy = { local_site: 'x', candidates: [candidate('a', 's', { fresh: 'yes' })] };
  assert.equal(refused(parse(legacy), 'invalid_candidate'), 'candidates[0].fresh: must be true or false');
  const missing = { local_site: 'x', candidates: [{ kind: 'mcp_tool', name: 'n', site: 's', fresh: true }] };
  assert.equal(refused(parse(missing), 'invalid_candidate'), 'candidates[0].cluster: required');
});

test('blank strings and control characters are refused in contract strings', () => {
  refused(parse(envelope([candidate('  ', 's')])), 'invalid_candidate');
  refused(parse(envelope([candidate('m\nINJECTED log line', 's')])), 'invalid_candidate');
  refused(parse(envelope([candidate('', 's')])), 'invalid_candidate');
});

test('credential-looking keys are found case-insensitively, with or without separators, at any depth', () => {
  for (const key of ['token', 'Value', 'api_key', 'apiKey', 'API-KEY', 'secret', 'PASSWORD', 'Authorization', 'access_token']) {
    const message = refused(parse(envelope([candidate('m', 's', { extra: [{ deep: { [key]: 'x' } }] })])), 'credential_value');
    assert.equal(message.split(':')[0], `overlay.candidates[0].extra[0].deep.${key}`);
  }
  // A secretRef names the secret; `key` is the key inside it, not a credential value.
  accepted(
    parse(
      envelope([
        candidate('m', 's', { credential: { strategy: 'bearer_token', secretRef: { name: 'n', namespace: 'ns', key: 'token' } } }),
      ]),
    ),
  );
});

test('Bearer and sk- values are refused wherever they are, and the message never holds them', () => {
  const secrets = ['Bearer abc.def.ghi', 'bearer  xyz', 'sk-proj-abcdefghijklmnop1234', 'sk-ant-api03-abcdefghijklmnop'];
  for (const secret of secrets) {
    for (const extra of [{ note: secret }, { tags: ['a', { b: secret }] }, { cluster: secret }]) {
      const message = refused(parse(envelope([candidate('m', 's', extra)])), 'credential_value');
      assert.ok(!message.includes(secret.slice(0, 10)), message);
    }
  }
  // `bearer_token` as a strategy value is not a credential.
  accepted(parse(envelope([candidate('m', 's', { strategy_hint: 'bearer_token', note: 'task-sk-1' })])));
  // Nor is a short `sk-` name such as a Slovak site: a key has 16+ characters after the prefix.
  accepted(parse(envelope([candidate('m', 'sk-bratislava')])));
});

test('a field name shaped like a secret is refused without echoing the name', () => {
  // Assembled at run time so that no key-shaped literal sits in the repository.
  const message = refused(parse(envelope([candidate('m', 's', { meta: { [`sk-${'abcdefghijklmnopqrst'}`]: 1 } })])), 'credential_value');
  assert.ok(!message.includes('sk-abcdefgh'), message);
  assert.match(message, /^overlay\.candidates\[0\]\.meta:/);
});

test('a mixed kind with the same name is a different model for selection groups', () => {
  const overlay = accepted(parse(envelope([candidate('m', 's', { selection_group: 0 }), candidate('m', 's', { kind: 'mcp_tool' })])));
  assert.equal(overlay.candidates.length, 2);
});

test('a selection group number far beyond the candidate count is refused without scanning up to it', () => {
  const doc = envelope([candidate('m', 'a', { selection_group: 0 }), candidate('m', 'b', { selection_group: 9_000_000_000_000 })]);
  assert.match(refused(parse(doc), 'invalid_selection_group'), /has no group 1/);
});

test('a lone surrogate cannot be canonicalized and is refused as malformed_structure', () => {
  const text = JSON.stringify(envelope([])).replace('"candidates":[]', '"candidates":[{"x":"\\ud800"}]');
  refused(parseOverlay(text), 'malformed_structure');
});

test('hostile nesting inside a candidate is refused, never a crash', () => {
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  const text = JSON.stringify(envelope([])).replace('"candidates":[]', `"candidates":[{"x":${deep}}]`);
  refused(parseOverlay(text), 'malformed_structure');
  refused(parseOverlay(`{"local_site":"s","candidates":[{"x":${deep}}]}`), 'invalid_candidate');
});

test('rendered_at accepts RFC 3339 offsets and fractions and refuses impossible dates', () => {
  const withRendered = (renderedAt: string) => {
    const doc = envelope([]);
    (doc.provenance as Json).rendered_at = renderedAt;
    return parse(doc);
  };
  for (const ok of ['2026-02-28T23:59:60Z', '2024-02-29t00:00:00.5-05:30', '2026-11-29T16:30:00+00:00']) {
    accepted(withRendered(ok));
  }
  for (const bad of ['2026-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-11-29T24:00:00Z', '2026-11-29T16:30:00', '2026-11-29']) {
    refused(withRendered(bad), 'malformed_structure');
  }
});

test('computeRevision covers candidate order and unknown fields but not key order', () => {
  const a = candidate('m', 'a');
  const b = candidate('m', 'b');
  const base = computeRevision({ network: 'n', local_site: 's', candidates: [a, b] });
  assert.match(base, /^[0-9a-f]{64}$/);
  assert.notEqual(computeRevision({ network: 'n', local_site: 's', candidates: [b, a] }), base);
  assert.notEqual(computeRevision({ network: 'n', local_site: 's', candidates: [{ ...a, hint: 1 }, b] }), base);
  const reordered = Object.fromEntries(Object.entries(a).reverse());
  assert.equal(computeRevision({ candidates: [reordered, b], local_site: 's', network: 'n' }), base);
});

test('computeRevision includes selection_policy only when present, and network only when present', () => {
  const payload = { network: 'n', local_site: 's', candidates: [] };
  const plain = computeRevision(payload);
  assert.equal(computeRevision({ ...payload, selection_policy: undefined }), plain);
  assert.notEqual(computeRevision({ ...payload, selection_policy: { mode: 'random' } }), plain);
  const canonicalNoNetwork = '{"candidates":[],"local_site":"s"}';
  assert.equal(computeRevision({ local_site: 's', candidates: [] }), createHash('sha256').update(canonicalNoNetwork).digest('hex'));
});

test('a selection_policy is part of the envelope digest and sets the selection mode', () => {
  const overlay = accepted(parse(envelope([candidate('m', 's')], { selection_policy: { mode: 'roundRobin' } })));
  assert.equal(overlay.selectionMode, 'roundRobin');
  const doc = envelope([candidate('m', 's')]);
  (doc.overlay as Json).selection_policy = { mode: 'random' };
  refused(parse(doc), 'digest_mismatch');
});

test('a legacy revision is the digest computed over its payload', () => {
  const payload = { network: 'n', local_site: 's', candidates: [candidate('m', 's')], generated_at: 'whenever' };
  const overlay = accepted(parse(payload));
  assert.equal(overlay.format, 'legacy');
  assert.equal(overlay.revision, computeRevision(payload));
  assert.equal(overlay.scope, undefined);
  assert.equal(overlay.provenance, undefined);
});

test('an expected scope with no field set does not refuse a legacy payload', () => {
  accepted(parseOverlay(JSON.stringify({ local_site: 's', candidates: [] }), { expectedScope: {} }));
});

test('stableIdFor is FNV-1a 32-bit of kind/name/site/cluster as 8 lowercase hex digits', () => {
  assert.equal(stableIdFor('inference_model', 'model-a', 'site-a', 'cluster-a'), '218148b9');
  assert.equal(stableIdFor('inference_model', 'modèle-é', 'site-a', 'cluster-a'), '7022268b');
  assert.equal(stableIdFor('mcp_tool', 't24', 's', 'c'), '0dfd5827');
});
