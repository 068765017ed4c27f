// config/: the gateway config schema (zod), YAML/JSON loading and secret references.
// Pure functions of their input: reading the config or a secret file is the only I/O.
// Imports only contract/ (pure, the lower layer): its field-path notation and its
// credential-value shapes, so the config and the overlay name paths and refuse literal
// secrets alike. See docs/decisions/0001-one-generation.md.
export {
  configSchema,
  secretRefSchema,
  type GatewayConfig,
  type ServerConfig,
  type ProviderConfig,
  type RouteConfig,
  type PricingConfig,
  type BreakerConfig,
  type Policy,
  type SecretRef,
  type OverlayConfig,
  sessionAffinityDefaults,
  type TeamConfig,
  type KeyConfig,
  type GovernanceConfig,
  type AuditConfig,
} from './schema.js';
export { checkConfig, parseConfigText, loadConfigFile, formatIssue, type ConfigIssue, type ConfigResult } from './load.js';
export { crossReferenceIssues } from './cross-check.js';
export { configWarnings } from './warnings.js';
export { adminTokenRequired, isLoopback, splitHostPort } from './listen-address.js';
export { resolveSecret, describeSecretRef, type SecretResult } from './secrets.js';
