import {
  type AgentRouteConfig,
  type AwsAuthConfig,
  agentReferenceIssues,
  type ConfigIssue,
  describeSecretRef,
  type EntraAuthConfig,
  type GatewayConfig,
  type GcpAuthConfig,
  type ProviderConfig,
  type ProviderConfigOf,
  type RouteConfig,
  resolveSecret,
  responseStoreIssues,
  routeReferenceIssues,
  type ToolRouteConfig,
  toolReferenceIssues,
} from '../config/index.js';
import { type ParsedOverlay, readBoundedFileSync, sha256Hex } from '../contract/index.js';
import {
  AwsSigner,
  type AwsSpec,
  adapterOf,
  type CloudAuthSources,
  Credential,
  type EntraSpec,
  type GcpSpec,
  IDLE_SOURCES,
  type PoolSpec,
  type PoolTls,
  type PriceEntry,
  type ProviderAuth,
  type ProviderPool,
  providerIdentity,
} from '../providers/index.js';
import { stableIdTable } from '../routing/index.js';
import { topologyDigestSteps } from './digest.js';
import {
  type AdminToken,
  type AgentCandidate,
  type AgentRoute,
  type AgentServerRuntime,
  deepFreeze,
  deepFreezeSteps,
  type Generation,
  type GenerationAgents,
  type GenerationCandidate,
  type GenerationRoute,
  type GenerationTools,
  type McpServerRuntime,
  type OverlaySnapshot,
  type ProviderPlace,
  type ProviderRuntime,
  type ToolCandidate,
  type ToolRoute,
} from './generation.js';
import { overlayRoutes } from './overlay-routes.js';
import { RELOAD_SLICE_MS, runSteps, runStepsInSlices, type Steps } from './steps.js';
import { FILE_TOPOLOGY, type GenerationTopology } from './topology.js';

export interface BuildInputs {
  readonly config: GatewayConfig;
  readonly sourceHash: string;
  readonly number: number;
  readonly env: NodeJS.ProcessEnv;
  /** Overlay mode: the validated overlay to take candidates from. */
  readonly overlay?: ParsedOverlay | null;
  /** The pool factory: server/ passes PoolRegistry.acquire so unchanged providers keep their pools. */
  readonly poolFor: (spec: PoolSpec) => ProviderPool;
  /**
   * The cloud credential sources (Entra ID, Google Cloud, AWS): server/ passes its
   * TokenSourceRegistry (which starts each first fetch); by default sources that never fetch
   * (validation, tests).
   */
  readonly cloudAuth?: CloudAuthSources;
  readonly now?: () => Date;
  /** The serving generation's `modelsFirstSeen`: a model still routed keeps its time. */
  readonly modelsFirstSeen?: Readonly<Record<string, number>>;
  /** The config file's own, when `config` joined the database's topology to it (default: `config`). */
  readonly fileConfig?: GatewayConfig;
  /** Where the topology came from (default: the file alone). */
  readonly topology?: GenerationTopology;
}

export type BuildResult =
  | { readonly ok: true; readonly generation: Generation }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/** A CA bundle or a certificate chain is a few kilobytes; a file past this is a mistake. */
const MAX_PEM_BYTES = 1024 * 1024;

/**
 * A provider's TLS files, read with the bounded reader every time a generation is built (so
 * a reload picks up rotated files), or issues naming the file that could not be read.
 */
function readTls(name: string, baseUrl: string, tls: NonNullable<ProviderConfig['tls']>, issues: ConfigIssue[]): PoolTls | undefined {
  if (!baseUrl.startsWith('https:')) {
    issues.push({ path: `providers.${name}.tls`, message: 'applies to an https base_url only' });
    return undefined;
  }
  return readTlsFiles(`providers.${name}.tls`, tls, issues);
}

/**
 * The PEM files of a `tls` block (a provider's, or the governance store's Redis), read with
 * the bounded reader, or issues naming each file that could not be read (`path` is the
 * block's config path).
 */
export function readTlsFiles(path: string, tls: NonNullable<ProviderConfig['tls']>, issues: ConfigIssue[]): PoolTls {
  const out: { ca?: string; cert?: string; key?: string; serverName?: string } = {};
  for (const part of ['ca', 'cert', 'key'] as const) {
    const ref = tls[part];
    if (ref === undefined) continue;
    const read = readBoundedFileSync(ref.file, MAX_PEM_BYTES, `${path}.${part} file`);
    if (!read.ok) issues.push({ path: `${path}.${part}`, message: read.message });
    else out[part] = read.bytes.toString('utf8');
  }
  if (tls.server_name !== undefined) out.serverName = tls.server_name;
  return out;
}

/**
 * What an `auth: {type: entra}` block asks for, with its secret resolved now (so a reload
 * re-reads it like every other reference), or null with the issue recorded. Without a
 * client_secret the workload identity's assertion file must be named by the environment the
 * AKS webhook injects; the file itself is read at every fetch, as the kubelet rotates it.
 */
export function entraSpec(name: string, auth: EntraAuthConfig, env: NodeJS.ProcessEnv, issues: ConfigIssue[]): EntraSpec | null {
  let clientSecret: Credential | null = null;
  let assertionFile: string | null = null;
  if (auth.client_secret !== undefined) {
    const secret = resolveSecret(auth.client_secret, env);
    if (!secret.ok) {
      issues.push({ path: `providers.${name}.auth.client_secret`, message: secret.message });
      return null;
    }
    clientSecret = new Credential(secret.value, describeSecretRef(auth.client_secret));
  } else {
    assertionFile = env.AZURE_FEDERATED_TOKEN_FILE ?? '';
    if (assertionFile === '') {
      issues.push({
        path: `providers.${name}.auth`,
        message: 'has no client_secret, and AZURE_FEDERATED_TOKEN_FILE (workload identity) is not set',
      });
      return null;
    }
  }
  const authorityHost = auth.authority_host.replace(/\/+$/, '');
  return { providerName: name, authorityHost, tenantId: auth.tenant_id, clientId: auth.client_id, clientSecret, assertionFile };
}

/** A service account key file is a few kilobytes. */
const MAX_KEY_FILE_BYTES = 64 * 1024;

/**
 * What a `gcp` block asks for: the service account's key read now from its file (so a
 * reload picks up a rotated key), or the metadata server; null with the issue recorded.
 */
export function gcpSpec(name: string, gcp: GcpAuthConfig, issues: ConfigIssue[]): GcpSpec | null {
  if (gcp.service_account === undefined) return { providerName: name, kind: 'metadata_server' };
  const path = `providers.${name}.gcp.service_account.file`;
  const file = gcp.service_account.file;
  const read = readBoundedFileSync(file, MAX_KEY_FILE_BYTES, 'service account key file');
  if (!read.ok) {
    issues.push({ path, message: read.message });
    return null;
  }
  let key: { client_email?: unknown; private_key?: unknown; type?: unknown };
  try {
    key = JSON.parse(read.bytes.toString('utf8')) as typeof key;
  } catch {
    // Never the parser's message: it may quote the file, which holds a private key.
    issues.push({ path, message: `${JSON.stringify(file)} is not a JSON service account key` });
    return null;
  }
  if (key === null || typeof key !== 'object' || typeof key.client_email !== 'string' || typeof key.private_key !== 'string') {
    issues.push({ path, message: `${JSON.stringify(file)} has no client_email and private_key (is it a service account key?)` });
    return null;
  }
  return {
    providerName: name,
    kind: 'service_account',
    keyFile: file,
    clientEmail: key.client_email,
    privateKey: new Credential(key.private_key, `file:${file}`),
    tokenUrl: gcp.token_url ?? null,
  };
}

/**
 * What an `aws` block asks for: access keys resolved now (so a reload re-reads them), or
 * the web identity whose token file and role the EKS pod identity webhook names in the
 * environment; null with the issue recorded.
 */
export function awsSpec(name: string, region: string, aws: AwsAuthConfig, env: NodeJS.ProcessEnv, issues: ConfigIssue[]): AwsSpec | null {
  if (aws.web_identity === true) {
    const tokenFile = env.AWS_WEB_IDENTITY_TOKEN_FILE ?? '';
    const roleArn = env.AWS_ROLE_ARN ?? '';
    if (tokenFile === '' || roleArn === '') {
      issues.push({
        path: `providers.${name}.aws.web_identity`,
        message: 'needs AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN in the environment (EKS IRSA sets both)',
      });
      return null;
    }
    const sessionName = env.AWS_ROLE_SESSION_NAME || `switchyard-${name}`.replace(/[^\w+=,.@-]/g, '-').slice(0, 64);
    return { providerName: name, kind: 'web_identity', region, roleArn, tokenFile, sessionName, stsEndpoint: aws.sts_endpoint ?? null };
  }
  const read = (key: 'access_key_id' | 'secret_access_key' | 'session_token'): Credential | null => {
    const ref = aws[key];
    if (ref === undefined) return null;
    const secret = resolveSecret(ref, env);
    if (secret.ok) return new Credential(secret.value, describeSecretRef(ref));
    issues.push({ path: `providers.${name}.aws.${key}`, message: secret.message });
    return null;
  };
  const accessKeyId = read('access_key_id');
  const secretAccessKey = read('secret_access_key');
  const sessionToken = read('session_token');
  if (accessKeyId === null || secretAccessKey === null || (aws.session_token !== undefined && sessionToken === null)) return null;
  return { providerName: name, kind: 'keys', accessKeyId, secretAccessKey, sessionToken };
}

/** A provider that serves models: every type's config but an MCP server's. */
type ModelProviderConfig = Exclude<ProviderConfig, ProviderConfigOf<'mcp'> | ProviderConfigOf<'a2a'>>;

/**
 * Builds a generation from a validated config, cross-checking everything the schema
 * alone cannot: every candidate names a provider, every secret reference resolves. It
 * either returns a whole generation or every problem found, with its path; it never
 * returns something half-built. The only side effects are reading secret files and asking
 * the pool factory for pools, which open no connection until the first request.
 */
export function buildGeneration(inputs: BuildInputs): BuildResult {
  return runSteps(buildSteps(inputs));
}

/**
 * buildGeneration, run in slices of about `sliceMs` with the event loop let go in between,
 * so that a reload of tens of thousands of routes never holds the requests being served
 * (ADR 0015). The same steps, so the same generation or the same issues. Nothing else may
 * swap meanwhile: reloads are serialised by the ReloadCoordinator.
 */
export function buildGenerationInSlices(inputs: BuildInputs, sliceMs = RELOAD_SLICE_MS): Promise<BuildResult> {
  return runStepsInSlices(buildSteps(inputs), sliceMs);
}

/** The build, with a pause point after each provider, key, route and price, and through the freeze. */
function* buildSteps(inputs: BuildInputs): Steps<BuildResult> {
  const { config } = inputs;
  const issues: ConfigIssue[] = [];
  const providers: Record<string, ProviderRuntime> = Object.create(null) as Record<string, ProviderRuntime>;
  const servers: Record<string, McpServerRuntime> = Object.create(null) as Record<string, McpServerRuntime>;
  const agentServers: Record<string, AgentServerRuntime> = Object.create(null) as Record<string, AgentServerRuntime>;
  const pending: Array<() => void> = [];

  // Maps of many entries are walked by key: Object.entries and Object.values of a map of
  // 60k keys take 40-100 ms in one piece, Object.keys about 12.
  for (const name of Object.keys(config.providers)) {
    const config_ = config.providers[name] as ProviderConfig;
    let credential: Credential | null = null;
    const apiKey = 'api_key' in config_ ? config_.api_key : undefined;
    if (apiKey !== undefined) {
      const secret = resolveSecret(apiKey, inputs.env);
      if (!secret.ok) issues.push({ path: `providers.${name}.api_key`, message: secret.message });
      else credential = new Credential(secret.value, describeSecretRef(apiKey));
    }
    const adapter = adapterOf(config_.type);
    if (adapter.serves === 'tools') {
      pending.push(mcpServer(name, config_ as ProviderConfigOf<'mcp'>, credential, issues, inputs.poolFor, servers));
      yield;
      continue;
    }
    if (adapter.serves === 'agents') {
      pending.push(agentServer(name, config_ as ProviderConfigOf<'a2a'>, credential, issues, inputs.poolFor, agentServers));
      yield;
      continue;
    }
    const p = config_ as ModelProviderConfig;
    // Each auth block belongs to the types whose schema has it; its presence is the whole question.
    const entra = 'auth' in p && p.auth !== undefined ? entraSpec(name, p.auth, inputs.env, issues) : null;
    const gcp = 'gcp' in p ? gcpSpec(name, p.gcp, issues) : null;
    const aws = 'aws' in p ? awsSpec(name, p.region, p.aws, inputs.env, issues) : null;
    // The region requests are signed for: a signing type's own (every type has a free-text `region` besides).
    const signingRegion = 'aws' in p ? p.region : '';
    const baseUrl = (p.base_url ?? adapter.defaultBaseUrl(p) ?? '').replace(/\/+$/, '');
    const identity = providerIdentity(p.type, baseUrl, adapter.scope(p));
    const tls = p.tls === undefined ? undefined : readTls(name, baseUrl, p.tls, issues);
    // Pools are asked for only once the whole config is known to be valid.
    pending.push(() => {
      const pool = inputs.poolFor({ identity, baseUrl, connectTimeoutMs: p.connect_timeout_ms, maxConnections: p.max_connections, tls });
      const sources = inputs.cloudAuth ?? IDLE_SOURCES;
      const auth: ProviderAuth = {
        bearer: entra !== null ? sources.entra(entra) : gcp !== null ? sources.gcp(gcp) : null,
        signer: aws === null ? null : new AwsSigner(sources.aws(aws), signingRegion, baseUrl),
      };
      const wire = adapter.wire(p, auth);
      providers[name] = {
        name,
        type: p.type,
        protocol: wire.protocolOf(''),
        baseUrl,
        wire,
        identity,
        timeoutMs: p.timeout_ms,
        requestTimeoutMs: p.request_timeout_ms ?? null,
        streamMaxMs: p.stream_max_ms ?? null,
        maxEventBytes: p.max_event_bytes,
        retry:
          p.retry === undefined || p.retry.attempts === 0
            ? null
            : { attempts: p.retry.attempts, backoffMs: p.retry.backoff_ms, maxBackoffMs: p.retry.max_backoff_ms },
        pool,
        credential,
        bearer: auth.bearer,
        signer: auth.signer,
        headers: { ...p.headers },
        exposeHeaders: p.expose_headers.length === 0 ? null : new Set(p.expose_headers),
        models: upstreamNames(p.models),
        ...placeOf(p),
      };
    });
    yield;
  }

  let adminToken: Credential | null = null;
  const adminTokens: AdminToken[] = [];
  if (config.server.admin_token !== undefined) {
    const ref = config.server.admin_token;
    const secret = resolveSecret(ref, inputs.env);
    if (!secret.ok) issues.push({ path: 'server.admin_token', message: secret.message });
    else {
      adminToken = new Credential(secret.value, describeSecretRef(ref));
      adminTokens.push({ id: 'admin', role: 'admin', credential: adminToken });
    }
  }
  (config.server.admin_tokens ?? []).forEach((t, i) => {
    const secret = resolveSecret(t.token, inputs.env);
    if (!secret.ok) issues.push({ path: `server.admin_tokens[${i}].token`, message: secret.message });
    else adminTokens.push({ id: t.id, role: t.role, credential: new Credential(secret.value, describeSecretRef(t.token)) });
  });

  // The governance store's credentials are read when the store is built, once at start;
  // resolved here as well (the values are dropped) so that validate and a reload report one
  // that no longer resolves, before a restart would fail on it.
  for (const key of ['redis_username', 'redis_password'] as const) {
    const ref = config.governance[key];
    if (ref === undefined) continue;
    const secret = resolveSecret(ref, inputs.env);
    if (!secret.ok) issues.push({ path: `governance.${key}`, message: secret.message });
  }

  // The trace collector's headers (an API key, usually): resolved like every secret, so that
  // validate and a reload report a missing one.
  let otlpHeaders: Record<string, Credential> | null = null;
  if (config.telemetry.otlp !== undefined) {
    otlpHeaders = Object.create(null) as Record<string, Credential>;
    for (const [name, ref] of Object.entries(config.telemetry.otlp.headers)) {
      const secret = resolveSecret(ref, inputs.env);
      if (!secret.ok) issues.push({ path: `telemetry.otlp.headers.${name}`, message: secret.message });
      else otlpHeaders[name] = new Credential(secret.value, describeSecretRef(ref));
    }
  }

  const routeSpecs = config.routing.routes ?? {};
  const overlaySettings = config.routing.overlay;
  if (overlaySettings !== undefined && (inputs.overlay === undefined || inputs.overlay === null)) {
    issues.push({ path: 'routing.overlay.file', message: 'overlay mode needs a validated overlay to build a generation' });
  }
  // Secrets were resolved above (their values are needed); here only the references, as
  // crossReferenceIssues checks them, a route at a time.
  const models = Object.keys(routeSpecs);
  for (const model of models) {
    issues.push(...routeReferenceIssues(model, routeSpecs[model], config.providers));
    yield;
  }
  issues.push(...toolReferenceIssues(config.routing as unknown as Record<string, unknown>, config.providers));
  issues.push(...agentReferenceIssues(config.routing.agents ?? {}, config.providers));
  issues.push(...responseStoreIssues(config));
  const toolSpecs = config.routing.tools ?? {};
  const agentSpecs = config.routing.agents ?? {};
  const agentNames = Object.keys(agentSpecs);
  const hasTools = Object.keys(toolSpecs).length > 0 || (config.routing.tools_from ?? []).length > 0;
  if (overlaySettings === undefined && models.length === 0 && !hasTools && agentNames.length === 0)
    issues.push({ path: 'routing.routes', message: 'at least one route (or tool route, or agent) is required' });
  if (issues.length > 0) return { ok: false, issues };

  for (const open of pending) open();
  let routes: Record<string, GenerationRoute> = Object.create(null) as Record<string, GenerationRoute>;
  let overlay: OverlaySnapshot | null = null;
  let toolRoutes: Record<string, ToolRoute> = Object.create(null) as Record<string, ToolRoute>;
  if (overlaySettings !== undefined && inputs.overlay) {
    const built = overlayRoutes(inputs.overlay, overlaySettings, providers, servers);
    routes = built.routes;
    toolRoutes = built.tools;
    overlay = built.snapshot;
  } else {
    for (const tool of Object.keys(toolSpecs)) toolRoutes[tool] = staticToolRoute(tool, toolSpecs[tool] as ToolRouteConfig, servers);
    for (const model of models) {
      // Frozen as it is built, with its spec: the freeze below never walks a map of 60k
      // routes in one piece (Object.keys of one takes 10-15 ms; ADR 0021).
      deepFreeze(routeSpecs[model]);
      routes[model] = deepFreeze(staticRoute(model, routeSpecs[model] as RouteConfig, providers));
      yield;
    }
    Object.freeze(routeSpecs);
  }
  if (overlay !== null) yield* deepFreezeSteps(routes);
  Object.freeze(routes);
  const tools: GenerationTools = {
    servers,
    routes: toolRoutes,
    from: (config.routing.tools_from ?? []).map((f) => ({ provider: f.provider, prefix: f.prefix })),
  };
  const agentRoutes = Object.create(null) as Record<string, AgentRoute>;
  for (const agent of agentNames) agentRoutes[agent] = agentRoute(agent, agentSpecs[agent] as AgentRouteConfig, agentServers);
  const agents: GenerationAgents = { servers: agentServers, routes: agentRoutes, names: agentNames };

  const builtAt = (inputs.now?.() ?? new Date()).toISOString();
  const builtAtS = Math.floor(Date.parse(builtAt) / 1000);
  const counterKeys = new Set<string>();
  // `created` in GET /v1/models is when this process first routed the model, so that clients
  // caching the list see no change on a reload that leaves the model routed.
  const modelsFirstSeen: Record<string, number> = Object.create(null) as Record<string, number>;
  // GET /v1/models's entries, each as JSON: the body is their list, rendered once here.
  const listed: string[] = [];
  const routed = overlay === null ? models : Object.keys(routes);
  for (const model of routed) {
    const route = routes[model] as GenerationRoute;
    for (const group of route.groups) if (group.counterKey !== '') counterKeys.add(group.counterKey);
    const created = inputs.modelsFirstSeen?.[model] ?? builtAtS;
    modelsFirstSeen[model] = created;
    if (route.admitsNew) listed.push(JSON.stringify({ id: model, object: 'model', created, owned_by: 'switchyard' }));
    yield;
  }
  Object.freeze(modelsFirstSeen);
  for (const tool of Object.keys(toolRoutes))
    for (const group of (toolRoutes[tool] as ToolRoute).groups) if (group.counterKey !== '') counterKeys.add(group.counterKey);
  for (const agent of agentNames)
    for (const group of (agentRoutes[agent] as AgentRoute).groups) if (group.counterKey !== '') counterKeys.add(group.counterKey);
  const pricing: Record<string, PriceEntry> = Object.create(null) as Record<string, PriceEntry>;
  for (const key of Object.keys(config.pricing.models)) {
    pricing[key] = { ...config.pricing.models[key] } as PriceEntry;
    yield;
  }

  const digest = yield* topologyDigestSteps(config, overlaySettings === undefined ? null : (inputs.overlay ?? null));

  const generation: Generation = {
    number: inputs.number,
    builtAt,
    sourceHash: inputs.sourceHash,
    digest,
    config,
    fileConfig: inputs.fileConfig ?? config,
    topology: inputs.topology ?? FILE_TOPOLOGY,
    providers,
    routes,
    tools,
    agents,
    models: Object.freeze(routed),
    identities: [
      ...new Set([...Object.values(providers), ...Object.values(servers), ...Object.values(agentServers)].map((p) => p.identity)),
    ],
    // A Set's entries are not frozen by Object.freeze: ReadonlySet is what keeps them.
    counterKeys: Object.freeze(counterKeys),
    modelsFirstSeen,
    modelsBody: `{"object":"list","data":[${listed.join(',')}]}`,
    pricing,
    adminToken,
    adminTokens,
    otlpHeaders,
    overlay,
  };
  yield* deepFreezeSteps(generation);
  return { ok: true, generation };
}

/** A provider's `models` map as a null-prototype object (see ProviderRuntime.models). */
function upstreamNames(map: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const names = Object.create(null) as Record<string, string>;
  if (map !== undefined) for (const key of Object.keys(map)) names[key] = map[key] as string;
  return names;
}

function staticRoute(
  model: string,
  spec: NonNullable<GatewayConfig['routing']['routes']>[string],
  providers: Readonly<Record<string, ProviderRuntime>>,
): GenerationRoute {
  const seen = new Set<string>();
  const candidates: GenerationCandidate[] = spec.candidates.map((c, i) => {
    const provider = providers[c.provider] as ProviderRuntime;
    const upstreamModel = c.deployment ?? c.model ?? provider.models[model] ?? model;
    let stableId = `${c.provider}/${upstreamModel}`;
    if (seen.has(stableId)) stableId = `${stableId}#${i}`;
    seen.add(stableId);
    return {
      stableId,
      providerName: provider.name,
      identity: provider.identity,
      weight: c.weight,
      admission: 'new_and_existing',
      group: 0,
      zones: provider.zones,
      region: provider.region,
      provider,
      upstreamModel,
      protocol: provider.wire.protocolOf(upstreamModel, c.publisher),
      credential: null,
      credentialProblem: null,
    };
  });
  // The rotation survives a reload exactly when the route's candidates are unchanged. Only
  // round_robin keeps a rotation: the other policies need no key (nor its hash, at 60k routes).
  const counterKey = spec.policy === 'round_robin' ? `static:${model}:${sha256Hex(JSON.stringify(spec)).slice(0, 16)}` : '';
  return {
    model,
    policy: spec.policy,
    groups: [
      { index: 0, admission: 'new_and_existing', candidates, totalWeight: candidates.reduce((s, c) => s + c.weight, 0), counterKey },
    ],
    byStableId: stableIdTable(candidates),
    admitsNew: candidates.length > 0,
  };
}

/**
 * The pool of a type whose calls go to one endpoint (an MCP server, an A2A agent), keyed by
 * `<type> <url>` and opened on the URL's origin (calls name the endpoint's path); its TLS
 * files are read now, so a missing one is an issue of the build. Opened once the whole
 * config is valid.
 */
function endpointPool(
  type: 'mcp' | 'a2a',
  name: string,
  url: string,
  p: ProviderConfigOf<'mcp'> | ProviderConfigOf<'a2a'>,
  issues: ConfigIssue[],
  poolFor: BuildInputs['poolFor'],
): { readonly identity: string; open(): ProviderPool } {
  const identity = `${type} ${url}`;
  const tls = p.tls === undefined ? undefined : readTls(name, url, p.tls, issues);
  return {
    identity,
    open: () =>
      poolFor({ identity, baseUrl: new URL(url).origin, connectTimeoutMs: p.connect_timeout_ms, maxConnections: p.max_connections, tls }),
  };
}

/**
 * An MCP server's runtime, opened once the whole config is valid. Its pool is keyed by the
 * endpoint's origin (calls name the endpoint's path), and it never takes a cloud credential:
 * only its own api_key goes upstream, never a caller's.
 */
function mcpServer(
  name: string,
  p: ProviderConfigOf<'mcp'>,
  credential: Credential | null,
  issues: ConfigIssue[],
  poolFor: BuildInputs['poolFor'],
  servers: Record<string, McpServerRuntime>,
): () => void {
  const url = (p.base_url as string).replace(/\/+$/, '');
  const endpoint = endpointPool('mcp', name, url, p, issues, poolFor);
  return () => {
    servers[name] = {
      name,
      url,
      identity: endpoint.identity,
      timeoutMs: p.timeout_ms,
      pool: endpoint.open(),
      credential,
      headers: { ...p.headers },
      tools: upstreamNames(p.tools),
      trustAnnotations: p.trust_annotations === true,
      ...placeOf(p),
    };
  };
}

/**
 * An upstream agent's runtime, opened once the whole config is valid. Its pool is keyed by
 * base_url's origin: calls go to the JSON-RPC endpoint its card names, which must be on that
 * origin, and they carry only its own api_key, never a caller's.
 */
function agentServer(
  name: string,
  p: ProviderConfigOf<'a2a'>,
  credential: Credential | null,
  issues: ConfigIssue[],
  poolFor: BuildInputs['poolFor'],
  agentServers: Record<string, AgentServerRuntime>,
): () => void {
  const baseUrl = (p.base_url as string).replace(/\/+$/, '');
  const endpoint = endpointPool('a2a', name, baseUrl, p, issues, poolFor);
  return () => {
    agentServers[name] = {
      name,
      baseUrl,
      cardUrl: `${baseUrl}${p.card_path}`,
      identity: endpoint.identity,
      timeoutMs: p.timeout_ms,
      requestTimeoutMs: p.request_timeout_ms ?? null,
      streamMaxMs: p.stream_max_ms ?? null,
      pool: endpoint.open(),
      credential,
      headers: { ...p.headers },
      ...placeOf(p),
    };
  };
}

/** A provider's `region` and `zones`, as every candidate of it carries them. */
function placeOf(p: { readonly region?: string | undefined; readonly zones?: readonly string[] | undefined }): ProviderPlace {
  return { region: p.region ?? null, zones: p.zones === undefined ? null : new Set(p.zones) };
}

/** A `routing.agents` entry: its candidates serve one agent, in one group. */
function agentRoute(agent: string, spec: AgentRouteConfig, agentServers: Readonly<Record<string, AgentServerRuntime>>): AgentRoute {
  const seen = new Set<string>();
  const candidates: AgentCandidate[] = spec.candidates.map((c, i) => {
    const server = agentServers[c.provider] as AgentServerRuntime;
    let stableId = c.provider;
    if (seen.has(stableId)) stableId = `${stableId}#${i}`;
    seen.add(stableId);
    return {
      stableId,
      providerName: server.name,
      identity: server.identity,
      weight: c.weight,
      admission: 'new_and_existing',
      group: 0,
      zones: server.zones,
      region: server.region,
      server,
      credential: null,
      credentialProblem: null,
    };
  });
  const counterKey = spec.policy === 'round_robin' ? `agent:${agent}:${sha256Hex(JSON.stringify(spec)).slice(0, 16)}` : '';
  return {
    model: agent,
    policy: spec.policy,
    groups: [
      { index: 0, admission: 'new_and_existing', candidates, totalWeight: candidates.reduce((s, c) => s + c.weight, 0), counterKey },
    ],
    byStableId: stableIdTable(candidates),
    admitsNew: candidates.length > 0,
  };
}

/** A `routing.tools` entry: its candidates are replicas of one tool, in one group that admits new sessions. */
function staticToolRoute(tool: string, spec: ToolRouteConfig, servers: Readonly<Record<string, McpServerRuntime>>): ToolRoute {
  const seen = new Set<string>();
  const candidates: ToolCandidate[] = spec.candidates.map((c, i) => {
    const server = servers[c.provider] as McpServerRuntime;
    const upstreamTool = c.tool ?? server.tools[tool] ?? tool;
    let stableId = `${c.provider}/${upstreamTool}`;
    if (seen.has(stableId)) stableId = `${stableId}#${i}`;
    seen.add(stableId);
    return {
      stableId,
      providerName: server.name,
      identity: server.identity,
      weight: c.weight,
      admission: 'new_and_existing',
      group: 0,
      zones: server.zones,
      region: server.region,
      server,
      upstreamTool,
      credential: null,
      credentialProblem: null,
    };
  });
  const counterKey = spec.policy === 'round_robin' ? `static-tool:${tool}:${sha256Hex(JSON.stringify(spec)).slice(0, 16)}` : '';
  return {
    model: tool,
    policy: spec.policy,
    groups: [
      { index: 0, admission: 'new_and_existing', candidates, totalWeight: candidates.reduce((s, c) => s + c.weight, 0), counterKey },
    ],
    byStableId: stableIdTable(candidates),
    admitsNew: candidates.length > 0,
    retrySafe: spec.retry_safe,
  };
}
