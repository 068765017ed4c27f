import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Client } from 'undici';
import { SwitchyardError } from '../errors.js';
import type { AdapterConfig, CallCredential } from './adapter.js';
import { type AddressClass, type AddressList, addressClass, bareAddress } from './addresses.js';
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
}

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
export function judgeAddress(shown: string, address: string, allow: AddressList): void {
  const kind = addressClass(address);
  if (kind === 'public') return;
  const at = bareAddress(shown) === address ? `the host ${shown} is` : `the host ${shown} resolves to ${address},`;
  if (kind === 'metadata' || kind === 'link_local')
    throw new SwitchyardError('probe_address_not_allowed', `${at} ${CLASS_WORDS[kind]}: never probed`, 'base_url');
  if (!allow.has(address))
    throw new SwitchyardError(
      'probe_address_not_allowed',
      `${at} ${CLASS_WORDS[kind]}, which server.admin_probe_allow does not list`,
      'base_url',
    );
}

/**
 * Probes a draft provider. Throws `invalid_request` (param `type`) for a type the probe does
 * not support and `probe_address_not_allowed` for a host it may not reach, both before
 * anything is sent; any failure past that is an answer with `reachable: false`.
 */
export async function probeProvider(target: ProbeTarget, allow: AddressList, resolve: Resolve = resolveAll): Promise<ProbeAnswer> {
  const adapter = adapterOf(target.config.type);
  const call = adapter.probe(target.config);
  if (call === null) throw new SwitchyardError('invalid_request', `the probe does not support type ${target.config.type}`, 'type');
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

  const host = bareAddress(base.hostname);
  let address: LookupAddress;
  if (isIP(host) !== 0) address = { address: host, family: isIP(host) };
  else {
    try {
      const found = await resolve(host);
      if (found[0] === undefined) return unreached(`the host ${base.hostname} does not resolve`);
      address = found[0];
    } catch (err) {
      return unreached(`the host ${base.hostname} does not resolve (${(err as { code?: string }).code ?? 'lookup failed'})`);
    }
  }
  judgeAddress(base.hostname, address.address, allow);

  const headers: Record<string, string> = { ...target.headers, ...call.headers };
  adapter.wire(target.config, { bearer: null, signer: null }).authenticate(headers, target.credential, {});
  const client = new Client(base.origin, {
    connectTimeout: target.connectTimeoutMs,
    // One call, then the connection goes: nothing of the probe lingers in a pool.
    pipelining: 0,
    connect: {
      // The name's judged address, whatever the resolver says now (the name stays the Host and the TLS server name).
      lookup: ((_name, options, callback) =>
        options.all === true
          ? (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, [address])
          : callback(null, address.address, address.family)) as LookupFunction,
      ...(target.tls?.ca === undefined ? {} : { ca: target.tls.ca }),
      ...(target.tls?.cert === undefined ? {} : { cert: target.tls.cert, key: target.tls.key }),
      ...(target.tls?.serverName === undefined ? {} : { servername: target.tls.serverName }),
    },
  });
  const signal = AbortSignal.timeout(target.connectTimeoutMs + target.answerTimeoutMs);
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
