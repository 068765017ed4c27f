import { OPERATION_ENDPOINTS, type ProviderAdapter, type ProviderWire } from '../adapter.js';
import { BearerTokenSource } from '../cloud-auth/index.js';
import { forwardOpenaiClientHeaders, modelListProbe, WIRE_DEFAULTS } from '../wire-parts.js';

// azure_openai: Azure OpenAI, OpenAI's protocol under a resource's URL. Its endpoints live
// under /openai/deployments/{deployment} with an `api-version` query parameter, except the
// Responses API, called on the resource with the deployment as the body's model. A resource
// key goes in `api-key`; an Entra ID token (`auth: {type: entra}`) is a bearer.

export const azureOpenaiAdapter = Object.freeze<ProviderAdapter>({
  type: 'azure_openai',
  serves: 'models',
  operations: ['chat', 'embeddings', 'completions', 'responses'],
  protocols: ['openai'],
  defaultBaseUrl: () => null,
  scope: () => null,
  wire: (config): ProviderWire => {
    const version = `api-version=${encodeURIComponent(config.api_version ?? '')}`;
    return Object.freeze<ProviderWire>({
      ...WIRE_DEFAULTS,
      protocolOf: () => 'openai' as const,
      path: (model, operation) =>
        operation === 'responses'
          ? `/openai${OPERATION_ENDPOINTS.responses}?${version}`
          : `/openai/deployments/${encodeURIComponent(model)}${OPERATION_ENDPOINTS[operation]}?${version}`,
      storedResponsePath: (responseId, query) =>
        `/openai/responses/${encodeURIComponent(responseId)}?${query === '' ? version : `${query}&${version}`}`,
      authenticate: (headers, credential, client) => {
        forwardOpenaiClientHeaders(headers, client);
        if (credential instanceof BearerTokenSource) headers.authorization = credential.authorization();
        else if (credential !== null) headers['api-key'] = credential.apiKey();
      },
    });
  },
  // The resource's models (base models and fine-tuned ones), under the same api-version as every call.
  probe: (config) => modelListProbe(`/openai/models?api-version=${encodeURIComponent(config.api_version ?? '')}`),
});
