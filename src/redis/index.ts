/**
 * redis/: how every Redis connection of the gateway is addressed (the governance store, the
 * response cache, the responses store, the A2A task owners, the replicas' heartbeats): the
 * URL without its credentials, and the credentials and TLS as ioredis options. ioredis lets a
 * user or password in the URL win over its options, so they are taken out of it and the
 * explicit ones (a secret reference, resolved) come first. Each store sets its own timeouts,
 * queueing and retries beside these.
 *
 * Boundary: imports no other folder.
 */

import type { RedisOptions } from 'ioredis';

export interface RedisAddress {
  /** `redis://` or `rediss://`, possibly with a user and password in it. */
  readonly url: string;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** File contents, already read: a private CA, a client certificate and key, the name to verify. */
  readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly serverName?: string } | undefined;
}

/** The URL to connect to (no credentials in it) and the options that carry them. */
export function redisConnection(address: RedisAddress): { readonly href: string; readonly options: RedisOptions } {
  const url = new URL(address.url);
  const username = address.username ?? (url.username === '' ? undefined : decodeURIComponent(url.username));
  const password = address.password ?? (url.password === '' ? undefined : decodeURIComponent(url.password));
  url.username = '';
  url.password = '';
  const tls = address.tls;
  const options: RedisOptions = {
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    ...(tls === undefined
      ? {}
      : {
          tls: {
            ...(tls.ca === undefined ? {} : { ca: tls.ca }),
            ...(tls.cert === undefined ? {} : { cert: tls.cert }),
            ...(tls.key === undefined ? {} : { key: tls.key }),
            ...(tls.serverName === undefined ? {} : { servername: tls.serverName }),
          },
        }),
  };
  return { href: url.href, options };
}
