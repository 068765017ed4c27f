// The built-in detectors: personal data (pii) and credentials (secrets), each a pure
// function from a text to sorted, non-overlapping findings, linear in the text.

export { DEFAULT_MIN_ENTROPY, DEFAULT_MIN_LENGTH, type EntropyOptions, HIGH_ENTROPY_MAX_CHARS, shannonEntropy } from './entropy.js';
export { type Finding, resolveOverlaps } from './finding.js';
export { detectPii, luhn, PII_ENTITIES, type PiiEntity } from './pii.js';
export { detectorReach, MAX_CONTEXT_CHARS, MAX_MATCH_CHARS } from './reach.js';
export { detectSecrets, PEM_MAX_CHARS, SECRET_CATEGORIES, type SecretCategory, type SecretsOptions } from './secrets.js';
