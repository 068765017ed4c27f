import type { ProviderAdapter, ProviderWire } from '../adapter.js';
import { WIRE_DEFAULTS } from '../wire-parts.js';

// mcp: an MCP server's Streamable HTTP endpoint. It serves tools, not models: its calls are
// JSON-RPC to the URL the config names (mcp/'s client), with the key as a bearer. No model
// operation goes to it, so its paths are the URL itself.

const wire = Object.freeze<ProviderWire>({
  ...WIRE_DEFAULTS,
  protocolOf: () => 'openai' as const,
  path: () => '',
  authenticate: (headers, credential) => {
    if (credential !== null) headers.authorization = credential.authorization();
  },
});

export const mcpAdapter = Object.freeze<ProviderAdapter>({
  type: 'mcp',
  serves: 'tools',
  operations: [],
  protocols: [],
  defaultBaseUrl: () => null,
  scope: () => null,
  wire: () => wire,
});
