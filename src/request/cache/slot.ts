import type { AnswerTransform } from '../../providers/index.js';

/** What an answer owes the cache: headers, and per attempt a transform that captures it (none for a bypass). */
export interface AnswerCacheSlot {
  /** Names and values, in turn, for the answer's headers. */
  readonly headers: readonly string[];
  attempt(): AnswerTransform | null;
}
