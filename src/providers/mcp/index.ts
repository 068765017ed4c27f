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
  // What every MCP client sends first: the server answers with its name and capabilities, or refuses the key.
  // The version is one every server of the current specification takes (mcp/ keeps the list; it imports providers/).
  probe: () => ({
    method: 'POST',
    path: '',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'switchyard-probe', version: '1' } },
    }),
    models: () => [],
  }),
});
