// publisher/: the control-plane side of overlay contract v1. It turns an inventory of
// providers into a v1 envelope (renderOverlay, envelopeFor), checks it with the contract's
// own parser and succession rule before writing, publishes it atomically (the kubelet's
// `..data` swap or a rename), keeps source_generation in a state file, and runs the grid
// loop (inventory watch + health probes with hysteresis + /metrics and /status).
//
// Imports contract/ (digest, stable ids, parser, bounded reader: never a second copy),
// watch/ (the gateway's parent-directory watch) and telemetry/ (the logger type). Never
// server/ or live/: the control plane does not depend on the data plane it feeds.
// See docs/decisions/0010-overlay-publisher.md and docs/overlay-format.md.

export { type CandidateChanges, diffOverlays, formatDiff, type ModelDiff, type OverlayDiff, type ToolDiff } from './diff.js';
export { Grid, type GridOptions, type GridStatus } from './grid.js';
export { serveGrid } from './grid-http.js';
export { type HealthVerdict, ProviderHealth } from './health.js';
export { type Inventory, MAX_INVENTORY_BYTES, parseInventory, readInventory } from './inventory.js';
export { PUBLISH_ISSUE_CODES, PublishError, type PublishIssue, type PublishIssueCode } from './issues.js';
export { LAYOUTS, type Layout, type Output, statePathFor, visiblePath, writeByRename, writeKubelet } from './output.js';
export { checkEnvelope, type PublishOutcome, publishOverlay, readPublished } from './publish.js';
export {
  candidatesPerModel,
  candidatesPerTool,
  type Envelope,
  envelopeFor,
  OVERLAY_KEY,
  PRODUCER,
  type RenderedCandidate,
  type RenderedKind,
  type RenderedOverlay,
  renderOverlay,
} from './render.js';
export { type PublisherState, readState, STATE_FORMAT, writeState } from './state-file.js';
