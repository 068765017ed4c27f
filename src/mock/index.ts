/**
 * The mock LLM provider: a real HTTP server that speaks OpenAI chat completions (plain and
 * streamed, tool calls included), OpenAI embeddings, legacy completions and the stateful
 * Responses API, Anthropic messages (plain and streamed, count_tokens, prompt caching), and
 * Gemini generateContent (plain and streamed, function calls, thoughts, its API key check),
 * and, served alone, Bedrock Converse (JSON and AWS event stream, over HTTP/1.1 and h2c,
 * behind a SigV4 check) or Vertex AI (Gemini and Claude, behind bearer tokens it issues at
 * its own token endpoint and metadata server), or an MCP server (Streamable HTTP, on the
 * official SDK), or A2A agents (JSON-RPC 1.0 and 0.3, on the official @a2a-js/sdk server);
 * records what it received and injects faults
 * on request. Beside it, a mock guardrail service (NeMo Guardrails' checks API and the
 * webhook guardrail's contract). Endpoints, the tool trigger and the fault API: docs/mock-provider.md. The
 * demo, the tests and the benchmark's "direct" baseline all run against it.
 *
 * Boundary: imports node: built-ins (SigV4 is checked with node:crypto) and, for Bedrock, AWS's event-stream codec
 * (@smithy), for MCP the official SDK (@modelcontextprotocol/sdk), for A2A @a2a-js/sdk and jose (card signatures), never another src/ folder, so it stays a neutral stand-in for an upstream. No ADR: it is tooling, not a gateway decision.
 */

export type { A2aAgentName } from './a2a-agents.js';
export { A2A_AGENT_NAMES, ASKER_QUESTION, WORKER_DEFAULT_STEPS, WORKER_MAX_STEPS } from './a2a-agents.js';
export type { A2aVersion } from './a2a-cards.js';
export { A2A_VERSIONS } from './a2a-cards.js';
export type { A2aAgentSeen, A2aSeenHeaders, A2aStats } from './a2a-stats.js';
export type { MockFault, MockFaultMode } from './fault-queue.js';
export { MOCK_SERVICE_ACCOUNT, type MockServiceAccount, mockServiceAccount } from './gcp-service-account.js';
export type { MockTokenStats } from './gcp-tokens.js';
export {
  MOCK_GUARDRAIL_MODES,
  type MockGuardrailBehavior,
  type MockGuardrailCall,
  type MockGuardrailMode,
  type MockGuardrailService,
  type MockGuardrailServiceOptions,
  startMockGuardrailService,
} from './guardrail-service.js';
export type { McpStats, McpToolChange } from './mcp.js';
export type { McpAddedTool, McpToolName } from './mcp-tools.js';
export { MCP_TOOL_NAMES } from './mcp-tools.js';
export type { McpResponseMode, MockProtocol, MockProtocolTraits, MockProvider, MockProviderOptions } from './mock-provider.js';
export { MOCK_PROTOCOLS, mockProtocolTraits, startMockProvider } from './mock-provider.js';
export type { MockRequestRecord, MockStats } from './request-stats.js';
