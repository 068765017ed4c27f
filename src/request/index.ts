// request/: the request path, from an admitted caller to the one record of the request.
// The Exchange (what the listener holds of a request: its record, written once per phase,
// and its control slot), admission
// (authenticate, pre-check, settle), the operations table, one attempt at one candidate
// and its wraps (credential check, breaker, Entra ID token check, tracing), the failover chain, stored-response
// ownership, session keys, the error path in the client's protocol, and the record's sinks. It
// never imports server/: the composition root hands it the services (Services), built once
// and never rebuilt by a reload. See docs/decisions/0019-request-path-on-callbacks.md and
// docs/architecture.md.

export { type A2aHandlers, a2aHandlers } from './a2a/endpoint.js';
export { A2aService } from './a2a/service.js';
export { accessLogSink } from './access-line.js';
export { readBody } from './body.js';
export { cacheStatsSink } from './cache-sinks.js';
export { invalidToken, protectedResource, verifyCallerToken } from './caller-token.js';
export { type Caller, ControlSlot, Exchange, type Failure, type ModelRequest, pathOf } from './exchange.js';
export { guardrailStatsSink } from './guardrail-sinks.js';
export { type ModelHandler, type ModelHandlers, modelHandlers } from './handlers.js';
export { KeysUsed } from './keys-used.js';
export { type McpHandlers, mcpHandlers } from './mcp/endpoint.js';
export { type McpServerStatus, McpService } from './mcp/service.js';
export type { ExposedTool, ToolView } from './mcp/tools.js';
export { listModels, retrieveModel } from './models.js';
export { policyOf } from './policy.js';
export { type RecordSink, recordTo } from './record.js';
export { auditSink, keysUsedSink, ledgerSink, metricsSink, recentSink, spanSink } from './record-sinks.js';
export { RequestRecord } from './request-record.js';
export { type Answerable, failRequest, sendBody, sendJson } from './respond.js';
export { type ResponseOwner, ResponseOwners } from './response-owners.js';
export type { ListenerSettings, Services } from './services.js';
export type { UsageLedger, UsageRow } from './usage-row.js';
