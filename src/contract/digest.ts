// The overlay revision: SHA-256 over the RFC 8785 (JCS) canonical JSON of the overlay's
// semantic content. Timestamps, scope and provenance stay outside it, so re-rendering the
// same routing decision keeps its revision.
import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';

export interface RevisionInput {
  network?: unknown;
  local_site: unknown;
  candidates: unknown;
  selection_policy?: unknown;
}

export function sha256Hex(data: Uint8Array | string): string {
  // One call, no Hash object: a build hashes every static route's spec (tens of thousands).
  return hash('sha256', data, 'hex');
}

/**
 * Lowercase hex SHA-256 of canonical `{candidates, local_site, network}` (+ `selection_policy`
 * when present). Candidates are taken exactly as given: their order and every field, unknown
 * ones included, are part of the revision. Throws when the input cannot be canonicalized
 * (NaN, Infinity, a lone surrogate).
 */
export function computeRevision(overlayPayload: RevisionInput): string {
  const semantic: Record<string, unknown> = {
    candidates: overlayPayload.candidates,
    local_site: overlayPayload.local_site,
  };
  // Absent and undefined are the same here: JCS, like JSON.stringify, drops undefined members.
  if (overlayPayload.network !== undefined) semantic.network = overlayPayload.network;
  if (overlayPayload.selection_policy !== undefined) semantic.selection_policy = overlayPayload.selection_policy;
  const canonical = canonicalize(semantic);
  if (canonical === undefined) throw new TypeError('overlay payload has no JSON form');
  return sha256Hex(canonical);
}
