// The credentials a cloud gives a provider, kept fresh off the request path: Microsoft
// Entra ID tokens for azure_openai (ADR 0031; client credentials, or a federated workload
// identity), Google Cloud tokens for vertex (google-auth-library: a service account's key, or
// the metadata server), and AWS keys for bedrock (from the config, or a web identity
// exchanged at STS) with the SigV4 signer that uses them. One source per provider, and the
// registry server/ owns. Part of providers/: it imports no other folder.
export { type AwsKeys, type AwsSpec, awsKeySource } from './aws-client.js';
export { AwsSigner } from './aws-signer.js';
export { COGNITIVE_SERVICES_SCOPE, type EntraSpec, fetchEntraToken, type TokenFetch } from './entra-client.js';
export { CLOUD_PLATFORM_SCOPE, type GcpSpec, gcpTokenSource, probeGcpToken } from './gcp-client.js';
export { type CloudAuthSources, IDLE_SOURCES, TokenSourceRegistry } from './token-registry.js';
export { BearerTokenSource, EntraTokenSource, type Fetched, refreshDelayMs, type TokenEvent, TokenSource } from './token-source.js';
