import type { ProviderAdapter, ProviderWire } from '../adapter.js';
import { WIRE_DEFAULTS } from '../wire-parts.js';

// a2a: an agent speaking the Agent2Agent protocol. It serves an agent, not models: its calls
// are JSON-RPC to the endpoint its card names (a2a/'s client), with the key as a bearer. No
// model operation goes to it, so its paths are the endpoint itself.

const wire = Object.freeze<ProviderWire>({
  ...WIRE_DEFAULTS,
  protocolOf: () => 'openai' as const,
  path: () => '',
  authenticate: (headers, credential) => {
    if (credential !== null) headers.authorization = credential.authorization();
  },
});

export const a2aAdapter = Object.freeze<ProviderAdapter>({
  type: 'a2a',
  serves: 'agents',
  operations: [],
  protocols: [],
  defaultBaseUrl: () => null,
  scope: () => null,
  wire: () => wire,
});
