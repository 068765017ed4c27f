// routing/: candidate selection (policies, admission states, selection groups) and the
// stateful pieces it leans on: round-robin counters and the session-affinity table, both
// built once by server/ and kept across reloads. Imports only types from contract/ (the
// admission states a candidate can be in).
export type { SelectionPolicy, RoutableCandidate, CandidateGroup, Route } from './types.js';
export { select, type SelectionContext, type Selection } from './select.js';
export { RoundRobinCounters } from './round-robin.js';
export { SessionAffinity, type AffinityOptions } from './affinity.js';
