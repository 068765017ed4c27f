// routing/: candidate selection (policies, admission states, selection groups) and the
// stateful pieces it leans on: round-robin counters and the session-affinity table, both
// built once by server/ and kept across reloads. Imports only types from contract/ (the
// admission states a candidate can be in). The residency filter is ADR 0043's.

export { type AffinityOptions, BindingTable, SessionAffinity } from './affinity.js';
export { type ResidencyRule, withinResidency } from './residency.js';
export { RoundRobinCounters } from './round-robin.js';
export { seededRandom } from './seeded-random.js';
export { type Selection, type SelectionContext, select } from './select.js';
export {
  type CandidateGroup,
  candidateOf,
  candidatesOf,
  MANY_CANDIDATES,
  type RoutableCandidate,
  type Route,
  type SelectionPolicy,
  stableIdTable,
} from './types.js';
