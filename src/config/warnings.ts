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
  warnings.push(...capacityWarnings(config));
  warnings.push(...guardrailWarnings(config));
  warnings.push(...residencyWarnings(config));
  const responses = config.routing.responses;
  if (record(record(record(document)?.routing)?.responses)?.retention_days !== undefined && responses?.store !== 'database')
    warnings.push({
      path: 'routing.responses.retention_days',
      message: `ignored: only the database store prunes by it; the ${responses?.store ?? 'memory'} store expires by ttl_s`,
    });
  return warnings;
}

/**
 * A token limit below `governance.default_max_tokens`: a request that sets no output cap
 * would reserve more than the limit can ever hold, so it is capped to what fits
 * (`cap_output`) or, with `cap_output: false`, refused (400 over_limit_capacity). Valid,
 * but rarely what was meant.
 */
function capacityWarnings(config: GatewayConfig): ConfigIssue[] {
  const reserve = config.governance.default_max_tokens;
  const warnings: ConfigIssue[] = [];
  const check = (path: string, limit: number | undefined, per: string): void => {
    if (limit === undefined || limit >= reserve) return;
    warnings.push({
      path,
      message: `${limit} ${per} is below governance.default_max_tokens (${reserve}): a request that sets no max_tokens ${
        config.governance.cap_output
          ? 'is capped to what the limit holds (governance.cap_output)'
          : `reserves ${reserve} output tokens and is refused (over_limit_capacity)`
      }; lower default_max_tokens or raise the limit`,
    });
  };
  for (const [id, team] of Object.entries(config.teams ?? {})) {
    check(`teams.${id}.rate_limit.tpm`, team.rate_limit?.tpm, 'tokens per minute');
    check(`teams.${id}.quota.tokens_per_day`, team.quota?.tokens_per_day, 'tokens per day');
  }
  (config.keys ?? []).forEach((key, i) => {
    check(`keys[${i}].tpm`, key.tpm, 'tokens per minute');
    check(`keys[${i}].tokens_per_day`, key.tokens_per_day, 'tokens per day');
  });
  return warnings;
}

/**
 * A guardrail runs only where a list names it: one defined but attached to nothing in the
 * file must not look active. (A team or key in the database may still name it.) In overlay
 * mode the routes come from the control plane and carry no guardrails: only teams, keys and
 * `mcp` can attach one there.
 */
function guardrailWarnings(config: GatewayConfig): ConfigIssue[] {
  const defined = config.guardrails;
  if (defined === undefined) return [];
  const named = new Set<string>();
  const add = (a: { input?: readonly string[]; output?: readonly string[] } | undefined): void => {
    for (const n of [...(a?.input ?? []), ...(a?.output ?? [])]) named.add(n);
  };
  for (const route of Object.values(config.routing.routes ?? {})) add(route.guardrails);
  for (const team of Object.values(config.teams ?? {})) add(team.guardrails);
  for (const key of config.keys ?? []) add(key.guardrails);
  for (const n of [...(config.mcp.guardrails?.arguments ?? []), ...(config.mcp.guardrails?.results ?? [])]) named.add(n);
  const warnings: ConfigIssue[] = [];
  for (const name of Object.keys(defined)) {
    if (named.has(name)) continue;
    warnings.push({
      path: `guardrails.${name}`,
      message:
        'attached nowhere in this file: no route, team, key or mcp.guardrails lists it, so it runs only if a team or key in the database does',
    });
  }
  return warnings;
}

/**
 * A team whose residency no provider lies within: every request of it would be refused
 * (403 residency_not_allowed). Valid (a provider may be labelled later, or come through the
 * admin API), but rarely what was meant.
 */
function residencyWarnings(config: GatewayConfig): ConfigIssue[] {
  const warnings: ConfigIssue[] = [];
  const providers = Object.values(config.providers);
  for (const [id, team] of Object.entries(config.teams ?? {})) {
    const rule = team.residency;
    if (rule === undefined) continue;
    const served = providers.some((p) =>
      p.zones === undefined ? !rule.fail_closed : rule.allow.some((zone) => p.zones?.includes(zone) === true),
    );
    if (served) continue;
    warnings.push({
      path: `teams.${id}.residency.allow`,
      message: `no provider lies within ${rule.allow.join(', ')} (no provider's zones name one of them): every request of team "${id}" is refused with residency_not_allowed`,
    });
  }
  return warnings;
}
