/**
 * The Model Context Protocol, as the gateway speaks it on both sides: the shared message
 * and catalog shapes, and the MCP client the gateway is to each `type: mcp` provider (its
 * own upstream session, the tool catalog it keeps fresh, and the calls it relays). The
 * endpoint the gateway's own clients reach (`/mcp`) is the request path's (request/).
 *
 * Boundary: imports providers/ only (a provider's connection pool and credential), so the
 * protocol pieces know nothing of generations, governance or the listeners.
 */

export { Stop, type StopSignal } from './stop.js';
export {
  type CallFailureReason,
  type CallOutcome,
  type JsonRpcError,
  type JsonRpcId,
  type JsonRpcNotification,
  LATEST_MCP_PROTOCOL_VERSION,
  MCP_PROTOCOL_VERSIONS,
  type McpProtocolVersion,
  type McpToolDefinition,
  type ToolAnnotations,
  type ToolCatalog,
} from './types.js';
export { McpUpstream, type McpUpstreamSettings, type UpstreamCallRequest, type UpstreamEvent } from './upstream.js';
