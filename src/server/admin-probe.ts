import { type ConfigIssue, checkProvider, describeSecretRef, type ProviderConfig, resolveSecret } from '../config/index.js';
import { SwitchyardError } from '../errors.js';
import type { Generation } from '../live/index.js';
import { readTlsFiles } from '../live/index.js';
import { fieldsError } from '../managed/index.js';
import { AddressList, Credential, probeProvider } from '../providers/index.js';
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
  // Entra ID, AWS and Google Cloud credentials come from token sources the gateway keeps per
  // provider off the request path: a draft has none, and the probe does not fetch one.
  if ('auth' in config && config.auth !== undefined)
    throw new SwitchyardError(
      'invalid_request',
      'the probe does not support auth: {type: entra}; probe with api_key, or without a key',
      'auth',
    );
  const ref = 'api_key' in config ? config.api_key : undefined;
  if (ref === undefined) return null;
  const resolved = resolveSecret(ref, env);
  if (!resolved.ok) {
    issues.push({ path: 'api_key', message: resolved.message });
    return null;
  }
  return new Credential(resolved.value, describeSecretRef(ref));
}

/** `server.admin_probe_allow` of the serving generation, compiled once per list. */
let compiled: { readonly list: readonly string[]; readonly allow: AddressList } | null = null;

function allowList(gen: Generation): AddressList {
  const list = gen.config.server.admin_probe_allow;
  if (compiled === null || compiled.list !== list) compiled = { list, allow: new AddressList(list, 'server.admin_probe_allow entry') };
  return compiled.allow;
}
