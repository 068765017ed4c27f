/**
 * Guardrails: checks on what a caller sends and what comes back. This folder holds the
 * pure pieces (detectors, masking and restoring); the request path wires them in.
 *
 * Boundary: imports config/ and providers/ types only, so a detector knows nothing of
 * generations, listeners or the request path.
 */

export {
  DEFAULT_MIN_ENTROPY,
  DEFAULT_MIN_LENGTH,
  detectorReach,
  detectPii,
  detectSecrets,
  type EntropyOptions,
  type Finding,
  HIGH_ENTROPY_MAX_CHARS,
  MAX_CONTEXT_CHARS,
  MAX_MATCH_CHARS,
  PEM_MAX_CHARS,
  PII_ENTITIES,
  type PiiEntity,
  resolveOverlaps,
  SECRET_CATEGORIES,
  type SecretCategory,
  type SecretsOptions,
  shannonEntropy,
} from './detectors/index.js';
export { Mapping, maskText, PLACEHOLDER_MAX_CHARS, restoreText } from './mask.js';
export { type StreamDetectors, StreamMasker, StreamRestorer } from './stream.js';
