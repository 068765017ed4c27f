import { createHash } from 'node:crypto';
import { type AwsKeys, type AwsSpec, awsKeySource } from './aws-client.js';
import type { EntraSpec } from './entra-client.js';
import { type GcpSpec, gcpTokenSource } from './gcp-client.js';
import { type BearerTokenSource, EntraTokenSource, type TokenEvent, type TokenSource } from './token-source.js';

/** What a provider authenticates with, and so which source it needs. */
export type CloudAuthSpec =
  | { readonly kind: 'entra'; readonly spec: EntraSpec }
  | { readonly kind: 'gcp'; readonly spec: GcpSpec }
  | { readonly kind: 'aws'; readonly spec: AwsSpec };

/** The sources a provider of each spec is given. */
export interface CloudAuthSources {
  entra(spec: EntraSpec): BearerTokenSource;
  gcp(spec: GcpSpec): BearerTokenSource;
  aws(spec: AwsSpec): TokenSource<AwsKeys>;
}

/**
 * The stateful owner of cloud credential sources, built once by server/ (as PoolRegistry
 * owns pools). A provider whose auth is unchanged across a reload keeps its source and the
 * token in hand, so a reload never leaves a request without one; `retain` after a swap stops
 * the rest.
 */
export class TokenSourceRegistry implements CloudAuthSources {
  readonly #sources = new Map<string, TokenSource<unknown>>();
  readonly #onEvent: (e: TokenEvent) => void;

  constructor(onEvent: (e: TokenEvent) => void = () => {}) {
    this.#onEvent = onEvent;
  }

  entra(spec: EntraSpec): BearerTokenSource {
    return this.#acquire(entraKey(spec), () => new EntraTokenSource(spec, this.#onEvent));
  }

  gcp(spec: GcpSpec): BearerTokenSource {
    return this.#acquire(gcpKey(spec), () => gcpTokenSource(spec, this.#onEvent));
  }

  aws(spec: AwsSpec): TokenSource<AwsKeys> {
    return this.#acquire(awsKey(spec), () => awsKeySource(spec, this.#onEvent));
  }

  /** The source for this key, started (its first fetch under way) if new. */
  #acquire<S extends TokenSource<unknown>>(key: string, make: () => S): S {
    let source = this.#sources.get(key) as S | undefined;
    if (source === undefined) {
      source = make();
      this.#sources.set(key, source);
      void source.start();
    }
    return source;
  }

  /** Settles when every source's first fetch has (a start waits for tokens before it listens). */
  async settled(): Promise<void> {
    await Promise.all([...this.#sources.values()].map((s) => s.start()));
  }

  retain(inUse: Iterable<TokenSource<unknown>>): void {
    const keep = new Set(inUse);
    for (const [key, source] of this.#sources) {
      if (keep.has(source)) continue;
      source.stop();
      this.#sources.delete(key);
    }
  }

  stopAll(): void {
    this.retain([]);
  }

  get size(): number {
    return this.#sources.size;
  }
}

/** Sources that never fetch: validation and tests that build generations without a server. */
export const IDLE_SOURCES: CloudAuthSources = {
  entra: (spec) => new EntraTokenSource(spec, () => {}),
  gcp: (spec) => gcpTokenSource(spec, () => {}),
  aws: (spec) => awsKeySource(spec, () => {}),
};

// A secret enters a key as a digest: a rotated secret makes a new source, and no secret is kept in the map.
function digest(secret: { apiKey(): string } | null): string | null {
  return secret === null ? null : createHash('sha256').update(secret.apiKey()).digest('hex');
}

function entraKey(spec: EntraSpec): string {
  return JSON.stringify([
    'entra',
    spec.providerName,
    spec.authorityHost,
    spec.tenantId,
    spec.clientId,
    digest(spec.clientSecret),
    spec.assertionFile,
  ]);
}

function gcpKey(spec: GcpSpec): string {
  if (spec.kind === 'metadata_server') return JSON.stringify(['gcp', spec.providerName, spec.kind]);
  return JSON.stringify(['gcp', spec.providerName, spec.kind, spec.clientEmail, digest(spec.privateKey), spec.tokenUrl]);
}

function awsKey(spec: AwsSpec): string {
  if (spec.kind === 'web_identity')
    return JSON.stringify([
      'aws',
      spec.providerName,
      spec.kind,
      spec.region,
      spec.roleArn,
      spec.tokenFile,
      spec.sessionName,
      spec.stsEndpoint,
    ]);
  return JSON.stringify([
    'aws',
    spec.providerName,
    spec.kind,
    digest(spec.accessKeyId),
    digest(spec.secretAccessKey),
    digest(spec.sessionToken),
  ]);
}
