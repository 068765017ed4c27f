import { a2aAdapter } from './a2a/index.js';
import type { Operation, ProviderAdapter, ProviderType } from './adapter.js';
import { anthropicAdapter } from './anthropic/index.js';
import { azureOpenaiAdapter } from './azure_openai/index.js';
import { bedrockAdapter } from './bedrock/index.js';
import { geminiAdapter } from './gemini/index.js';
import { mcpAdapter } from './mcp/index.js';
import { openaiAdapter } from './openai/index.js';
import { vertexAdapter } from './vertex/index.js';

// The provider types, one line each: a new type is a folder beside these and a line here
// (and its config schema in config/, its page in docs/).

export const ADAPTERS: Readonly<Record<ProviderType, ProviderAdapter>> = Object.freeze({
  openai: openaiAdapter,
  azure_openai: azureOpenaiAdapter,
  anthropic: anthropicAdapter,
  gemini: geminiAdapter,
  bedrock: bedrockAdapter,
  vertex: vertexAdapter,
  mcp: mcpAdapter,
  a2a: a2aAdapter,
});

/** The adapter of a type the config schema accepted. */
export function adapterOf(type: ProviderType): ProviderAdapter {
  return ADAPTERS[type];
}

/** Whether a provider of this type serves the operation. */
export function servesOperation(type: ProviderType, operation: Operation): boolean {
  return ADAPTERS[type].operations.includes(operation);
}

/** The provider types that serve the operation, for the message that refuses it. */
export function operationProviders(operation: Operation): readonly ProviderType[] {
  return Object.values(ADAPTERS)
    .filter((a) => a.operations.includes(operation))
    .map((a) => a.type);
}
