// The overlay contract's vocabulary: what a parsed overlay looks like, and the closed set of
// reasons for refusing one. Shared by the gateway (reload path) and the publisher.
import type { admissionStates, candidateKinds, selectionModes } from './schema.js';

export const MAX_OVERLAY_BYTES = 2 * 1024 * 1024;
export const MAX_CANDIDATES = 1024;
export const SCHEMA_VERSION = '1.0.0';

/**
 * Every reason an overlay can be refused for: a closed set, so callers can count and branch
 * on reasons (messages are for people), and a list, so a test can check each has a vector.
 */
export const REJECT_REASONS = [
  'missing',
  'unreadable',
  'empty',
  'too_large',
  'invalid_json',
  'malformed_structure',
  'missing_schema_version',
  'unsupported_schema_version',
  'digest_mismatch',
  'revision_digest_mismatch',
  'scope_mismatch',
  'legacy_with_expected_scope',
  'invalid_candidate',
  'duplicate_candidate',
  'duplicate_stable_id',
  'credential_value',
  'invalid_selection_group',
  'rollback',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

/** What this gateway expects an envelope's `scope` to say; each field set is compared. */
export interface ExpectedScope {
  network?: string;
  gateway?: string;
  namespace?: string;
  local_site?: string;
}

// The closed sets are the schema's own lists, so the parser and the types cannot drift.
export type AdmissionState = (typeof admissionStates)[number];
export type SelectionMode = (typeof selectionModes)[number];
export type CandidateKind = (typeof candidateKinds)[number];

export interface CredentialReference {
  strategy: 'bearer_token';
  secretRef: { name: string; namespace: string; key: string };
}

export interface OverlayCandidate {
  kind: CandidateKind;
  /** The model (or tool) name clients ask for. */
  name: string;
  site: string;
  /** Names a provider of the gateway config. */
  cluster: string;
  fresh: boolean;
  /** As given, else `kind/name/site/cluster`. */
  stableId: string;
  admissionState: AdmissionState;
  rank?: number;
  selectionTier?: unknown;
  selectionGroup?: number;
  /** Its site's region, when the producer gave one (an extension field, outside v1's list). */
  region?: string;
  /** 1-1000, default 1. */
  trafficWeight: number;
  credential?: CredentialReference;
}

export interface OverlayScope {
  network: string;
  gateway: string;
  namespace: string;
  local_site: string;
}

export interface OverlayProvenance {
  producer: string;
  producer_version: string;
  source_name: string;
  source_uid: string;
  source_generation: number;
  rendered_at: string;
}

export interface ParsedOverlay {
  format: 'envelope' | 'legacy';
  /** Lowercase hex SHA-256 of the semantic content; for legacy, the digest computed here. */
  revision: string;
  network?: string;
  localSite: string;
  selectionMode: SelectionMode;
  candidates: readonly OverlayCandidate[];
  scope?: OverlayScope;
  provenance?: OverlayProvenance;
  generatedAt?: string;
  /** Lowercase hex SHA-256 of the raw bytes: the reload path's "nothing changed" check. */
  rawSha256: string;
}

export interface Rejection<R extends RejectReason = RejectReason> {
  ok: false;
  reason: R;
  /** Names the field path. Never holds a suspected secret's value. */
  message: string;
}

export type ContractResult = { ok: true; overlay: ParsedOverlay } | Rejection;

export function reject<R extends RejectReason>(reason: R, message: string): Rejection<R> {
  return { ok: false, reason, message };
}
