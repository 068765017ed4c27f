import {
  adminTokenRequired,
  type ConfigIssue,
  type DatabaseConfig,
  formatIssue,
  type GatewayConfig,
  loadConfigFileOffThread,
  TOOL_NAME,
} from '../config/index.js';
import { checkSuccession, type ParsedOverlay, parseOverlay, readOverlayFile, sha256Hex } from '../contract/index.js';
import type { ManagedSnapshot, TopologySnapshot } from '../database/index.js';
import type { CloudAuthSources, PoolSpec, ProviderPool } from '../providers/index.js';
import { candidatesOf, type RoutableCandidate } from '../routing/index.js';
import { buildGenerationInSlices } from './build.js';
import { restartOnlyWarnings } from './diff.js';
import type { Generation } from './generation.js';
import { assemble, fileOf, type Keyring, readKeyringFile } from './keyring.js';
import { joinTopology } from './topology.js';

export interface PrepareInputs {
  readonly configPath: string;
  readonly env: NodeJS.ProcessEnv;
  /** The generation serving now; null at start-up and for `switchyard validate`. */
  readonly serving: Generation | null;
  /** The keyring serving now, beside it; null (or absent) when nothing serves. */
  readonly servingKeyring?: Keyring | null;
  /** The config the listeners were started with; null before start-up has applied one. */
  readonly startupConfig: GatewayConfig | null;
  /**
   * Re-read the config file. False (an overlay event) keeps the serving config and reads
   * only the overlay. Ignored while nothing serves: then the config is always read.
   */
  readonly readConfig?: boolean;
  /**
   * Input bytes identical to the serving ones are a no-op (watcher triggers). An operator's
   * trigger passes false: it rebuilds anyway, as a referenced secret file may have rotated.
   */
  readonly unchangedIsNoop?: boolean;
  /**
   * `switchyard validate --overlay FILE`: judge this overlay file instead of the config's
   * `routing.overlay.file`. Only with nothing serving (the watched file is fixed at start-up).
   */
  readonly overlayFile?: string;
  /** The pool factory (server/ passes PoolRegistry.acquire; validate a throwaway registry). */
  readonly poolFor: (spec: PoolSpec) => ProviderPool;
  /** The cloud credential sources (server/ passes its TokenSourceRegistry); none = sources that never fetch. */
  readonly cloudAuth?: CloudAuthSources;
  /**
   * With `database` configured: reads the database's teams and keys. Absent (validate
   * without a connection) the generation has the file's only.
   */
  readonly managed?: (settings: DatabaseConfig) => Promise<ManagedSnapshot>;
  /**
   * With `database` configured: reads the providers, routes and prices written through the
   * admin API. Absent, the generation has the file's only.
   */
  readonly topology?: (settings: DatabaseConfig) => Promise<TopologySnapshot>;
}

/** A refused overlay file: the contract's reason category and its message. */
export interface OverlayRejection {
  readonly reason: string;
  readonly message: string;
}

/** SHA-256 of the raw bytes read for this preparation (null: not read, or unreadable). */
export interface InputsRead {
  readonly config: string | null;
  readonly overlay: string | null;
}

export type Preparation = (
  | {
      readonly outcome: 'built';
      readonly generation: Generation;
      /** The keyring that serves beside it: the serving one when neither the file nor the database changed. */
      readonly keyring: Keyring;
      /** Restart-only keys, ignored settings, unreadable credentials, unroutable candidates. */
      readonly warnings: readonly string[];
    }
  | {
      readonly outcome: 'unchanged';
      /** Whether the overlay was read and found identical (it counts as an overlay reload). */
      readonly overlayRead: boolean;
    }
  | {
      readonly outcome: 'rejected';
      readonly issues: readonly ConfigIssue[];
      /** Set when the overlay file was refused. */
      readonly overlay?: OverlayRejection;
      /** An overlay revision that passed the contract before something else refused the whole. */
      readonly acceptedRevision?: string;
    }
) & { readonly read: InputsRead };

/**
 * Load the config, refuse what the serving generation forbids, read and check the overlay,
 * then build a generation: the one path that `switchyard validate`, start-up and every
 * reload take, so the three accept and refuse exactly the same inputs. It never swaps
 * anything; the caller decides what to do with the result.
 */
export async function prepareGeneration(inputs: PrepareInputs): Promise<Preparation> {
  const read = { config: null as string | null, overlay: null as string | null };
  const prepared = await prepare(inputs, read);
  return { ...prepared, read };
}

type Prepared = Preparation extends infer P ? (P extends unknown ? Omit<P, 'read'> : never) : never;

async function prepare(inputs: PrepareInputs, read: { config: string | null; overlay: string | null }): Promise<Prepared> {
  const { serving, startupConfig } = inputs;
  const noop = serving !== null && inputs.unchangedIsNoop === true;
  let config: GatewayConfig;
  let sourceHash: string;
  let configWarnings: readonly ConfigIssue[] = [];
  let configChanged = true;
  if (serving !== null && inputs.readConfig === false) {
    config = serving.fileConfig;
    sourceHash = serving.sourceHash;
    configChanged = false;
  } else {
    // The serving generation's cap bounds the next reload; the default before anything serves.
    const loaded = await loadConfigFileOffThread(inputs.configPath, inputs.env, serving?.config.server.max_config_bytes);
    read.config = loaded.sourceHash ?? null;
    if (!loaded.ok) return { outcome: 'rejected', issues: loaded.issues };
    config = loaded.config;
    sourceHash = loaded.sourceHash;
    configWarnings = loaded.warnings;
  }
  const servingKeyring = serving === null ? null : (inputs.servingKeyring ?? null);
  const managed = await readDatabase(config, inputs.managed, servingKeyring?.managed ?? null, 'teams and keys');
  if (!managed.ok) return { outcome: 'rejected', issues: [managed.issue] };
  const snapshot = managed.snapshot;
  const managedChanged = (snapshot?.version ?? null) !== (servingKeyring?.managed?.version ?? null);
  const topologyRead = await readDatabase(config, inputs.topology, serving?.topology.snapshot ?? null, 'providers, routes and prices');
  if (!topologyRead.ok) return { outcome: 'rejected', issues: [topologyRead.issue] };
  const topologyChanged = (topologyRead.snapshot?.version ?? null) !== (serving?.topology.version ?? null);
  if (configChanged && serving !== null) {
    if (noop && sourceHash === serving.sourceHash && !managedChanged && !topologyChanged) {
      // The config file was rewritten with the same bytes: in static mode nothing can
      // have changed; in overlay mode the overlay still gets its look.
      if (config.routing.overlay === undefined) return { outcome: 'unchanged', overlayRead: false };
      configChanged = false;
    }
  }
  if (noop && !configChanged && !managedChanged && !topologyChanged && config.routing.overlay === undefined)
    return { outcome: 'unchanged', overlayRead: false };
  if (configChanged) {
    const refused = refuseSuccession(serving, startupConfig, config);
    if (refused !== null) return { outcome: 'rejected', issues: [refused] };
  }

  let overlay: ParsedOverlay | null = null;
  const overlaySettings = config.routing.overlay;
  if (overlaySettings === undefined && inputs.overlayFile !== undefined) {
    return {
      outcome: 'rejected',
      issues: [
        { path: 'routing', message: 'an overlay file was given, but this config routes statically (routing.routes): no overlay applies' },
      ],
    };
  }
  if (overlaySettings !== undefined) {
    // The watched file is fixed at start-up (a new path takes a restart, as reported).
    const file = inputs.overlayFile ?? startupConfig?.routing.overlay?.file ?? overlaySettings.file;
    const bytes = await readOverlayFile(file, overlaySettings.max_bytes);
    if (!bytes.ok) return overlayRejected(bytes.reason, bytes.message);
    read.overlay = sha256Hex(bytes.bytes);
    if (
      noop &&
      serving.overlay !== null &&
      !configChanged &&
      !managedChanged &&
      !topologyChanged &&
      read.overlay === serving.overlay.rawSha256
    ) {
      return { outcome: 'unchanged', overlayRead: true };
    }
    const parsed = parseOverlay(bytes.bytes, { expectedScope: overlaySettings.expected_scope });
    if (!parsed.ok) return overlayRejected(parsed.reason, parsed.message);
    const succession = checkSuccession(serving?.overlay?.parsed, parsed.overlay);
    if (!succession.ok) return overlayRejected(succession.reason, succession.message);
    overlay = parsed.overlay;
  }

  // The database's providers, routes and prices joined to the file's, judged whole by the file's schema.
  const joined = joinTopology(config, topologyRead.snapshot, inputs.env);
  if (!joined.ok) return { outcome: 'rejected', issues: joined.issues };
  // The keyring first: it is small, and its issues (a key's secret reference) join the build's.
  const keyringFile = configChanged || servingKeyring === null ? readKeyringFile(config, sourceHash, inputs.env) : null;
  // In slices: a generation of tens of thousands of routes takes a while to build and freeze.
  const built = await buildGenerationInSlices({
    config: joined.config,
    fileConfig: config,
    topology: joined.topology,
    sourceHash,
    number: (serving?.number ?? 0) + 1,
    env: inputs.env,
    overlay,
    poolFor: inputs.poolFor,
    ...(inputs.cloudAuth === undefined ? {} : { cloudAuth: inputs.cloudAuth }),
    modelsFirstSeen: serving?.modelsFirstSeen,
  });
  const keyIssues = keyringFile?.issues ?? [];
  if (!built.ok || keyIssues.length > 0) {
    const issues = [...(built.ok ? [] : built.issues), ...keyIssues];
    return { outcome: 'rejected', issues, ...(overlay !== null ? { acceptedRevision: overlay.revision } : {}) };
  }
  const next = built.generation;
  // Neither the file nor the database changed (an overlay reload): the serving keyring stays, number and all.
  const ring =
    keyringFile === null && !managedChanged && servingKeyring !== null
      ? { keyring: servingKeyring, warnings: [] }
      : assemble(keyringFile?.file ?? fileOf(servingKeyring as Keyring), snapshot, (servingKeyring?.number ?? 0) + 1);
  const warnings = startupConfig === null ? [] : restartOnlyWarnings(startupConfig, next.config);
  warnings.push(...configWarnings.map(formatIssue), ...managed.warnings, ...topologyRead.warnings, ...joined.warnings, ...ring.warnings);
  // Only an overlay candidate carries its own credential (static routes may have tens of
  // thousands of routes and no such problem to look for).
  const overlayRoutes = next.overlay === null ? [] : [...Object.values(next.routes), ...Object.values(next.tools.routes)];
  for (const route of overlayRoutes) {
    for (const c of candidatesOf<RoutableCandidate & { credentialProblem: string | null }>(route))
      if (c.credentialProblem !== null) warnings.push(`${c.credentialProblem}; the candidate fails over until it can be read`);
  }
  for (const u of next.overlay?.unroutable ?? []) {
    warnings.push(
      u.kind === 'mcp_tool'
        ? TOOL_NAME.test(u.model)
          ? `overlay candidate ${u.stable_id} (tool ${u.model}) names cluster "${u.cluster}", which is not a configured MCP server (type: mcp): kept, never selected`
          : `overlay candidate ${u.stable_id} (tool ${JSON.stringify(u.model)}) is not a valid MCP tool name (1-128 of A-Z a-z 0-9 _ - .): kept, never selected`
        : `overlay candidate ${u.stable_id} (model ${u.model}) names cluster "${u.cluster}", which is not a configured provider: kept, never selected`,
    );
  }
  return { outcome: 'built', generation: next, keyring: ring.keyring, warnings };
}

type DatabaseRead<S> =
  | { readonly ok: true; readonly snapshot: S | null; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly issue: ConfigIssue };

/**
 * One part of the database for the next generation (its teams and keys, or its providers,
 * routes and prices). A database that cannot be read keeps the serving one's (`kept`; an
 * overlay or config change still applies); at start-up there is nothing to keep, and the
 * gateway does not start on half its keys or routes.
 */
async function readDatabase<S extends { readonly version: number }>(
  config: GatewayConfig,
  read: ((settings: DatabaseConfig) => Promise<S>) | undefined,
  kept: S | null,
  what: string,
): Promise<DatabaseRead<S>> {
  if (config.database === undefined || read === undefined) return { ok: true, snapshot: null, warnings: [] };
  try {
    return { ok: true, snapshot: await read(config.database), warnings: [] };
  } catch (err) {
    const reason = (err as Error)?.message ?? String(err);
    if (kept === null) return { ok: false, issue: { path: 'database', message: `cannot read the database's ${what}: ${reason}` } };
    return {
      ok: true,
      snapshot: kept,
      warnings: [`the database's ${what} could not be read (${reason}): those of version ${kept.version} are kept`],
    };
  }
}

function overlayRejected(reason: string, message: string): Prepared {
  return {
    outcome: 'rejected',
    overlay: { reason, message },
    issues: [{ path: 'routing.overlay.file', message: `${reason}: ${message}` }],
  };
}

/**
 * Rules that depend on what serves now, not on the config alone (those are in the config
 * schema): the routing mode, and the admin token of a listener fixed at start-up.
 */
function refuseSuccession(serving: Generation | null, startupConfig: GatewayConfig | null, config: GatewayConfig): ConfigIssue | null {
  if (serving !== null && (serving.config.routing.overlay === undefined) !== (config.routing.overlay === undefined)) {
    return {
      path: 'routing',
      message: 'switching between routing.routes and routing.overlay takes a restart; the serving generation is kept',
    };
  }
  // The admin listener is fixed at start-up: while it is reachable from other hosts, a
  // reload may rotate its token but never remove it, even by moving admin_listen to a
  // loopback address (which itself takes a restart). The schema has already required the
  // token for a non-loopback admin_listen in this config.
  const adminListen = startupConfig?.server.admin_listen;
  if (adminTokenRequired(adminListen) && config.server.admin_token === undefined && (config.server.admin_tokens ?? []).length === 0) {
    return {
      path: 'server.admin_token',
      message: `required: the admin listener started on ${adminListen}, not a loopback address, and a reload cannot remove its token`,
    };
  }
  return null;
}

export type KeyringPreparation =
  | { readonly outcome: 'built'; readonly keyring: Keyring; readonly warnings: readonly string[] }
  | { readonly outcome: 'unchanged' }
  | { readonly outcome: 'rejected'; readonly issues: readonly ConfigIssue[] };

/**
 * A database change: the database's teams and keys are read again and joined to the serving
 * keyring's file part, into the next keyring. No file is read and no provider or route is
 * built: the generation serving now stays, number and all. The same version as the serving
 * keyring's is a no-op (another replica's notification of a write this one has applied).
 */
export async function prepareKeyring(
  serving: Keyring,
  config: GatewayConfig,
  managed: ((settings: DatabaseConfig) => Promise<ManagedSnapshot>) | undefined,
): Promise<KeyringPreparation> {
  if (config.database === undefined || managed === undefined) return { outcome: 'unchanged' };
  let snapshot: ManagedSnapshot;
  try {
    snapshot = await managed(config.database);
  } catch (err) {
    const reason = (err as Error)?.message ?? String(err);
    return { outcome: 'rejected', issues: [{ path: 'database', message: `cannot read the database's teams and keys: ${reason}` }] };
  }
  if (snapshot.version === serving.managed?.version) return { outcome: 'unchanged' };
  const { keyring, warnings } = assemble(fileOf(serving), snapshot, serving.number + 1);
  return { outcome: 'built', keyring, warnings };
}
