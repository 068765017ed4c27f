import type { ProviderAdapter } from '../adapter.js';
import { ENDPOINT_WIRE } from '../wire-parts.js';

// a2a: an agent speaking the Agent2Agent protocol. It serves an agent, not models: its calls
// are JSON-RPC to the endpoint its card names (a2a/'s client), with the key as a bearer.

export const a2aAdapter = Object.freeze<ProviderAdapter>({
  type: 'a2a',
  serves: 'agents',
  operations: [],
  protocols: [],
  defaultBaseUrl: () => null,
  scope: () => null,
  wire: () => ENDPOINT_WIRE,
  // Its card: what the gateway reads first of every agent.
  probe: (config) => ({
    method: 'GET',
    path: config.card_path ?? '/.well-known/agent-card.json',
    headers: { accept: 'application/json' },
    body: null,
    models: () => [],
  }),
});
