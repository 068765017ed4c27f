import { clientHeader, keyOf, type ProviderAdapter, type ProviderWire } from '../adapter.js';
import { modelListProbe, WIRE_DEFAULTS } from '../wire-parts.js';

// anthropic: Anthropic's Messages API, with `x-api-key` (never an `authorization`). An
// Anthropic client's own `anthropic-version` and `anthropic-beta` are forwarded, since they
// change what the request means; without the client's, the config's version is sent.

/** The Messages API version sent when neither config nor client names one. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

export const anthropicAdapter = Object.freeze<ProviderAdapter>({
  type: 'anthropic',
  serves: 'models',
  operations: ['chat', 'count_tokens'],
  protocols: ['anthropic'],
  defaultBaseUrl: () => null,
  scope: () => null,
  wire: (config): ProviderWire => {
    const version = config.anthropic_version ?? DEFAULT_ANTHROPIC_VERSION;
    return Object.freeze<ProviderWire>({
      ...WIRE_DEFAULTS,
      protocolOf: () => 'anthropic' as const,
      path: (_model, operation) => (operation === 'count_tokens' ? '/messages/count_tokens' : '/messages'),
      authenticate: (headers, credential, client) => {
        headers['anthropic-version'] = clientHeader(client, 'anthropic-version') ?? version;
        const beta = clientHeader(client, 'anthropic-beta');
        if (beta !== null) headers['anthropic-beta'] = beta;
        const key = keyOf(credential);
        if (key !== null) headers['x-api-key'] = key.apiKey();
      },
    });
  },
  probe: () => modelListProbe('/models'),
});
