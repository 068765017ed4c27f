// providers/: one adapter per provider type (providers/<type>/, behind ProviderAdapter, in
// registry.ts), upstream connection pools (undici) keyed by provider
// identity, and the relay that sends one attempt through a pool and streams its answer to
// the client. PoolRegistry is stateful and built once by server/; live/ uses its `acquire`
// as the pool factory when building a generation. Imports only resilience/, whose rules
// decide which upstream answers fail over rather than reach the client. It also owns the
// metering units (TokenUsage, PriceTable) that live/ and governance/ share, and the
// canonical chat form that OpenAI and Anthropic requests, responses and streams translate
// through (canonical/, ADR-0011); and the cloud credential sources (cloud-auth/: Entra ID,
// Google Cloud and AWS, with the SigV4 signer), whose TokenSourceRegistry server/ builds
// once, as it does the pools.

export {
  type AdapterConfig,
  type AnswerReaders,
  type CallCredential,
  type ClientRequestHeaders,
  OPERATION_ENDPOINTS,
  type Operation,
  type ProbeCall,
  type ProviderAdapter,
  type ProviderAuth,
  type ProviderType,
  type ProviderWire,
  policyRowsOf,
  type WriteOptions,
} from './adapter.js';
export { type AddressClass, AddressList, addressClass, bareAddress, invalidCidr, isPublicAddress } from './addresses.js';
export * from './canonical/index.js';
export * from './cloud-auth/index.js';
export { type ConnectionFailure, connectionFailure } from './connection-failure.js';
export { Credential } from './credential.js';
export { GEMINI_BASE_URL } from './gemini/index.js';
export {
  duplicateTopLevelKey,
  type FirstMember,
  firstMember,
  topLevelMemberCount,
  withFirstMember,
  withTopLevelMember,
} from './json-splice.js';
export type { PriceEntry, PriceTable, TokenUsage } from './metering.js';
export { CHAT_COMPLETIONS_PATH, chatBodyFor, usageFromJson, usageFromSseTail, withStreamUsage } from './openai-body.js';
export { PoolRegistry } from './pool-registry.js';
export { judgeAddress, type ProbeAnswer, type ProbeCloudAuth, type ProbeTarget, probeProvider, type Resolve } from './probe.js';
export { providerHeaders, storedResponsePath, upstreamPathFor } from './provider-call.js';
export { type PoolSpec, type PoolTls, ProviderPool, type RawHandler, type UpstreamCall } from './provider-pool.js';
export { ADAPTERS, adapterOf, operationProviders, servesOperation } from './registry.js';
export {
  type Committed,
  type RelayCallback,
  type Relayed,
  type RelayRequest,
  type RelayResult,
  relay,
  type StopSlot,
} from './relay.js';
export {
  anthropicMetering,
  type BodyTransform,
  embeddingsMetering,
  type MaybeAsync,
  type PlainAnswer,
  type RelayTransform,
  type RelayTransformAsync,
  type TranslationOptions,
  translatedBody,
  translation,
} from './relay-transform.js';
export type { ClientHeaders } from './response-headers.js';
export { ResponsesStreamReader } from './responses-stream-reader.js';
export { type ResponsesTransform, responsesMetering, responsesTranslation, restatedResponses } from './responses-transform.js';
export {
  type AnswerTransform,
  composeTransforms,
  transformBody,
  transformEvents,
  type UsageHeadersOf,
} from './transform-stack.js';
export {
  type AnswerHeader,
  type AnswerReader,
  type AnswerVerdict,
  bedrockAnswerStatus,
  type FailedAttempt,
  readBedrockAnswer,
  readGeminiAnswer,
  retryAfterOf,
  upstreamMessage,
} from './upstream-failure.js';
export { withoutUsageEvent } from './usage-event-filter.js';
export { VERTEX_ANTHROPIC_VERSION } from './vertex/index.js';

/**
 * A provider identity: type + base URL without a trailing slash, and the cloud scope its
 * calls are made in (a bedrock region, a vertex project/location) when the base URL does not
 * tell it (an overridden one: a proxy, a mock).
 */
export function providerIdentity(type: string, baseUrl: string, scope: string | null = null): string {
  const identity = `${type} ${baseUrl.replace(/\/+$/, '')}`;
  return scope === null ? identity : `${identity} ${scope}`;
}
