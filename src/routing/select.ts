import type { RoundRobinCounters } from './round-robin.js';
import { type CandidateGroup, candidateOf, type RoutableCandidate, type Route } from './types.js';

export interface SelectionContext {
  readonly counters: RoundRobinCounters;
  /** [0, 1); injectable so that tests and benchmarks can fix the seed. */
  readonly random: () => number;
  /** The stable_id this request's session is bound to, if any. */
  readonly boundStableId?: string | undefined;
}

export interface Selection<C extends RoutableCandidate> {
  /** The candidates to try, in order. Empty means no route. */
  readonly chain: readonly C[];
  /** True when the first candidate is the session's existing binding. */
  readonly bound: boolean;
}

/**
 * Picks the candidate chain for one request. Pure apart from advancing a round-robin
 * counter: the route comes from the generation the request captured, never from a lookup.
 *
 * A bound session reuses its candidate while that stable_id is still present and not
 * `none` (even when `existing_only`). A new request takes the lowest group that admits
 * new sessions, picks within it by policy, then fails over through the rest of that group
 * and after it the later admitting groups.
 */
export function select<C extends RoutableCandidate>(route: Route<C>, ctx: SelectionContext): Selection<C> {
  if (ctx.boundStableId !== undefined) {
    const bound = candidateOf(route, ctx.boundStableId);
    if (bound !== undefined) {
      const chain: C[] = [bound];
      for (const group of route.groups) {
        if (group.admission !== 'new_and_existing') continue;
        for (const c of group.candidates) if (c !== bound) chain.push(c);
      }
      return { chain, bound: true };
    }
  }
  return { chain: newChain(route, ctx), bound: false };
}

function newChain<C extends RoutableCandidate>(route: Route<C>, ctx: SelectionContext): readonly C[] {
  let first: CandidateGroup<C> | undefined;
  const later: CandidateGroup<C>[] = [];
  for (const group of route.groups) {
    if (group.admission !== 'new_and_existing' || group.candidates.length === 0) continue;
    if (first === undefined) first = group;
    else later.push(group);
  }
  if (first === undefined) return [];
  const start = pick(first, route.policy, ctx);
  if (start === 0 && later.length === 0) return first.candidates;
  const n = first.candidates.length;
  const chain: C[] = [];
  for (let i = 0; i < n; i++) chain.push(first.candidates[(start + i) % n] as C);
  for (const group of later) for (const c of group.candidates) chain.push(c);
  return chain;
}

function pick<C extends RoutableCandidate>(group: CandidateGroup<C>, policy: Route<C>['policy'], ctx: SelectionContext): number {
  const n = group.candidates.length;
  if (n === 1) {
    // Still advance the rotation, so a group that grows back keeps cycling from where it was.
    if (policy === 'round_robin') ctx.counters.next(group.counterKey);
    return 0;
  }
  switch (policy) {
    case 'ordered':
      return 0;
    case 'round_robin':
      return ctx.counters.next(group.counterKey) % n;
    case 'random':
      return Math.floor(ctx.random() * n);
    case 'weighted': {
      let point = ctx.random() * group.totalWeight;
      for (let i = 0; i < n; i++) {
        point -= (group.candidates[i] as C).weight;
        if (point < 0) return i;
      }
      return n - 1;
    }
  }
}
