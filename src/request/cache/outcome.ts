import type { CacheOutcome } from '../request-record.js';

/** The record's cache outcome, with what only some results carry. */
export function outcome(
  result: CacheOutcome['result'],
  route: string,
  key: string | null,
  extra?: Partial<Pick<CacheOutcome, 'similarity' | 'savedMicroUsd' | 'origin'>>,
): CacheOutcome {
  return {
    result,
    route,
    key,
    similarity: extra?.similarity ?? null,
    savedMicroUsd: extra?.savedMicroUsd ?? null,
    origin: extra?.origin ?? null,
  };
}
