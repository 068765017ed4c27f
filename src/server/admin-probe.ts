import { type ConfigIssue, checkProvider, describeSecretRef, type ProviderConfig, resolveSecret } from '../config/index.js';
import { SwitchyardError } from '../errors.js';
import type { Generation } from '../live/index.js';
import { awsSpec, entraSpec, gcpSpec, readTlsFiles } from '../live/index.js';
import { fieldsError } from '../managed/index.js';
import { AddressList, Credential, type ProbeCloudAuth, probeProvider } from '../providers/index.js';
import { readBody } from '../request/index.js';
import type { V1Context, V1Request } from './admin-caller.js';
import { jsonBody, MAX_BODY_BYTES, send } from './admin-http.js';

// POST /admin/v1/providers/test: a draft provider, the body of a provider's creation (its
// fields as under `providers.<name>`, its name in `id`), judged by the config file's schema,
// its references resolved in the gateway's environment, then probed (providers/'s probe)
// without being saved. Only an admin token may: a probe makes the gateway send a request
// where the caller says, with a secret the gateway holds.

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The longest a probe waits for an answer, whatever the draft's own (longer) timeouts say. */
const MAX_ANSWER_MS = 10_000;

export async function serveProviderProbe(ctx: V1Context, a: V1Request, method: string): Promise<void> {
  if (method !== 'POST') throw new SwitchyardError('method_not_allowed', 'this admin endpoint takes POST', null, { allow: 'POST' });
  if (a.caller.role !== 'admin') {
    // Read (bounded) and dropped, so the connection stays usable for the caller's next request.
    await readBody(a.req, MAX_BODY_BYTES).catch(() => undefined);
    throw new SwitchyardError(
      'forbidden',
      `admin token "${a.caller.id}" (role ${a.caller.role}) may not probe providers: that takes an admin token`,
    );
  }
  const body = await jsonBody(a.req);
  // `metadata`, which a saved provider may carry, means nothing to a probe: checked, then dropped.
  const { id, metadata, ...spec } = body;
  const issues: ConfigIssue[] = [];
  if (id !== undefined && (typeof id !== 'string' || !NAME.test(id)))
    issues.push({ path: 'id', message: 'provider names are 1-64 of A-Z a-z 0-9 _ . -' });
  if (metadata !== undefined && (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)))
    issues.push({ path: 'metadata', message: 'must be an object' });
  const checked = checkProvider(spec);
  if (!checked.ok) issues.push(...checked.issues);
  if (issues.length > 0 || !checked.ok) throw fieldsError(issues);
  const config = checked.value;

  const credential = credentialOf(config, ctx.env, issues);
  const cloud = cloudAuthOf(config, ctx.env, issues);
  // As the generation's build judges a saved provider's: a tls block on an http address is a mistake, not a no-op.
  if (config.tls !== undefined && config.base_url?.startsWith('https:') !== true)
    issues.push({ path: 'tls', message: 'applies to an https base_url only' });
  const tls = config.tls === undefined || issues.length > 0 ? undefined : readTlsFiles('tls', config.tls, issues);
  if (issues.length > 0) throw fieldsError(issues);
  // Every probe is logged with who asked and where to: a refused address is how a forgery attempt shows.
  const seen = { msg: 'provider probe', caller: a.caller.id, type: config.type, host: hostOf(config) };
  const answer = await probeProvider(
    {
      config,
      credential,
      headers: config.headers,
      models: 'models' in config && config.models !== undefined ? Object.values(config.models) : [],
      ...(cloud === undefined ? {} : { cloud }),
      ...(tls === undefined ? {} : { tls }),
      connectTimeoutMs: config.connect_timeout_ms,
      answerTimeoutMs: Math.min(
        ('request_timeout_ms' in config ? config.request_timeout_ms : undefined) ?? config.timeout_ms,
        MAX_ANSWER_MS,
      ),
    },
    allowList(ctx.svc.holder.current()),
  ).catch((err: unknown) => {
    if (err instanceof SwitchyardError) ctx.svc.logger.warn({ ...seen, refused: err.code, reason: err.message });
    throw err;
  });
  ctx.svc.logger.info({ ...seen, reachable: answer.reachable, tls: answer.tls, auth: answer.auth });
  send(a.res, 200, answer);
}

/** The draft's host (a type with a default address has none in its config). */
function hostOf(config: ProviderConfig): string | null {
  return config.base_url === undefined ? null : new URL(config.base_url).host;
}

/** The draft's key, resolved now; a reference that does not resolve is the caller's to fix, named by its path. */
function credentialOf(config: ProviderConfig, env: NodeJS.ProcessEnv, issues: ConfigIssue[]): Credential | null {
  const ref = 'api_key' in config ? config.api_key : undefined;
  if (ref === undefined) return null;
  const resolved = resolveSecret(ref, env);
  if (!resolved.ok) {
    issues.push({ path: 'api_key', message: resolved.message });
    return null;
  }
  return new Credential(resolved.value, describeSecretRef(ref));
}

/** The name a draft's cloud credentials are resolved under; the issues are renamed to the draft's own paths. */
const DRAFT = 'draft';

/**
 * The draft's Entra ID, Google Cloud or AWS credentials, resolved as the build resolves a
 * saved provider's (its block's presence is the whole question, as there); a reference that
 * does not resolve, or a key file that does not read, is an issue at the draft's path.
 */
function cloudAuthOf(config: ProviderConfig, env: NodeJS.ProcessEnv, issues: ConfigIssue[]): ProbeCloudAuth | undefined {
  const found: ConfigIssue[] = [];
  let cloud: ProbeCloudAuth | undefined;
  if ('auth' in config && config.auth !== undefined) {
    const spec = entraSpec(DRAFT, config.auth, env, found);
    if (spec !== null) cloud = { kind: 'entra', spec };
  } else if ('gcp' in config) {
    const spec = gcpSpec(DRAFT, config.gcp, found);
    if (spec !== null) cloud = { kind: 'gcp', spec };
  } else if ('aws' in config) {
    // Refused before the environment is read: the probe does not go to STS, whether or not IRSA is set up here.
    if (config.aws.web_identity === true)
      throw new SwitchyardError(
        'invalid_request',
        'the probe does not exchange a web identity at STS; probe with access_key_id and secret_access_key',
        'aws',
      );
    const spec = awsSpec(DRAFT, config.region, config.aws, env, found);
    if (spec !== null) cloud = { kind: 'aws', spec, region: config.region };
  }
  for (const issue of found) issues.push({ ...issue, path: issue.path.replace(`providers.${DRAFT}.`, '') });
  return cloud;
}

/** `server.admin_probe_allow` of the serving generation, compiled once per list. */
let compiled: { readonly list: readonly string[]; readonly allow: AddressList } | null = null;

function allowList(gen: Generation): AddressList {
  const list = gen.config.server.admin_probe_allow;
  if (compiled === null || compiled.list !== list) compiled = { list, allow: new AddressList(list, 'server.admin_probe_allow entry') };
  return compiled.allow;
}
