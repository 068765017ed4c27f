// guardrails/: checks on prompts, answers, streams and MCP tool calls, as pure functions of
// their config and the text they are given (no I/O, no timers): the built-in pii and secrets
// detectors, masking with typed placeholders and restoring them (in a stream too), and the
// regex guardrail's RE2 patterns. May import only config/ (types and the RE2 compile check)
// and providers/ (the canonical form's types); the request path composes them as stages and
// transforms. See docs/decisions/0040-guardrails.md.

export { type CompiledGuardrail, compileGuardrails, type LocalGuardrail, type ServiceGuardrail, type StreamMode } from './compiled.js';
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
export { type Dialect, dialectOf, splitEvents } from './dialects.js';
export { Mapping, maskText, PLACEHOLDER_MAX_CHARS, restoreJsonText, restoreText } from './mask.js';
export { guardAnswer, type OutputPlan, OutputStream, outputActs } from './output.js';
export { compileRegexGuardrail, type PatternFinding, type RegexGuardrail } from './regex.js';
export {
  type AskService,
  type CheckedText,
  type CheckSubject,
  type PhaseRun,
  runPhase,
  type ServiceAnswer,
  type ServiceCheck,
} from './run.js';
export { type StreamDetectors, StreamMasker, StreamRestorer } from './stream.js';
export {
  answerTexts,
  filteredAnswer,
  itemTexts,
  requestTexts,
  type TextKind,
  type TextSlot,
  toolResultTexts,
  valueTexts,
  withTexts,
} from './texts.js';
export {
  actedGuardrails,
  describeBlock,
  GUARDRAIL_PHASES,
  type GuardrailErrorKind,
  type GuardrailErrorOutcome,
  type GuardrailPhase,
  type GuardrailVerdict,
  strongestAction,
  VERDICT_ACTIONS,
  type VerdictAction,
} from './verdict.js';
