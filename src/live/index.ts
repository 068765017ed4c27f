// live/: the generation (one deep-frozen object holding everything a reload may change),
// buildGeneration(), prepareGeneration() (files -> generation, the one path shared by
// `validate`, start-up and reload: ADR 0005), the holder that serves it, and the reload
// coordinator.
// Imports only config/, contract/, providers/ (pool factories) and routing/ types; never
// governance/, audit/ or server/. See docs/decisions/0001-one-generation.md.
export {
  type Generation,
  type GenerationCandidate,
  type GenerationRoute,
  type GenerationGroup,
  type ProviderRuntime,
  type OverlaySnapshot,
} from './generation.js';
export { buildGeneration, type BuildInputs, type BuildResult } from './build.js';
export { prepareGeneration, type InputsRead, type PrepareInputs, type Preparation, type OverlayRejection } from './prepare.js';
export { GenerationHolder } from './holder.js';
export { ReloadCoordinator, type ReloadTrigger } from './reload-coordinator.js';
export { diffGenerations, restartOnlyWarnings, type GenerationChanges } from './diff.js';
