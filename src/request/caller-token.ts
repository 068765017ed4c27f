import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { audienceAccepted, audienceRefusal, looksLikeJwt, signedInPrincipal, type TokenVerdict } from '../auth/index.js';
import { SwitchyardError } from '../errors.js';
import type { GovernancePolicy, Principal } from '../governance/index.js';
import { presentedKey } from '../governance/index.js';
import type { Exchange } from './exchange.js';
import { sendJson } from './respond.js';
import type { Services } from './services.js';

// A caller who signs in with a JWT. Its token is judged before the endpoint runs (at once
// when it was verified before; otherwise after its signature is checked, the one step of
// authentication that may wait), so that admission, which is synchronous, only reads the
// verdict: the token's principal under the keyring the request captured.

/** Each connection's last token and its verdict: a keep-alive client's requests skip the token's digest. */
const lastTokens = new WeakMap<Socket, { token: string; verdict: TokenVerdict & { ok: true } }>();

/**
 * Judges the JWT the request presents, if it presents one and issuers are configured, and
 * notes the verdict on the exchange. A promise only while a signature is being checked (or
 * a key fetched); never rejects.
 */
export function verifyCallerToken(x: Exchange, svc: Services): void | Promise<void> {
  if (!svc.auth.active) return;
  const presented = presentedKey(x.req.headers);
  if (presented === null || !looksLikeJwt(presented)) return;
  const socket = x.req.socket;
  const last = lastTokens.get(socket);
  const nowMs = Date.now();
  // The same token again on this connection, still unexpired, under the same issuer (a reload may have changed it).
  const token = last?.verdict.token;
  if (
    last !== undefined &&
    last.token === presented &&
    token !== undefined &&
    nowMs < token.expMs &&
    svc.auth.issuer(token.issuer.id) === token.issuer
  ) {
    x.token = last.verdict;
    return;
  }
  const verdict = svc.auth.verify(presented, nowMs);
  if (!(verdict instanceof Promise)) return note(x, socket, presented, verdict);
  return verdict.then((v) => note(x, socket, presented, v));
}

function note(x: Exchange, socket: Socket, token: string, verdict: TokenVerdict): void {
  x.token = verdict;
  if (verdict.ok) lastTokens.set(socket, { token, verdict });
}

/**
 * The signed-in caller's principal under `policy`, or the refusal to throw: 401 for a token
 * that failed (with RFC 6750's `WWW-Authenticate`), 503 while its issuer's keys are missing,
 * 403 when its claims name no team. `resource` is the MCP resource a token for /mcp may name
 * as its audience instead of one of the issuer's.
 */
export function signedInCaller(svc: Services, verdict: TokenVerdict, policy: GovernancePolicy, resource: string | null): Principal {
  if (!verdict.ok) {
    if (verdict.code === 'credential_unavailable')
      throw new SwitchyardError('credential_unavailable', verdict.description, null, { 'retry-after': '5' });
    throw invalidToken(verdict.description, resource);
  }
  const token = verdict.token;
  if (!audienceAccepted(token, resource)) {
    const refused = audienceRefusal(token, resource);
    throw invalidToken(refused.ok ? '' : refused.description, resource);
  }
  const config = svc.auth.config;
  if (config === null) throw invalidToken('the token is from an unknown issuer', resource);
  const signed = signedInPrincipal(token, policy, config);
  if (!signed.ok) throw new SwitchyardError('forbidden', signed.refusal.message);
  return signed.principal;
}

/** 401 with RFC 6750's challenge naming what failed (and, on /mcp, where its protected-resource metadata is). */
export function invalidToken(description: string, resource: string | null): SwitchyardError {
  const metadata = resource === null ? '' : `resource_metadata="${resourceMetadataUrl(resource)}", `;
  return new SwitchyardError('unauthorized', `invalid token: ${description}`, null, {
    'www-authenticate': `Bearer ${metadata}error="invalid_token", error_description="${description}"`,
  });
}

/** 401 for a request with no credential when one is required: the challenge with no error (RFC 6750 section 3.1). */
export function credentialRequired(resource: string | null, keysToo: boolean): SwitchyardError {
  const metadata = resource === null ? '' : ` resource_metadata="${resourceMetadataUrl(resource)}"`;
  return new SwitchyardError(
    'unauthorized',
    keysToo
      ? 'missing credential: send Authorization: Bearer <a token from a trusted issuer, or an API key> (or x-api-key)'
      : 'missing credential: send Authorization: Bearer <a token from a trusted issuer>',
    null,
    { 'www-authenticate': `Bearer${metadata}` },
  );
}

/**
 * This gateway's MCP resource (RFC 9728): `auth.jwt.resource`, or `<scheme>://<Host>/mcp` of
 * the request (https when the connection is TLS); null when no issuer is configured.
 */
export function mcpResource(svc: Services, req: IncomingMessage): string | null {
  const config = svc.auth.config;
  if (config === null) return null;
  if (config.resource !== undefined) return config.resource;
  const host = typeof req.headers.host === 'string' && /^[A-Za-z0-9.:[\]-]{1,300}$/.test(req.headers.host) ? req.headers.host : 'localhost';
  const scheme = (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
  return `${scheme}://${host}/mcp`;
}

/** RFC 9728 section 3.1: the metadata of resource `https://h/mcp` is at `https://h/.well-known/oauth-protected-resource/mcp`. */
export function resourceMetadataUrl(resource: string): string {
  const u = new URL(resource);
  const path = u.pathname === '/' ? '' : u.pathname;
  return `${u.origin}/.well-known/oauth-protected-resource${path}`;
}

/**
 * `GET /.well-known/oauth-protected-resource[/mcp]`: this gateway as an OAuth protected
 * resource (RFC 9728), as the MCP authorization specification expects of an MCP server. The
 * issuers are its authorization servers, in config order (clients ask the first). 404 when
 * no issuer is configured, or for a resource path the gateway does not serve.
 */
export function protectedResource(x: Exchange, svc: Services, rest: string | null = null): void {
  const config = svc.auth.config;
  const resource = mcpResource(svc, x.req);
  if (config === null || resource === null) throw new SwitchyardError('not_found', 'no token issuers are configured (auth.jwt)');
  if (rest !== null && `/${rest}` !== new URL(resource).pathname)
    throw new SwitchyardError('not_found', `no protected resource at /${rest} (this gateway's is ${resource})`);
  const scopes = new Set<string>();
  for (const i of config.issuers) {
    for (const s of Object.keys(i.scopes?.models ?? {})) scopes.add(s);
    for (const s of Object.keys(i.scopes?.tools ?? {})) scopes.add(s);
  }
  sendJson(x.res, 200, {
    resource,
    authorization_servers: config.issuers.map((i) => i.issuer),
    bearer_methods_supported: ['header'],
    ...(scopes.size === 0 ? {} : { scopes_supported: [...scopes] }),
    resource_name: 'Switchyard MCP gateway',
  });
}
