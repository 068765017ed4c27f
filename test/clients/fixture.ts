import type { MockProvider, MockRequestRecord } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';

// One gateway process in front of two mock upstreams, one spoken to as OpenAI and one as
// Anthropic, so each client library can call a route in its own protocol (same-protocol,
// passed through) and a route in the other (translated). Both mocks speak both protocols;
// the provider's type in the config decides which one the gateway uses.

export interface ClientMatrix {
  readonly gw: GatewayProcess;
  /** Behind `gpt-route`, as an `openai` provider. */
  readonly openaiUpstream: MockProvider;
  /** Behind `claude-route`, as an `anthropic` provider. */
  readonly anthropicUpstream: MockProvider;
  /** Both mocks forget what they saw. */
  reset(): void;
  stop(): Promise<void>;
}

export const gptRoute = 'gpt-route';
export const claudeRoute = 'claude-route';
/** The model each route asks its upstream for. */
export const gptModel = 'gpt-4o-mini';
export const claudeModel = 'claude-sonnet-4-5';

export const openaiGreeting = 'Hello from openai-up.';
export const anthropicGreeting = 'Hello from anthropic-up.';

export async function startClientMatrix(): Promise<ClientMatrix> {
  const openaiUpstream = await startMockProvider({ name: 'openai-up', streamChunks: 3 });
  const anthropicUpstream = await startMockProvider({ name: 'anthropic-up', streamChunks: 3 });
  const config = baseConfig(
    { oai: openaiUpstream.baseUrl, anth: anthropicUpstream.baseUrl },
    {
      [gptRoute]: { candidates: [{ provider: 'oai', model: gptModel }] },
      [claudeRoute]: { candidates: [{ provider: 'anth', model: claudeModel }] },
    },
  );
  const providers = config.providers as Record<string, Record<string, unknown>>;
  providers.anth = { ...providers.anth, type: 'anthropic' };
  let gw: GatewayProcess;
  try {
    gw = await startGatewayProcess(config);
  } catch (err) {
    await openaiUpstream.close();
    await anthropicUpstream.close();
    throw err;
  }
  return {
    gw,
    openaiUpstream,
    anthropicUpstream,
    reset() {
      openaiUpstream.reset();
      anthropicUpstream.reset();
    },
    async stop() {
      await gw.stop();
      await openaiUpstream.close();
      await anthropicUpstream.close();
    },
  };
}

/** The requests an upstream received on `path`, oldest first. */
export function requestsTo(mock: MockProvider, path: string): MockRequestRecord[] {
  return mock.stats().recent.filter((r) => r.path === path);
}

/** The body of the last request an upstream received on `path`, parsed; throws when there was none. */
export function lastBody(mock: MockProvider, path: string): Record<string, unknown> {
  const last = requestsTo(mock, path).at(-1);
  if (last === undefined) throw new Error(`${mock.name} received no request on ${path}`);
  return JSON.parse(last.body) as Record<string, unknown>;
}

export const chatPath = '/v1/chat/completions';
export const messagesPath = '/v1/messages';

/** The names in an `x-switchyard-dropped` header, or null when the header is absent. */
export function droppedFields(headers: Headers | Record<string, string | string[] | undefined>): string[] | null {
  const value = headers instanceof Headers ? headers.get('x-switchyard-dropped') : headers['x-switchyard-dropped'];
  if (value === null || value === undefined) return null;
  const text = Array.isArray(value) ? value.join(',') : value;
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Whether `name` appears as a key anywhere in `value`, however deep. */
export function hasKeyDeep(value: unknown, name: string): boolean {
  if (Array.isArray(value)) return value.some((v) => hasKeyDeep(v, name));
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(value).some(([k, v]) => k === name || hasKeyDeep(v, name));
}
