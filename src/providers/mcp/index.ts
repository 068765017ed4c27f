import type { ProviderAdapter } from '../adapter.js';
import { ENDPOINT_WIRE } from '../wire-parts.js';

// mcp: an MCP server's Streamable HTTP endpoint. It serves tools, not models: its calls are
// JSON-RPC to the URL the config names (mcp/'s client), with the key as a bearer.

export const mcpAdapter = Object.freeze<ProviderAdapter>({
  type: 'mcp',
  serves: 'tools',
  operations: [],
  protocols: [],
  defaultBaseUrl: () => null,
  scope: () => null,
  wire: () => ENDPOINT_WIRE,
});
