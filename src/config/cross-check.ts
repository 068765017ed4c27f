import { candidateKeyType, servesAgents, servesEmbeddings, servesTools } from './provider-types.js';
import { type SecretRef, secretRefSchema } from './schema.js';
import { resolveSecret } from './secrets.js';

export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * The checks that span sections: every route candidate names a configured provider, and
 * (given an environment) every well-formed secret reference resolves. Works on a raw
 * document, so it can run even when the schema check failed elsewhere, and on a validated
 * config, where buildGeneration relies on it.
 */
export function crossReferenceIssues(document: unknown, env?: NodeJS.ProcessEnv): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const doc = record(document);
  if (doc === undefined) return issues;
  const providers = record(doc.providers) ?? {};
  const routes = record(record(doc.routing)?.routes) ?? {};
  for (const [model, route] of Object.entries(routes)) issues.push(...routeReferenceIssues(model, route, providers));
  issues.push(...toolReferenceIssues(record(doc.routing), providers));
  issues.push(...agentReferenceIssues(record(record(doc.routing)?.agents) ?? {}, providers));
  issues.push(...responseStoreIssues(doc));
  issues.push(...cacheIssues(doc, routes, providers));
  if (env === undefined) return issues;
  const refs: Array<[string, unknown]> = Object.entries(providers).map(([name, p]) => [`providers.${name}.api_key`, record(p)?.api_key]);
  for (const [name, p] of Object.entries(providers)) {
    const aws = record(record(p)?.aws);
    for (const key of ['access_key_id', 'secret_access_key', 'session_token'])
      if (aws?.[key] !== undefined) refs.push([`providers.${name}.aws.${key}`, aws[key]]);
  }
  refs.push(['server.admin_token', record(doc.server)?.admin_token]);
  // The store's credentials are read once, at start; checked here too so that `validate` finds a missing one.
  const governance = record(doc.governance);
  refs.push(['governance.redis_username', governance?.redis_username], ['governance.redis_password', governance?.redis_password]);
  for (const [path, value] of refs) {
    if (value === undefined) continue;
    const ref = secretRefSchema.safeParse(value);
    if (!ref.success) continue;
    const secret = resolveSecret(ref.data as SecretRef, env);
    if (!secret.ok) issues.push({ path, message: secret.message });
  }
  return issues;
}

/**
 * The route part of crossReferenceIssues, for one route: each candidate names a configured
 * provider, `deployment` only with an azure_openai one and `publisher` only with a vertex one. buildGeneration runs it route
 * by route, so that a config of many routes is checked in slices.
 */
export function routeReferenceIssues(model: string, route: unknown, providers: Readonly<Record<string, unknown>>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const candidates = record(route)?.candidates;
  if (!Array.isArray(candidates)) return issues;
  candidates.forEach((c: unknown, i) => {
    const provider = record(c)?.provider;
    if (typeof provider === 'string' && providers[provider] === undefined) {
      issues.push({ path: `routing.routes.${model}.candidates[${i}].provider`, message: `unknown provider "${provider}"` });
    } else if (typeof provider === 'string' && servesTools(record(providers[provider])?.type)) {
      issues.push({
        path: `routing.routes.${model}.candidates[${i}].provider`,
        message: `"${provider}" is an MCP server (type: mcp): it serves tools (routing.tools), not models`,
      });
    } else if (typeof provider === 'string' && servesAgents(record(providers[provider])?.type)) {
      issues.push({
        path: `routing.routes.${model}.candidates[${i}].provider`,
        message: `"${provider}" is an agent (type: a2a): it serves agents (routing.agents), not models`,
      });
    } else if (typeof provider === 'string') {
      for (const key of ['deployment', 'publisher'] as const) {
        if (record(c)?.[key] === undefined) continue;
        const { owner, applies } = candidateKeyType(key, record(providers[provider])?.type);
        if (applies) continue;
        issues.push({
          path: `routing.routes.${model}.candidates[${i}].${key}`,
          message: `only applies to ${/^[aeiou]/.test(owner) ? 'an' : 'a'} ${owner} provider; "${provider}" is not one`,
        });
        break;
      }
    }
  });
  return issues;
}

/**
 * The response store's backend is another section's: `redis` is the governance store's
 * Redis, and `database` the gateway's database, so that section must be configured.
 */
export function responseStoreIssues(document: unknown): ConfigIssue[] {
  const doc = record(document);
  const store = record(record(doc?.routing)?.responses)?.store;
  const path = 'routing.responses.store';
  if (store === 'redis' && (record(doc?.governance)?.store !== 'redis' || record(doc?.governance)?.redis_url === undefined))
    return [
      { path, message: '"redis" keeps responses in the governance store\'s Redis: set governance.store: redis and governance.redis_url' },
    ];
  if (store === 'database' && record(doc?.database)?.url === undefined)
    return [{ path, message: '"database" keeps responses in the gateway\'s database: set database.url' }];
  return [];
}

/**
 * The response cache's references: a redis cache needs a Redis (its own `cache.redis_url`,
 * or the governance store's), and a semantic route's `embedding_route` is a route of this
 * gateway whose candidates serve embeddings.
 */
export function cacheIssues(
  doc: Record<string, unknown>,
  routes: Readonly<Record<string, unknown>>,
  providers: Readonly<Record<string, unknown>>,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const cache = record(doc.cache);
  const governance = record(doc.governance);
  if (cache?.store === 'redis' && cache.redis_url === undefined && (governance?.store !== 'redis' || governance.redis_url === undefined))
    issues.push({
      path: 'cache.store',
      message: '"redis" needs a Redis: set cache.redis_url, or governance.store: redis and governance.redis_url',
    });
  for (const [model, route] of Object.entries(routes)) {
    const semantic = record(record(record(route)?.cache)?.semantic);
    const target = semantic?.embedding_route;
    if (typeof target !== 'string') continue;
    const path = `routing.routes.${model}.cache.semantic.embedding_route`;
    const embedding = record(routes[target]);
    if (embedding === undefined) {
      issues.push({ path, message: `unknown route "${target}": the embedding route is one of this gateway's routes` });
      continue;
    }
    const candidates = embedding.candidates;
    const serves =
      Array.isArray(candidates) &&
      candidates.some((c: unknown) => {
        return servesEmbeddings(record(providers[String(record(c)?.provider)])?.type);
      });
    if (!serves) issues.push({ path, message: `route "${target}" has no candidate that serves embeddings` });
  }
  return issues;
}

/**
 * The tool routes' references: every candidate of routing.tools and every routing.tools_from
 * source names a configured provider of type mcp.
 */
export function toolReferenceIssues(
  routing: Record<string, unknown> | undefined,
  providers: Readonly<Record<string, unknown>>,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const check = (path: string, provider: unknown): void => {
    if (typeof provider !== 'string') return;
    const type = record(providers[provider])?.type;
    if (providers[provider] === undefined) issues.push({ path, message: `unknown provider "${provider}"` });
    else if (!servesTools(type)) issues.push({ path, message: `"${provider}" is not an MCP server (type: mcp); a tool needs one` });
  };
  for (const [tool, route] of Object.entries(record(routing?.tools) ?? {})) {
    const candidates = record(route)?.candidates;
    if (Array.isArray(candidates))
      candidates.forEach((c: unknown, i) => {
        check(`routing.tools.${tool}.candidates[${i}].provider`, record(c)?.provider);
      });
  }
  const sources = routing?.tools_from;
  if (Array.isArray(sources))
    sources.forEach((s: unknown, i) => {
      check(`routing.tools_from[${i}].provider`, record(s)?.provider);
    });
  return issues;
}

/** The agents' references: every candidate of routing.agents names a configured provider of type a2a. */
export function agentReferenceIssues(
  agents: Readonly<Record<string, unknown>>,
  providers: Readonly<Record<string, unknown>>,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [agent, route] of Object.entries(agents)) {
    const candidates = record(route)?.candidates;
    if (!Array.isArray(candidates)) continue;
    candidates.forEach((c: unknown, i) => {
      const provider = record(c)?.provider;
      if (typeof provider !== 'string') return;
      const path = `routing.agents.${agent}.candidates[${i}].provider`;
      if (providers[provider] === undefined) issues.push({ path, message: `unknown provider "${provider}"` });
      else if (!servesAgents(record(providers[provider])?.type))
        issues.push({ path, message: `"${provider}" is not an agent (type: a2a); an agent route needs one` });
    });
  }
  return issues;
}
