// live/: the generation (one deep-frozen object holding the routing a reload may change),
// buildGeneration(), prepareGeneration() (files -> generation and keyring, the one path shared
// by `validate`, start-up and reload: ADR 0005), the keyring beside it (keys, teams, limits;
// prepareKeyring() rebuilds only it on a database change), their holders, and the reload
// coordinator.
// Imports only config/, contract/, providers/ (pool factories) and routing/ types; never
// governance/, audit/ or server/. See docs/decisions/0001-one-generation.md.

export {
  awsSpec,
  type BuildInputs,
  type BuildResult,
  buildGeneration,
  buildGenerationInSlices,
  entraSpec,
  gcpSpec,
  readTlsFiles,
} from './build.js';
export { diffGenerations, diffGenerationsInSlices, type GenerationChanges, restartOnlyWarnings } from './diff.js';
export { topologyDigest, topologyOf } from './digest.js';
export type {
  AgentCandidate,
  AgentRoute,
  AgentServerRuntime,
  Generation,
  GenerationAgents,
  GenerationCandidate,
  GenerationGroup,
  GenerationRoute,
  GenerationTools,
  McpServerRuntime,
  OverlaySnapshot,
  ProviderRuntime,
  RetryPolicy,
  ToolCandidate,
  ToolRoute,
} from './generation.js';
export { GenerationHolder } from './holder.js';
export {
  buildKeyring,
  diffKeyrings,
  type Keyring,
  type KeyringChanges,
  type KeyringFile,
  KeyringHolder,
  type KeyringSettings,
  readKeyringFile,
} from './keyring.js';
export { type Merged, mergeManaged } from './managed.js';
export {
  type InputsRead,
  type KeyringPreparation,
  type OverlayRejection,
  type Preparation,
  type PrepareInputs,
  prepareGeneration,
  prepareKeyring,
} from './prepare.js';
export { ReloadCoordinator, type ReloadTrigger } from './reload-coordinator.js';
export {
  FILE_TOPOLOGY,
  type GenerationTopology,
  joinTopology,
  KIND_PATHS,
  type TopologyJoin,
  type TopologyMode,
} from './topology.js';
