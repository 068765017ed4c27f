// How far a detector looks: what a streaming masker must hold back so that a match split
// across chunks is still found whole, and found as it would be in the whole text.

import { PII_MAX_MATCH_CHARS, type PiiEntity, SSN_CONTEXT_CHARS } from './pii.js';
import { AWS_LABEL_MAX_CHARS, SECRET_MAX_MATCH_CHARS, type SecretCategory } from './secrets.js';

/** The most characters a finding of each entity or category can span. */
export const MAX_MATCH_CHARS: Readonly<Record<PiiEntity | SecretCategory, number>> = {
  ...PII_MAX_MATCH_CHARS,
  ...SECRET_MAX_MATCH_CHARS,
};

/**
 * The most characters a detector reads beside a match to decide it: the context words before
 * a bare SSN and the label before an AWS secret key (the rest look one or two characters
 * either side, for a boundary).
 */
export const MAX_CONTEXT_CHARS = Math.max(SSN_CONTEXT_CHARS, AWS_LABEL_MAX_CHARS);

/**
 * The reach of a set of detectors: a finding that starts this many characters before the end
 * of the text seen so far cannot change as more text arrives.
 */
export function detectorReach(entities: Iterable<PiiEntity | SecretCategory>): number {
  let reach = 0;
  for (const e of entities) reach = Math.max(reach, MAX_MATCH_CHARS[e]);
  return reach + MAX_CONTEXT_CHARS;
}
