// contract/: overlay contract v1, the wire format shared by the gateway (which reads
// overlays) and the publisher (which writes them). It owns the types, parsing and
// validation (zod), the RFC 8785 revision digest, rollback protection, stable ids, and the
// bounded read of an overlay file (and, by slices, of a growing file such as the audit log).
//
// Pure: every function is a function of its input, and reading a file (readOverlayFile) is
// the only I/O. No network, no timers, no process state. It imports nothing from other src/
// folders, so both halves of the project (and config/, for its field paths and credential
// shapes) can depend on it. The contract: docs/overlay-format.md; vectors:
// test/contract/vectors/ (and the shared conformance suite, when checked out beside the repository).

export { looksLikeCredentialValue } from './credential-value.js';
export type { RevisionInput } from './digest.js';
export { computeRevision, sha256Hex } from './digest.js';
export type { ParseOptions } from './parse.js';
export { parseOverlay } from './parse.js';
export type { ReadResult, SliceResult } from './read.js';
export { readBoundedFileSync, readFileSlice, readOverlayFile } from './read.js';
export { formatPath } from './schema.js';
export { stableIdFor } from './stable-id.js';
export { checkSuccession } from './succession.js';
export type {
  AdmissionState,
  CandidateKind,
  ContractResult,
  CredentialReference,
  ExpectedScope,
  OverlayCandidate,
  OverlayProvenance,
  OverlayScope,
  ParsedOverlay,
  Rejection,
  RejectReason,
  SelectionMode,
} from './types.js';
export { MAX_CANDIDATES, MAX_OVERLAY_BYTES, REJECT_REASONS, SCHEMA_VERSION } from './types.js';
