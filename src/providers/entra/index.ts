// Microsoft Entra ID tokens for azure_openai providers (ADR 0031): the token endpoint's
// client (client credentials, or a federated workload identity assertion), a source per
// provider that keeps one token fresh off the request path, and the registry server/ owns.
// Part of providers/: it imports no other folder.
export { COGNITIVE_SERVICES_SCOPE, type EntraSpec, fetchEntraToken, type TokenFetch } from './token-client.js';
export { TokenSourceRegistry } from './token-registry.js';
export { EntraTokenSource, refreshDelayMs, type TokenEvent } from './token-source.js';
