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
  /** The zones its provider processes data in (`providers.<name>.zones`), one set per provider; null = unlabelled. */
  readonly zones: ReadonlySet<string> | null;
  /** Where it runs: its site's region when the overlay gives one, else its provider's `region`; null = not said. */
  readonly region: string | null;
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

/** A route with more candidates than this gets a `byStableId` table. */
export const MANY_CANDIDATES = 8;

/** The route's candidate with this stable_id, if it has one a session may be bound to. */
export function candidateOf<C extends RoutableCandidate>(route: Route<C>, stableId: string): C | undefined {
  if (route.byStableId !== null) return route.byStableId.get(stableId);
  for (const group of route.groups) for (const c of group.candidates) if (c.stableId === stableId) return c;
  return undefined;
}

/** Every candidate of the route, group by group. */
export function* candidatesOf<C extends RoutableCandidate>(route: Route<C>): Generator<C> {
  for (const group of route.groups) yield* group.candidates;
}

/** The `byStableId` of a route with these candidates: a table when they are many, else null. */
export function stableIdTable<C extends RoutableCandidate>(candidates: readonly C[]): ReadonlyMap<string, C> | null {
  if (candidates.length <= MANY_CANDIDATES) return null;
  const table = new Map<string, C>();
  for (const c of candidates) table.set(c.stableId, c);
  return table;
}

export interface Route<C extends RoutableCandidate> {
  readonly model: string;
  readonly policy: SelectionPolicy;
  /** Ordered by group index; `none` candidates and unroutable ones are already dropped. */
  readonly groups: readonly CandidateGroup<C>[];
  /**
   * The route's candidates (every one a session may be bound to: any admission but `none`)
   * by stable_id when it has many; null when it has few, and a scan of its groups finds one
   * as fast (see candidateOf). A route of tens of thousands in one generation saves a table
   * each.
   */
  readonly byStableId: ReadonlyMap<string, C> | null;
  /** True when a new request can be served: some group admits new sessions. */
  readonly admitsNew: boolean;
}
