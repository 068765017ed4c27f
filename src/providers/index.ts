// providers/: protocol adapters and upstream connection pools (undici), keyed by provider
// identity. PoolRegistry is stateful and built once by server/; live/ uses its `acquire`
// as the pool factory when building a generation. Imports nothing from other src/ folders.
// It also owns the metering units (TokenUsage, PriceTable) that live/ and governance/ share.
export { Credential } from './credential.js';
export { ProviderPool, type PoolSpec, type UpstreamCall } from './provider-pool.js';
export { PoolRegistry } from './pool-registry.js';
export { CHAT_COMPLETIONS_PATH, chatBodyFor, upstreamHeaders, usageFromJson, usageFromSseTail } from './openai-adapter.js';
export type { PriceEntry, PriceTable, TokenUsage } from './metering.js';

/** A provider identity: type + base URL without a trailing slash. */
export function providerIdentity(type: string, baseUrl: string): string {
  return `${type} ${baseUrl.replace(/\/+$/, '')}`;
}
