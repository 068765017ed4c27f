import { gatewayConfig } from './gateway-config.js';

/**
 * A gateway config in overlay mode: gatewayConfig's server, log and providers, with
 * `routing.overlay` (file, reload, credential_mount_base, ...) in place of static routes.
 */
export function overlayGatewayConfig(parts: {
  providers: Record<string, unknown>;
  overlay: Record<string, unknown>;
  accessLog?: boolean;
  admin?: boolean;
}): Record<string, unknown> {
  const base = gatewayConfig({ providers: parts.providers, routes: {}, accessLog: parts.accessLog, admin: parts.admin });
  return { ...base, routing: { overlay: parts.overlay } };
}
