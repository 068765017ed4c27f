import type { GenerationCandidate } from '../live/index.js';
import { genAiOperation, genAiSystem, type Tracing } from '../telemetry/index.js';
import type { Wrap } from './attempt.js';

const addresses = new WeakMap<object, { readonly 'server.address': string; readonly 'server.port': number }>();

/** `server.address` and `server.port` of a provider's base URL, parsed once per provider runtime. */
function serverAttributes(provider: GenerationCandidate['provider']): {
  readonly 'server.address': string;
  readonly 'server.port': number;
} {
  let known = addresses.get(provider);
  if (known === undefined) {
    const url = new URL(provider.baseUrl);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    known = { 'server.address': url.hostname, 'server.port': port };
    addresses.set(provider, known);
  }
  return known;
}

/**
 * One client span per upstream call, a child of the request's span, carrying its trace
 * context upstream. It ends when the attempt's outcome is known: a failure before the
 * first byte, or, for a committed response, when its body has been relayed (with the usage).
 */
export const withTracing =
  (tracing: Tracing): Wrap =>
  (next) =>
  (a, done) => {
    const { x, request } = a.admitted;
    const c = a.candidate;
    if (x.span === null) {
      next(a, done);
      return;
    }
    const span = tracing.startClient(x.span, {
      operation: genAiOperation(request.operation),
      model: c.upstreamModel,
      system: genAiSystem(c.provider.type),
      attributes: { 'switchyard.provider': c.provider.name, 'switchyard.candidate': c.stableId, ...serverAttributes(c.provider) },
    });
    const trace: Record<string, string> = {};
    tracing.inject(span, trace);
    try {
      next({ admitted: a.admitted, candidate: c, pass: a.pass, trace }, (r) => {
        if (r.kind === 'failed') tracing.fail(span, r.reason, r.detail);
        else if (r.kind === 'aborted') tracing.fail(span, 'client_closed', 'the client left before the response began');
        else if (r.kind === 'committed') {
          span.setAttribute('http.response.status_code', r.status);
          r.onFinished((f) => {
            if (f.usage !== null)
              span.setAttributes({ 'gen_ai.usage.input_tokens': f.usage.inputTokens, 'gen_ai.usage.output_tokens': f.usage.outputTokens });
            if (f.outcome === 'partial') tracing.fail(span, 'stream_interrupted', 'the response was cut after it began');
            else span.end();
          });
        } else span.end();
        done(r);
      });
    } catch (err) {
      tracing.fail(span, 'invalid_request', err instanceof Error ? err.message : String(err));
      throw err;
    }
  };
