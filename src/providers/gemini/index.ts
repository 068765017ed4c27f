import { keyOf, type ProviderAdapter, type ProviderWire } from '../adapter.js';
import { WIRE_DEFAULTS } from '../wire-parts.js';

// gemini: the Gemini API, chat only, by translation. The model is in the path, and a stream
// is another method (`alt=sse`: server-sent events, not the JSON array it streams by
// default). The key goes in `x-goog-api-key`: a `?key=` would put it in every URL a proxy or
// an access log records.

/** The Gemini API's one address; a gemini provider names another only to reach a proxy or a mock. */
export const GEMINI_BASE_URL = 'https://generativelanguage.googleapis.com';

const wire = Object.freeze<ProviderWire>({
  ...WIRE_DEFAULTS,
  protocolOf: () => 'gemini' as const,
  path: (model, _operation, stream) => {
    const name = encodeURIComponent(model);
    return stream ? `/v1beta/models/${name}:streamGenerateContent?alt=sse` : `/v1beta/models/${name}:generateContent`;
  },
  authenticate: (headers, credential) => {
    const key = keyOf(credential);
    if (key !== null) headers['x-goog-api-key'] = key.apiKey();
  },
});

export const geminiAdapter = Object.freeze<ProviderAdapter>({
  type: 'gemini',
  serves: 'models',
  operations: ['chat'],
  protocols: ['gemini'],
  defaultBaseUrl: () => GEMINI_BASE_URL,
  scope: () => null,
  wire: () => wire,
  probe: () => ({
    method: 'GET',
    path: '/v1beta/models',
    headers: {},
    body: null,
    models: (body) => {
      const models = (body as { models?: unknown } | null)?.models;
      if (!Array.isArray(models)) return [];
      return models
        .map((m) => (m as { name?: unknown } | null)?.name)
        .filter((name): name is string => typeof name === 'string')
        .map((name) => name.replace(/^models\//, ''));
    },
    // A wrong key is a 400 whose ErrorInfo reason says so, not a 401.
    refused: (status, body) => status === 401 || status === 403 || (status === 400 && JSON.stringify(body).includes('API_KEY_INVALID')),
  }),
});
