// managed/: writes through the admin API to the teams and keys the database holds (create,
// change, rotate, revoke, delete) and to its providers, routes and prices, with their authorization, validation and audit, and how a
// lost commit answer is settled. A committed write is applied by the caller's `apply` (server/
// swaps the keyring). Imports config/, database/, governance/ (hashing, allow lists), audit/
// and live/ types; never server/ or request/: the admin API's HTTP mapping calls it, not the
// other way round. See docs/decisions/0001-one-generation.md.

export { type AdminCaller, mayRead, mayWrite, noKey, seeKey, teamOfRole } from './caller.js';
export {
  type Applied,
  applied,
  auditAttempt,
  judge,
  type LostCommitCheck,
  managedByConfig,
  OutcomeUnknownError,
  type WriteContext,
  type WriteTarget,
  writeSettled,
  writeTargetOf,
} from './commit.js';
export { FieldsError, fieldsError } from './fields.js';
export { loosenedLimits } from './key-limits.js';
export { configKeyView, createKey, keyView, patchKey, revokeKey, rotateKey } from './keys.js';
export { configTeamView, createTeam, deleteTeam, patchTeam, teamView } from './teams.js';
export {
  configTopologyView,
  createTopology,
  deleteTopology,
  nameField,
  patchTopology,
  TOPOLOGY_COLLECTIONS,
  type TopologyWriteContext,
  topologyView,
} from './topology.js';
export { type Asked, tagOf, type Written } from './written.js';
