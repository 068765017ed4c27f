// The shapes selection works on. live/ builds them (frozen) into each generation; routing
// only reads them, so these are types plus nothing else.
// Admission states are the overlay contract's vocabulary; static routes use its default.
import type { AdmissionState } from '../contract/index.js';

/** Static config names (`round_robin`) and overlay names (`roundRobin`) both map here. */
export type SelectionPolicy = 'ordered' | 'round_robin' | 'random' | 'weighted';

/** What selection needs to know of a candidate; live/ extends it with the provider. */
export interface RoutableCandidate {
  readonly stableId: string;
  readonly providerName: string;
  readonly identity: string;
  readonly weight: number;
  readonly admission: AdmissionState;
  readonly group: number;
}

export interface CandidateGroup<C extends RoutableCandidate> {
  readonly index: number;
  readonly admission: AdmissionState;
  readonly candidates: readonly C[];
  readonly totalWeight: number;
  /**
   * The round-robin counter's key. Equal keys share a cycle, so a reload that leaves a
   * group as it was (same members in the same order, whatever else changed) keeps its rotation.
   */
  readonly counterKey: string;
}

export interface Route<C extends RoutableCandidate> {
  readonly model: string;
  readonly policy: SelectionPolicy;
  /** Ordered by group index; `none` candidates and unroutable ones are already dropped. */
  readonly groups: readonly CandidateGroup<C>[];
  /** Every candidate a session may be bound to (any admission but `none`). */
  readonly byStableId: Readonly<Record<string, C>>;
  /** True when a new request can be served: some group admits new sessions. */
  readonly admitsNew: boolean;
}
