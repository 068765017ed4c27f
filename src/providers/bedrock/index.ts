import { SwitchyardError } from '../../errors.js';
import type { ProviderAdapter, ProviderWire } from '../adapter.js';
import { WIRE_DEFAULTS } from '../wire-parts.js';

// bedrock: AWS Bedrock's Converse API, chat only, by translation. The model is in the path;
// a call is signed (SigV4) over its final bytes, so nothing is added to its headers before.
// Its answers carry their failures in a header and their stream in AWS event-stream frames.

export const bedrockAdapter = Object.freeze<ProviderAdapter>({
  type: 'bedrock',
  serves: 'models',
  operations: ['chat'],
  protocols: ['bedrock'],
  defaultBaseUrl: (config) => `https://bedrock-runtime.${config.region ?? ''}.amazonaws.com`,
  scope: (config) => config.region ?? null,
  wire: (_config, auth): ProviderWire => {
    const signer = auth.signer;
    return Object.freeze<ProviderWire>({
      ...WIRE_DEFAULTS,
      protocolOf: () => 'bedrock' as const,
      // The AWS SDK sends a model id's `:` (anthropic.claude-...-v1:0) as %3A, and signs the path so.
      path: (model, _operation, stream) => `/model/${encodeURIComponent(model)}/${stream ? 'converse-stream' : 'converse'}`,
      authenticate: () => undefined,
      sign: signer === null ? null : (method, path, headers, body) => signer.signNow(method, path, headers, body),
    });
  },
  // The runtime endpoint lists nothing (the model list is the control plane's, another
  // endpoint and permission): a one-token Converse to the draft's first model, signed as every call.
  probe: (_config, models) => {
    const model = models[0];
    if (model === undefined)
      throw new SwitchyardError(
        'invalid_request',
        'a bedrock probe needs a model in models (its runtime endpoint lists none): it sends one one-token Converse to the first',
        'models',
      );
    return {
      method: 'POST',
      path: `/model/${encodeURIComponent(model)}/converse`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: 1 } }),
      models: () => [model],
    };
  },
});
