import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, Client, fetch as undiciFetch } from 'undici';
import { SwitchyardError } from '../errors.js';
import type { AdapterConfig, CallCredential } from './adapter.js';
import { type AddressClass, type AddressList, addressClass, bareAddress } from './addresses.js';
import {
  AwsSigner,
  type AwsSpec,
  awsKeySource,
  BearerTokenSource,
  type EntraSpec,
  fetchEntraToken,
  type GcpSpec,
  probeGcpToken,
} from './cloud-auth/index.js';
import type { PoolTls } from './provider-pool.js';
import { adapterOf } from './registry.js';

// The probe of a draft provider (POST /admin/v1/providers/test): one cheap call, made as the
// provider's calls would be, that tells whether its host answers, over which TLS, whether it
// takes the credential and which models it lists. The caller names the host, so the probe is
// a request forgery vector into the gateway's own network: the host is resolved once, judged
// by that address, and the connection is pinned to it, so a name that answers differently the
// second time (DNS rebinding) reaches nothing the judgement did not allow.

/** What the probe sends to: a draft provider, its references already resolved. */
export interface ProbeTarget {
  readonly config: AdapterConfig;
  readonly credential: CallCredential;
  /** `providers.<name>.headers` (non-secret), sent before the type's own and its authentication. */
  readonly headers: Readonly<Record<string, string>>;
  readonly tls?: PoolTls;
  readonly connectTimeoutMs: number;
  /** Time to the answer's headers, and to the end of its body. */
  readonly answerTimeoutMs: number;
  /** The upstream names of the draft's `models` map, for a type whose probe calls a model. */
  readonly models?: readonly string[];
  /** The draft's cloud credentials (its `auth`, `gcp` or `aws` block), resolved as the build resolves a saved provider's. */
  readonly cloud?: ProbeCloudAuth;
}

/** How a draft authenticates when it is not with a key: a token fetched now, or keys its calls are signed with. */
export type ProbeCloudAuth =
  | { readonly kind: 'entra'; readonly spec: EntraSpec }
  | { readonly kind: 'gcp'; readonly spec: GcpSpec }
  | { readonly kind: 'aws'; readonly spec: AwsSpec; readonly region: string };

/** Where google-auth-library posts a service account's grant when `gcp.token_url` names no other. */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** The answer of the endpoint, exactly these keys (and `error` when something failed). */
export interface ProbeAnswer {
  readonly reachable: boolean;
  /** `verified` (https, certificate checked), `none` (http), `failed: <reason>`, or `not reached` (https, no connection). */
  readonly tls: string;
  readonly auth: 'accepted' | 'refused' | null;
  readonly latency_ms: number;
  readonly models: readonly string[];
  readonly error?: string;
}

export type Resolve = (host: string) => Promise<readonly LookupAddress[]>;

const resolveAll: Resolve = (host) => dnsLookup(host, { all: true });

/** A model list past this is not read to its end; the probe is not a download. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

const CLASS_WORDS: Readonly<Record<Exclude<AddressClass, 'public'>, string>> = {
  metadata: 'a cloud metadata address',
  link_local: 'a link-local address',
  loopback: 'a loopback address',
  private: 'a private address',
  shared: 'a shared (carrier-grade NAT) address',
  unspecified: 'an unspecified address',
  reserved: 'a reserved, non-public address',
};

/**
 * The address a host may be probed at, or a refusal (`probe_address_not_allowed`, nothing
 * sent): link-local and metadata addresses always; any other non-public one unless `allow`
 * lists it. `shown` is how the host is named in the refusal.
 */
export function judgeAddress(shown: string, address: string, allow: AddressList, param = 'base_url'): void {
  const kind = addressClass(address);
  if (kind === 'public') return;
  const at = bareAddress(shown) === address ? `the host ${shown} is` : `the host ${shown} resolves to ${address},`;
  if (kind === 'metadata' || kind === 'link_local')
    throw new SwitchyardError('probe_address_not_allowed', `${at} ${CLASS_WORDS[kind]}: never probed`, param);
  if (!allow.has(address))
    throw new SwitchyardError(
      'probe_address_not_allowed',
      `${at} ${CLASS_WORDS[kind]}, which server.admin_probe_allow does not list`,
      param,
    );
}

/**
 * Probes a draft provider. Throws `invalid_request` (param `type`) for a type the probe does
 * not support (or a credential kind it does not fetch) and `probe_address_not_allowed` for a
 * host it may not reach, both before anything is sent; any failure past that is an answer
 * with `reachable: false`. A draft with cloud credentials has a token fetched first, from a
 * token endpoint judged and pinned like the provider's host (its address is the caller's too:
 * `auth.authority_host`, `gcp.token_url`), or its keys bound into a SigV4 signer.
 */
export async function probeProvider(target: ProbeTarget, allow: AddressList, resolve: Resolve = resolveAll): Promise<ProbeAnswer> {
  const adapter = adapterOf(target.config.type);
  const call = adapter.probe(target.config, target.models ?? []);
  if (call === null) throw new SwitchyardError('invalid_request', `the probe does not support type ${target.config.type}`, 'type');
  const cloud = target.cloud;
  if (cloud?.kind === 'aws' && cloud.spec.kind === 'web_identity')
    throw new SwitchyardError(
      'invalid_request',
      'the probe does not exchange a web identity at STS; probe with access_key_id and secret_access_key',
      'aws',
    );
  if (cloud?.kind === 'gcp' && cloud.spec.kind === 'metadata_server')
    throw new SwitchyardError(
      'invalid_request',
      'the probe does not ask a metadata server for a token (a metadata address is never probed); probe with service_account',
      'gcp',
    );
  const base = new URL(target.config.base_url ?? adapter.defaultBaseUrl(target.config) ?? '');
  const https = base.protocol === 'https:';
  const started = performance.now();
  const unreached = (error: string): ProbeAnswer => ({
    reachable: false,
    tls: https ? 'not reached' : 'none',
    auth: null,
    latency_ms: elapsedMs(started),
    models: [],
    error,
  });

  const pinned = await resolveOnce(base.hostname, resolve);
  if (typeof pinned === 'string') return unreached(pinned);
  judgeAddress(base.hostname, pinned.address, allow);
  const address = pinned;
  // The token endpoint is judged before anything is sent, to it or to the provider.
  const tokenAt =
    cloud?.kind === 'entra'
      ? { url: new URL(cloud.spec.authorityHost), param: 'auth.authority_host' }
      : cloud?.kind === 'gcp' && cloud.spec.kind === 'service_account'
        ? { url: new URL(cloud.spec.tokenUrl ?? GOOGLE_TOKEN_URL), param: 'gcp.token_url' }
        : null;
  let tokenAddress: LookupAddress | null = null;
  if (tokenAt !== null) {
    const found = await resolveOnce(tokenAt.url.hostname, resolve);
    if (typeof found === 'string') return unreached(`no token could be had: the token endpoint's ${found.replace(/^the /, '')}`);
    judgeAddress(tokenAt.url.hostname, found.address, allow, tokenAt.param);
    tokenAddress = found;
  }

  const signal = AbortSignal.timeout(target.connectTimeoutMs + target.answerTimeoutMs);
  let bearer: BearerTokenSource | null = null;
  let signer: AwsSigner | null = null;
  if (tokenAt !== null && tokenAddress !== null && cloud !== undefined && cloud.kind !== 'aws') {
    const agent = new Agent({ connect: { lookup: pinnedLookup(tokenAddress), timeout: target.connectTimeoutMs }, pipelining: 0 });
    try {
      const got = await fetchToken(cloud, tokenAt.url, agent, signal);
      if (!got.ok)
        return {
          ...unreached(`no ${got.what} could be had: ${signal.aborted ? 'the probe took too long' : got.message}`),
          auth: got.refused === true ? 'refused' : null,
        };
      const token = got.token;
      bearer = new BearerTokenSource(
        { provider: 'probe', what: got.what, source: 'probe' },
        () => undefined,
        async () => ({
          ok: true,
          value: token,
          lifetimeS: null,
        }),
      );
      await bearer.start();
    } finally {
      void agent.destroy().catch(() => undefined);
    }
  }
  if (cloud?.kind === 'aws') {
    // Access keys from the config: a value, fetched from nowhere.
    const keys = awsKeySource(cloud.spec, () => undefined);
    await keys.start();
    signer = new AwsSigner(keys, cloud.region, base.href);
  }

  const headers: Record<string, string> = { ...target.headers, ...call.headers };
  const wire = adapter.wire(target.config, { bearer, signer });
  wire.authenticate(headers, bearer ?? target.credential, {});
  if (wire.sign !== null) Object.assign(headers, wire.sign(call.method, call.path, headers, call.body));
  bearer?.stop();
  signer?.keys.stop();
  const client = new Client(base.origin, {
    connectTimeout: target.connectTimeoutMs,
    // One call, then the connection goes: nothing of the probe lingers in a pool.
    pipelining: 0,
    connect: {
      // The name's judged address, whatever the resolver says now (the name stays the Host and the TLS server name).
      lookup: pinnedLookup(address),
      ...(target.tls?.ca === undefined ? {} : { ca: target.tls.ca }),
      ...(target.tls?.cert === undefined ? {} : { cert: target.tls.cert, key: target.tls.key }),
      ...(target.tls?.serverName === undefined ? {} : { servername: target.tls.serverName }),
    },
  });
  try {
    const answer = await client.request({
      method: call.method,
      path: base.pathname.replace(/\/+$/, '') + call.path,
      headers,
      body: call.body,
      headersTimeout: target.answerTimeoutMs,
      bodyTimeout: target.answerTimeoutMs,
      signal,
    });
    const latency = elapsedMs(started);
    const body = await boundedJson(answer.body, String(answer.headers['content-type'] ?? ''));
    const ok = answer.statusCode >= 200 && answer.statusCode < 300;
    const refused = (call.refused ?? refusedByStatus)(answer.statusCode, body);
    return {
      reachable: true,
      tls: https ? 'verified' : 'none',
      auth: ok ? 'accepted' : refused ? 'refused' : null,
      latency_ms: latency,
      models: ok ? call.models(body) : [],
      ...(ok || refused ? {} : { error: `the upstream answered HTTP ${answer.statusCode}` }),
    };
  } catch (err) {
    const code = failureCode(err);
    if (https && isTlsFailure(code)) return { ...unreached(`TLS failed (${code})`), tls: `failed: ${code}` };
    if (signal.aborted || /TIMEOUT/.test(code)) return unreached(`timed out (${signal.aborted ? 'the probe took too long' : code})`);
    return unreached(`could not reach the host (${code})`);
  } finally {
    void client.destroy().catch(() => undefined);
  }
}

/** The host's one address (an IP literal is its own), or why it has none. */
async function resolveOnce(hostname: string, resolve: Resolve): Promise<LookupAddress | string> {
  const host = bareAddress(hostname);
  if (isIP(host) !== 0) return { address: host, family: isIP(host) };
  try {
    const found = await resolve(host);
    return found[0] ?? `the host ${hostname} does not resolve`;
  } catch (err) {
    return `the host ${hostname} does not resolve (${(err as { code?: string }).code ?? 'lookup failed'})`;
  }
}

/** A connection's lookup that answers the judged address, whatever the name. */
function pinnedLookup(address: LookupAddress): LookupFunction {
  return ((_name, options, callback) =>
    options.all === true
      ? (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, [address])
      : callback(null, address.address, address.family)) as LookupFunction;
}

type GotToken =
  | { readonly ok: true; readonly what: string; readonly token: string }
  | { readonly ok: false; readonly what: string; readonly message: string; readonly refused?: boolean };

/** One token from the draft's token endpoint, over `agent` (pinned to its judged address). */
async function fetchToken(cloud: Exclude<ProbeCloudAuth, { kind: 'aws' }>, url: URL, agent: Agent, signal: AbortSignal): Promise<GotToken> {
  if (cloud.kind === 'entra') {
    const what = 'Entra ID token';
    const r = await fetchEntraToken(cloud.spec, signal, agent);
    return r.ok ? { ok: true, what, token: r.token } : { ok: false, what, message: r.message, ...(r.refused ? { refused: true } : {}) };
  }
  const what = 'Google Cloud token';
  if (cloud.spec.kind !== 'service_account') return { ok: false, what, message: 'no service account' };
  // Every request google-auth-library makes goes to the judged origin over the pinned agent, or nowhere.
  const pinnedFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const to = new URL(input instanceof Request ? input.url : String(input));
    if (to.origin !== url.origin) throw new Error(`the probe sends the grant only to ${url.origin}`);
    const own = init?.signal ?? null;
    return undiciFetch(to, {
      ...(init as object),
      dispatcher: agent,
      redirect: 'manual',
      signal: own === null ? signal : AbortSignal.any([own, signal]),
    } as Parameters<typeof undiciFetch>[1]);
  }) as unknown as typeof fetch;
  const r = await probeGcpToken(cloud.spec, pinnedFetch);
  return r.ok ? { ok: true, what, token: r.value } : { ok: false, what, message: r.message, ...(r.refused ? { refused: true } : {}) };
}

const refusedByStatus = (status: number): boolean => status === 401 || status === 403;

function elapsedMs(started: number): number {
  return Math.round(performance.now() - started);
}

/** The body as JSON when it is JSON and not too large; null otherwise (an event stream, HTML, a huge list). */
async function boundedJson(body: AsyncIterable<Buffer> & { destroy(): unknown }, contentType: string): Promise<unknown> {
  if (!/\bjson\b/i.test(contentType)) {
    body.destroy();
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return null;
  }
}

function failureCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  return typeof cause === 'string' ? cause : ((err as Error | null)?.name ?? 'error');
}

/** OpenSSL's certificate verdicts and Node's TLS errors: the handshake, not the network, failed. */
function isTlsFailure(code: string): boolean {
  return /^(ERR_TLS_|ERR_SSL_|EPROTO$)|CERT|_SIGNATURE$|SELF_SIGNED/.test(code);
}
