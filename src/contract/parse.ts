// parseOverlay: raw bytes -> a validated, frozen ParsedOverlay, or one reject reason with a
// message that names the field path. Pure and synchronous: the reload path calls it on
// bytes from readOverlayFile, the publisher on what it is about to write.
import { validateCandidates } from './candidates.js';
import { quote } from './credential-value.js';
import { computeRevision, sha256Hex } from './digest.js';
import type { EnvelopeWire } from './schema.js';
import { describeIssue, envelopeSchema, legacyPayloadSchema } from './schema.js';
import type { ContractResult, ExpectedScope, OverlayScope, ParsedOverlay, Rejection } from './types.js';
import { MAX_CANDIDATES, MAX_OVERLAY_BYTES, reject, SCHEMA_VERSION } from './types.js';

export interface ParseOptions {
  /** When any field is set, only an envelope whose scope matches it field by field is accepted. */
  expectedScope?: ExpectedScope;
}

/** Any of these at top level makes the file an envelope: parsed strictly, never as legacy. */
const ENVELOPE_MARKERS = ['schema_version', 'revision', 'content_digest', 'scope', 'provenance'] as const;
const SCOPE_FIELDS = ['network', 'gateway', 'namespace', 'local_site'] as const;

const utf8 = new TextDecoder('utf-8', { fatal: true });

type JsonObject = Record<string, unknown>;

export function parseOverlay(bytes: Uint8Array | string, options: ParseOptions = {}): ContractResult {
  const raw = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  if (raw.byteLength === 0) return reject('empty', 'overlay: the file is empty');
  if (raw.byteLength > MAX_OVERLAY_BYTES) {
    return reject('too_large', `overlay: ${raw.byteLength} bytes, at most ${MAX_OVERLAY_BYTES} allowed`);
  }
  const document = decodeJson(raw);
  if (!document.ok) return document;
  const root = document.value;
  if (typeof root !== 'object' || root === null || Array.isArray(root)) {
    return reject('malformed_structure', '(top level): must be a JSON object');
  }
  const rawSha256 = sha256Hex(raw);
  try {
    return ENVELOPE_MARKERS.some((key) => Object.hasOwn(root, key))
      ? parseEnvelope(root as JsonObject, rawSha256, options.expectedScope)
      : parseLegacy(root as JsonObject, rawSha256, options.expectedScope);
  } catch (error) {
    // Only canonicalization (NaN cannot come from JSON; a lone surrogate can) or a stack
    // overflow on hostile nesting gets here; neither message carries input text.
    const detail = error instanceof RangeError ? 'nested too deeply' : (error as Error).message;
    return reject('malformed_structure', `overlay: cannot be canonicalized (RFC 8785): ${detail}`);
  }
}

function decodeJson(raw: Uint8Array): { ok: true; value: unknown } | Rejection {
  let text: string;
  try {
    text = utf8.decode(raw); // also drops a leading byte order mark
  } catch {
    return reject('invalid_json', 'overlay: not valid UTF-8');
  }
  if (text.trim() === '') return reject('empty', 'overlay: the file holds only whitespace');
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    // V8's message quotes the text around the error, which may be a secret: keep the position only.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    return reject('invalid_json', `overlay: not valid JSON${position ? ` (at character ${position})` : ''}`);
  }
}

function parseEnvelope(root: JsonObject, rawSha256: string, expected: ExpectedScope | undefined): ContractResult {
  if (!Object.hasOwn(root, 'schema_version')) {
    const present = ENVELOPE_MARKERS.filter((key) => Object.hasOwn(root, key)).join(', ');
    return reject(
      'missing_schema_version',
      `schema_version: required in an envelope (the file has ${present}); expected "${SCHEMA_VERSION}"`,
    );
  }
  if (root.schema_version !== SCHEMA_VERSION) {
    return reject(
      'unsupported_schema_version',
      `schema_version: ${describeVersion(root.schema_version)} is not supported; expected "${SCHEMA_VERSION}"`,
    );
  }
  const parsed = envelopeSchema.safeParse(root);
  if (!parsed.success) return reject('malformed_structure', describeIssue('', parsed.error));
  const envelope = parsed.data;
  const tooMany = checkCount(envelope.overlay.candidates, 'overlay.candidates');
  if (tooMany) return tooMany;

  // Digest first: until it holds, nothing else in the overlay can be trusted to be what
  // the producer wrote. It is computed from the raw JSON, unknown candidate fields included.
  const { network, local_site, candidates: rawCandidates, selection_policy } = root.overlay as JsonObject;
  const recomputed = computeRevision({ network, local_site, candidates: rawCandidates, selection_policy });
  if (envelope.content_digest.value !== recomputed) {
    return reject(
      'digest_mismatch',
      `content_digest.value: ${envelope.content_digest.value} is not the digest of overlay (computed ${recomputed})`,
    );
  }
  if (envelope.revision.value !== envelope.content_digest.value) {
    return reject(
      'revision_digest_mismatch',
      `revision.value: ${envelope.revision.value} differs from content_digest.value ${envelope.content_digest.value}`,
    );
  }
  const scopeProblem = checkScope(envelope) ?? checkExpectedScope(envelope.scope, expected);
  if (scopeProblem) return scopeProblem;

  const candidates = validateCandidates(envelope.overlay.candidates, 'overlay.candidates');
  if (!candidates.ok) return candidates;
  const { overlay, scope, provenance } = envelope;
  const result: ParsedOverlay = {
    format: 'envelope',
    revision: recomputed,
    network: overlay.network,
    localSite: overlay.local_site,
    selectionMode: overlay.selection_policy?.mode ?? 'deterministic',
    candidates: candidates.candidates,
    scope: Object.freeze({ ...scope }),
    provenance: Object.freeze({ ...provenance }),
    rawSha256,
  };
  if (overlay.generated_at !== undefined) result.generatedAt = overlay.generated_at;
  return { ok: true, overlay: Object.freeze(result) };
}

function parseLegacy(root: JsonObject, rawSha256: string, expected: ExpectedScope | undefined): ContractResult {
  const setFields = SCOPE_FIELDS.filter((field) => expected?.[field] !== undefined);
  if (setFields.length > 0) {
    return reject(
      'legacy_with_expected_scope',
      `(top level): a legacy payload has no scope, but an expected scope (${setFields.join(', ')}) is configured; ` +
        'publish an envelope (schema_version, revision, content_digest, scope, provenance, overlay)',
    );
  }
  const parsed = legacyPayloadSchema.safeParse(root);
  if (!parsed.success) return reject('malformed_structure', describeIssue('', parsed.error));
  const payload = parsed.data;
  const tooMany = checkCount(payload.candidates, 'candidates');
  if (tooMany) return tooMany;
  const candidates = validateCandidates(payload.candidates, 'candidates');
  if (!candidates.ok) return candidates;

  const result: ParsedOverlay = {
    format: 'legacy',
    revision: computeRevision({
      network: root.network,
      local_site: root.local_site,
      candidates: root.candidates,
      selection_policy: root.selection_policy,
    }),
    localSite: payload.local_site,
    selectionMode: payload.selection_policy?.mode ?? 'deterministic',
    candidates: candidates.candidates,
    rawSha256,
  };
  if (payload.network !== undefined) result.network = payload.network;
  if (payload.generated_at !== undefined) result.generatedAt = payload.generated_at;
  return { ok: true, overlay: Object.freeze(result) };
}

function checkCount(candidates: readonly unknown[], at: string): Rejection<'too_large'> | undefined {
  if (candidates.length <= MAX_CANDIDATES) return undefined;
  return reject('too_large', `${at}: ${candidates.length} candidates, at most ${MAX_CANDIDATES} allowed`);
}

/** The envelope must agree with itself: scope, overlay and provenance name one network and site. */
function checkScope({ scope, overlay, provenance }: EnvelopeWire): Rejection<'scope_mismatch'> | undefined {
  if (scope.network !== overlay.network) {
    return reject('scope_mismatch', `scope.network: ${quote(scope.network)} differs from overlay.network ${quote(overlay.network)}`);
  }
  if (provenance.source_name !== overlay.network) {
    return reject(
      'scope_mismatch',
      `provenance.source_name: ${quote(provenance.source_name)} differs from overlay.network ${quote(overlay.network)}`,
    );
  }
  if (scope.local_site !== overlay.local_site) {
    return reject(
      'scope_mismatch',
      `scope.local_site: ${quote(scope.local_site)} differs from overlay.local_site ${quote(overlay.local_site)}`,
    );
  }
  return undefined;
}

function checkExpectedScope(scope: OverlayScope, expected: ExpectedScope | undefined): Rejection<'scope_mismatch'> | undefined {
  if (!expected) return undefined;
  for (const field of SCOPE_FIELDS) {
    const want = expected[field];
    if (want !== undefined && want !== scope[field]) {
      return reject('scope_mismatch', `scope.${field}: ${quote(scope[field])} but this gateway expects ${quote(want)}`);
    }
  }
  return undefined;
}

function describeVersion(value: unknown): string {
  if (typeof value === 'string') return /^[\w.+-]{1,32}$/.test(value) ? quote(value) : 'an unrecognized string';
  return value === null ? 'null' : `a ${Array.isArray(value) ? 'list' : typeof value}`;
}
