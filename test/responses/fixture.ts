import assert from 'node:assert/strict';
import { after, before, beforeEach } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { openaiSchema } from '../support/openai-schema.js';

// A gateway process in front of four mock upstreams, one per provider protocol a Responses
// request can be translated to (OpenAI's own Responses API, Anthropic Messages, Gemini and
// Bedrock Converse), with a route to each, a route that fails over from OpenAI to Anthropic,
// and keys of two teams. Tests speak to it with the official `openai` client.

export const ROUTES = {
  openai: 'oai-route',
  anthropic: 'claude-route',
  gemini: 'gemini-route',
  bedrock: 'bedrock-route',
} as const;
export type RouteKind = keyof typeof ROUTES;
/** First the OpenAI mock, then the Anthropic one. */
export const FAILOVER = 'failover-route';

export const GREETING: Readonly<Record<RouteKind, string>> = {
  openai: 'Hello from oai-up.',
  anthropic: 'Hello from claude-up.',
  gemini: 'Hello from gem-up.',
  bedrock: 'Hello from bedrock-up.',
};

/** The path each mock is asked on. */
export const UPSTREAM_PATH: Readonly<Record<RouteKind, (p: string) => boolean>> = {
  openai: (p) => p === '/v1/responses',
  anthropic: (p) => p === '/v1/messages',
  gemini: (p) => p.startsWith('/v1beta/models/'),
  bedrock: (p) => p.startsWith('/model/'),
};

const AKID = 'AKIAMOCKRESPONSES001';
const SECRET = 'mock/secret+key/responses0123456789abcd';
const GEM_KEY = 'AIzaSyMockResponsesKey0000000000000000';
/** The environment the fixture's config names its provider secrets in. */
export const FIXTURE_ENV = { BR_AKID: AKID, BR_SECRET: SECRET, GEM_KEY };

export const keyOf = (id: string): string => `sy-test-${id}-${'k'.repeat(8)}`;

export interface ResponsesFixture {
  readonly gw: GatewayProcess;
  readonly mocks: Readonly<Record<RouteKind, MockProvider>>;
  /** A client as key `alpha1` (team alpha) or `beta1` (team beta). */
  client(key?: 'alpha1' | 'beta1'): OpenAI;
  reset(): void;
  stop(): Promise<void>;
}

export interface FixtureOptions {
  /** `routing.responses`, beside the defaults. */
  readonly responses?: Record<string, unknown>;
  /** Top-level config blocks to add (governance, database). */
  readonly extra?: Record<string, unknown>;
  /** Mocks to use instead of starting new ones (a second replica in front of the same upstreams). */
  readonly mocks?: Readonly<Record<RouteKind, MockProvider>>;
  readonly dir?: string;
}

export async function startMocks(): Promise<Record<RouteKind, MockProvider>> {
  return {
    openai: await startMockProvider({ name: 'oai-up', streamChunks: 3 }),
    anthropic: await startMockProvider({ name: 'claude-up', streamChunks: 3 }),
    gemini: await startMockProvider({ name: 'gem-up', apiKey: GEM_KEY, streamChunks: 3 }),
    bedrock: await startMockProvider({
      name: 'bedrock-up',
      protocol: 'bedrock',
      awsAccessKeyId: AKID,
      awsSecretAccessKey: SECRET,
      streamChunks: 3,
    }),
  };
}

export function responsesConfig(mocks: Readonly<Record<RouteKind, MockProvider>>, options: FixtureOptions = {}): Record<string, unknown> {
  const key = (id: string, team: string) => ({ id, team, sha256: hashKey(keyOf(id)) });
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
    providers: {
      oai: { type: 'openai', base_url: mocks.openai.baseUrl, timeout_ms: 5000, expose_headers: ['x-mock-provider'] },
      claude: { type: 'anthropic', base_url: mocks.anthropic.baseUrl, timeout_ms: 5000, expose_headers: ['x-mock-provider'] },
      gem: {
        type: 'gemini',
        base_url: mocks.gemini.origin,
        api_key: { env: 'GEM_KEY' },
        timeout_ms: 5000,
        expose_headers: ['x-mock-provider'],
      },
      bed: {
        type: 'bedrock',
        region: 'us-east-1',
        base_url: mocks.bedrock.origin,
        aws: { access_key_id: { env: 'BR_AKID' }, secret_access_key: { env: 'BR_SECRET' } },
        timeout_ms: 5000,
        expose_headers: ['x-mock-provider'],
      },
    },
    routing: {
      routes: {
        [ROUTES.openai]: { candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
        [ROUTES.anthropic]: { candidates: [{ provider: 'claude', model: 'claude-sonnet-4-5' }] },
        [ROUTES.gemini]: { candidates: [{ provider: 'gem', model: 'gemini-2.5-flash' }] },
        [ROUTES.bedrock]: { candidates: [{ provider: 'bed', model: 'anthropic.claude-3-5-haiku-20241022-v1:0' }] },
        [FAILOVER]: {
          candidates: [
            { provider: 'oai', model: 'gpt-4o-mini' },
            { provider: 'claude', model: 'claude-sonnet-4-5' },
          ],
        },
      },
      responses: options.responses ?? {},
    },
    // Deliberate failures must never open a breaker and change who serves later tests.
    resilience: { breaker: { failure_threshold: 1000 } },
    teams: { alpha: {}, beta: {} },
    keys: [key('alpha1', 'alpha'), key('beta1', 'beta')],
    ...options.extra,
  };
}

export async function startResponsesFixture(options: FixtureOptions = {}): Promise<ResponsesFixture> {
  const mocks = options.mocks ?? (await startMocks());
  const owned = options.mocks === undefined;
  let gw: GatewayProcess;
  try {
    gw = await startGatewayProcess(responsesConfig(mocks, options), {
      env: FIXTURE_ENV,
      ...(options.dir === undefined ? {} : { dir: options.dir }),
    });
  } catch (err) {
    if (owned) await Promise.all(Object.values(mocks).map((m) => m.close()));
    throw err;
  }
  return {
    gw,
    mocks,
    client: (key = 'alpha1') => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: keyOf(key), maxRetries: 0, timeout: 10_000 }),
    reset() {
      for (const m of Object.values(mocks)) m.reset();
    },
    async stop() {
      await gw.stop();
      if (owned) await Promise.all(Object.values(mocks).map((m) => m.close()));
    },
  };
}

/** The bodies a mock received on its protocol's model path, oldest first, parsed. */
export function upstreamBodies(fx: { mocks: Readonly<Record<RouteKind, MockProvider>> }, kind: RouteKind): Record<string, unknown>[] {
  return fx.mocks[kind]
    .stats()
    .recent.filter((r) => r.method === 'POST' && UPSTREAM_PATH[kind](r.path))
    .map((r) => JSON.parse(r.body) as Record<string, unknown>);
}

/**
 * One fixture for a describe block: started before its tests, stopped after them, its mocks'
 * records cleared before each. Read it (and the alpha1 client) through the returned getters.
 */
export function useResponsesFixture(options: FixtureOptions = {}): { readonly fx: ResponsesFixture; readonly client: OpenAI } {
  let fx: ResponsesFixture | undefined;
  let client: OpenAI | undefined;
  before(async () => {
    fx = await startResponsesFixture(options);
    client = fx.client();
  });
  after(async () => {
    await fx?.stop();
  });
  beforeEach(() => fx?.reset());
  return {
    get fx() {
      return fx as ResponsesFixture;
    },
    get client() {
      return client as OpenAI;
    },
  };
}

/** Checks `value` against OpenAI's published component schema, when OPENAI_OPENAPI_SPEC names it. */
export function expectValid(component: string, value: unknown): void {
  const schema = openaiSchema();
  if (schema === null) return;
  assert.deepEqual(schema.validate(component, value), [], `${component} against OpenAI's schema`);
}
