import { OPERATION_ENDPOINTS, type ProviderAdapter, type ProviderWire } from '../adapter.js';
import { forwardOpenaiClientHeaders, modelListProbe, WIRE_DEFAULTS } from '../wire-parts.js';

// openai: any OpenAI-compatible API (OpenAI, vLLM, a proxy), at the base URL the config
// names, with `Authorization: Bearer`.

const wire = Object.freeze<ProviderWire>({
  ...WIRE_DEFAULTS,
  protocolOf: () => 'openai' as const,
  path: (_model, operation) => OPERATION_ENDPOINTS[operation],
  authenticate: (headers, credential, client) => {
    forwardOpenaiClientHeaders(headers, client);
    if (credential !== null) headers.authorization = credential.authorization();
  },
});

export const openaiAdapter = Object.freeze<ProviderAdapter>({
  type: 'openai',
  serves: 'models',
  operations: ['chat', 'embeddings', 'completions', 'responses'],
  protocols: ['openai'],
  defaultBaseUrl: () => null,
  scope: () => null,
  wire: () => wire,
  probe: () => modelListProbe('/models'),
});
