// audit/: the tamper-evident record of what the gateway did: an append-only JSONL file in
// which every record carries the SHA-256 of the previous record's exact bytes, its writer
// and its verifier. A leaf: it imports only contract/ (the bounded file reader, to continue
// or verify an existing file) and errors.ts; never live/, config/, server/ or governance/.
// Records hold ids, decisions, usage and cost; never a prompt, a completion or a secret.
// See docs/decisions/0009-governance-limits-and-budgets.md.
export { GENESIS_HASH, recordHash } from './chain.js';
export {
  type AdminWriteInput,
  type AgentCalledInput,
  type AnchorReason,
  type AuditEvent,
  type AuditUsage,
  adminWrite,
  agentCalled,
  anchor,
  type GapInput,
  type GuardrailVerdictInput,
  gap,
  guardrailVerdict,
  type ReloadInput,
  type RequestCompletedInput,
  type RequestStartedInput,
  reload,
  requestCompleted,
  requestStarted,
  type ToolCalledInput,
  toolCalled,
} from './records.js';
export { UlidGenerator } from './ulid.js';
export {
  type AuditGap,
  type ChainResult,
  describeGap,
  describeIntact,
  type SetFile,
  type SetResult,
  type VerifyResult,
  verifyAuditChain,
  verifyAuditFile,
  verifyAuditSet,
} from './verify.js';
export {
  type AuditFailure,
  AuditFileError,
  type AuditHead,
  type AuditNotice,
  type AuditPosition,
  type AuditReopen,
  type AuditSink,
  AuditWriter,
  type AuditWriterOptions,
} from './writer.js';
