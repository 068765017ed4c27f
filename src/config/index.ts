// config/: the gateway config schema (zod), YAML/JSON loading and secret references.
// Pure functions of their input: reading the config or a secret file is the only I/O.
// Imports only contract/ (pure, the lower layer): its field-path notation and its
// credential-value shapes, so the config and the overlay name paths and refuse literal
// secrets alike. See docs/decisions/0001-one-generation.md.

export { type A2aConfig, agentName } from './a2a-schema.js';
export {
  type AuthConfig,
  authSchema,
  fetchableUrl,
  JWT_ALGORITHMS,
  type JwtAlgorithm,
  type JwtConfig,
  type JwtIssuerConfig,
  type PrincipalLimitsConfig,
} from './auth-schema.js';
export type { CacheConfig, RouteCacheConfig } from './cache-schema.js';
export {
  agentReferenceIssues,
  crossReferenceIssues,
  responseStoreIssues,
  routeReferenceIssues,
  toolReferenceIssues,
} from './cross-check.js';
export {
  checkGuardrailReferences,
  GUARDRAIL_NAME,
  type GuardrailAction,
  type GuardrailAttachmentConfig,
  type GuardrailConfig,
  type GuardrailsConfig,
  guardrailsSchema,
  type JudgeGuardrailConfig,
  MAX_PATTERN_INSTRUCTIONS,
  type McpGuardrailAttachmentConfig,
  type NemoGuardrailConfig,
  PII_ENTITIES,
  type PiiEntity,
  type PiiGuardrailConfig,
  type RegexGuardrailConfig,
  re2Problem,
  SECRET_CATEGORIES,
  type SecretCategory,
  type SecretsGuardrailConfig,
  type WebhookGuardrailConfig,
} from './guardrails-schema.js';
export { adminTokenRequired, isLoopback, splitHostPort } from './listen-address.js';
export {
  type ConfigIssue,
  type ConfigResult,
  checkConfig,
  formatIssue,
  loadConfigFile,
  loadConfigFileOffThread,
  parseConfigText,
} from './load.js';
export {
  type Checked,
  checkKey,
  checkTeam,
  checkTopologyObject,
  type TopologyObjectKind,
  topologyNameIssue,
  topologyObjectsOf,
} from './managed.js';
export { checkProvider } from './provider-check.js';
export {
  PROVIDER_SCHEMAS,
  PROVIDER_TYPES,
  type ProviderTypeName,
  providerKeyHint,
  servesAgents,
  servesEmbeddings,
} from './provider-types.js';
export { type ResidencyConfig, widerResidency } from './residency-schema.js';
export {
  type AgentRouteConfig,
  type AuditConfig,
  type AwsAuthConfig,
  type BreakerConfig,
  configSchema,
  type DatabaseConfig,
  type EntraAuthConfig,
  type GatewayConfig,
  type GcpAuthConfig,
  type GovernanceConfig,
  type KeyConfig,
  type McpConfig,
  type OverlayConfig,
  type Policy,
  type PriceConfig,
  type PricingConfig,
  type ProviderConfig,
  type ProviderConfigOf,
  type RouteConfig,
  responsesDefaults,
  type SecretRef,
  type ServerConfig,
  secretRefSchema,
  sessionAffinityDefaults,
  type TeamConfig,
  type TelemetryConfig,
  TOOL_NAME,
  type ToolRouteConfig,
} from './schema.js';
export { describeSecretRef, resolveSecret, type SecretResult } from './secrets.js';
export { configWarnings } from './warnings.js';
