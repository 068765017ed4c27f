import type { ConfigIssue } from './cross-check.js';
import type { GatewayConfig } from './schema.js';

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * Settings that are valid but have no effect: reported (by `validate` and in a reload's
 * warnings), never refused, since removing them changes nothing. Read from the raw
 * document, because after parsing a defaulted `weight: 1` looks the same as a written one.
 */
export function configWarnings(document: unknown, config: GatewayConfig): ConfigIssue[] {
  const warnings: ConfigIssue[] = [];
  const rawRoutes = record(record(record(document)?.routing)?.routes) ?? {};
  for (const [model, route] of Object.entries(config.routing.routes ?? {})) {
    if (route.policy === 'weighted') continue;
    const candidates = record(rawRoutes[model])?.candidates;
    if (!Array.isArray(candidates)) continue;
    candidates.forEach((c: unknown, i) => {
      if (record(c)?.weight === undefined) return;
      warnings.push({
        path: `routing.routes.${model}.candidates[${i}].weight`,
        message: `ignored: policy "${route.policy}" does not use weights (only "weighted" does)`,
      });
    });
  }
  return warnings;
}
