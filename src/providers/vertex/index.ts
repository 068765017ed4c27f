import { SwitchyardError } from '../../errors.js';
import type { ProbeCall, ProviderAdapter, ProviderWire } from '../adapter.js';
import { clientHeader } from '../adapter.js';
import type { ProviderProtocol } from '../canonical/index.js';
import { writeCanonical } from '../protocol-wire.js';
import { WIRE_DEFAULTS } from '../wire-parts.js';

// vertex: Google Vertex AI, chat only, which hosts two publishers' models: Google's speak
// Gemini's protocol, Anthropic's (Claude) the Messages API through `rawPredict`, with the
// model in the path and the API version in the body. Paths name the project and location;
// calls carry the provider's Google Cloud token, or an overlay candidate's own.

/**
 * The `anthropic_version` a vertex provider puts in Claude's body when its config names
 * none: what Anthropic's own Vertex SDK (@anthropic-ai/vertex-sdk 1.x) sends, which is the
 * Messages SDK's `anthropic-version` moved from the header into the body.
 */
export const VERTEX_ANTHROPIC_VERSION = '2026-10-21';

/** The publisher a route names, or when it does not, the one the model's name tells. */
function protocolOf(upstreamModel: string, publisher?: 'google' | 'anthropic'): ProviderProtocol {
  return (publisher ?? (upstreamModel.startsWith('claude') ? 'anthropic' : 'google')) === 'anthropic' ? 'anthropic' : 'gemini';
}

export const vertexAdapter = Object.freeze<ProviderAdapter>({
  type: 'vertex',
  serves: 'models',
  operations: ['chat'],
  protocols: ['gemini', 'anthropic'],
  defaultBaseUrl: (config) =>
    config.location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${config.location ?? ''}-aiplatform.googleapis.com`,
  scope: (config) => `${config.project ?? ''}/${config.location ?? ''}`,
  wire: (config): ProviderWire => {
    const root = `/v1/projects/${encodeURIComponent(config.project ?? '')}/locations/${encodeURIComponent(config.location ?? '')}/publishers`;
    const version = config.anthropic_version ?? VERTEX_ANTHROPIC_VERSION;
    /** A Messages API body made Vertex's: no `model` (the path has it), the provider's `anthropic_version`. */
    const asClaudeBody = (body: Record<string, unknown>): Record<string, unknown> => {
      delete body.model;
      body.anthropic_version = version;
      return body;
    };
    return Object.freeze<ProviderWire>({
      ...WIRE_DEFAULTS,
      protocolOf,
      path: (model, _operation, stream, protocol) => {
        const claude = protocol === 'anthropic';
        const base = `${root}/${claude ? 'anthropic' : 'google'}/models/${encodeURIComponent(model)}`;
        if (claude) return stream ? `${base}:streamRawPredict` : `${base}:rawPredict`;
        return stream ? `${base}:streamGenerateContent?alt=sse` : `${base}:generateContent`;
      },
      authenticate: (headers, credential, client) => {
        // Claude on Vertex takes its version in the body; a beta header still applies.
        const beta = clientHeader(client, 'anthropic-beta');
        if (beta !== null) headers['anthropic-beta'] = beta;
        // The provider's Google Cloud token, or an overlay candidate's own credential, which for Vertex is a token.
        if (credential !== null) headers.authorization = credential.authorization();
      },
      ownBody: (parsed, protocol) => (protocol === 'anthropic' ? asClaudeBody({ ...parsed }) : null),
      write: (request, protocol, options) => {
        const written = writeCanonical(request, protocol, options);
        if (written.ok && protocol === 'anthropic') asClaudeBody(written.value.body as Record<string, unknown>);
        return written;
      },
    });
  },
  // Vertex lists no publisher's models on the endpoint its calls use: a one-token call to the
  // draft's first model, in its publisher's protocol (generateContent, or Claude's rawPredict).
  probe: (config, models): ProbeCall => {
    const model = models[0];
    if (model === undefined)
      throw new SwitchyardError(
        'invalid_request',
        'a vertex probe needs a model in models (Vertex lists none to probe): it sends one one-token call to the first',
        'models',
      );
    const protocol = protocolOf(model);
    const path: string = vertexAdapter.wire(config, { bearer: null, signer: null }).path(model, 'chat', false, protocol);
    const body =
      protocol === 'anthropic'
        ? {
            anthropic_version: config.anthropic_version ?? VERTEX_ANTHROPIC_VERSION,
            messages: [{ role: 'user', content: 'hi' }],
            max_tokens: 1,
          }
        : { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 1 } };
    return { method: 'POST', path, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), models: () => [model] };
  },
});
