import { fromTokenFile } from '@aws-sdk/credential-provider-web-identity';
import type { Credential } from '../credential.js';
import { type Fetched, type TokenEvent, TokenSource } from './token-source.js';

/** The keys a request is signed with (the AWS SDK's AwsCredentialIdentity, without its extras). */
export interface AwsKeys {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** What a bedrock provider signs with, resolved when the generation is built. */
export type AwsSpec =
  | {
      readonly providerName: string;
      readonly kind: 'keys';
      readonly accessKeyId: Credential;
      readonly secretAccessKey: Credential;
      readonly sessionToken: Credential | null;
    }
  | {
      readonly providerName: string;
      readonly kind: 'web_identity';
      readonly region: string;
      /** AWS_ROLE_ARN. */
      readonly roleArn: string;
      /** AWS_WEB_IDENTITY_TOKEN_FILE, read anew at every exchange (the kubelet rotates it). */
      readonly tokenFile: string;
      /** AWS_ROLE_SESSION_NAME, else one naming the gateway and the provider. */
      readonly sessionName: string;
      /** `aws.sts_endpoint`; null = the region's STS. */
      readonly stsEndpoint: string | null;
    };

/**
 * A bedrock provider's keys. Access keys from the config are a value that never expires
 * (a reload re-reads their references, and a changed key is a new source); a web identity
 * is exchanged at STS (AssumeRoleWithWebIdentity, with the AWS SDK's own provider) for keys
 * that live an hour, refreshed ahead of expiry like every other cloud token.
 */
export function awsKeySource(spec: AwsSpec, onEvent: (e: TokenEvent) => void): TokenSource<AwsKeys> {
  if (spec.kind === 'keys') {
    const keys: AwsKeys = {
      accessKeyId: spec.accessKeyId.apiKey(),
      secretAccessKey: spec.secretAccessKey.apiKey(),
      ...(spec.sessionToken === null ? {} : { sessionToken: spec.sessionToken.apiKey() }),
    };
    const label = { provider: spec.providerName, what: 'AWS credentials', source: `aws:access_key_id ${spec.accessKeyId.source}` };
    return new TokenSource<AwsKeys>(label, onEvent, async () => ({ ok: true, value: keys, lifetimeS: null }));
  }
  const provider = fromTokenFile({
    webIdentityTokenFile: spec.tokenFile,
    roleArn: spec.roleArn,
    roleSessionName: spec.sessionName,
    clientConfig: { region: spec.region, ...(spec.stsEndpoint === null ? {} : { endpoint: spec.stsEndpoint }), maxAttempts: 1 },
  });
  const label = { provider: spec.providerName, what: 'AWS credentials', source: `aws:web_identity ${spec.roleArn}` };
  return new TokenSource<AwsKeys>(label, onEvent, async (): Promise<Fetched<AwsKeys>> => {
    try {
      const c = await provider();
      const lifetimeS = c.expiration === undefined ? null : Math.max(1, (c.expiration.getTime() - Date.now()) / 1000);
      const value: AwsKeys = {
        accessKeyId: c.accessKeyId,
        secretAccessKey: c.secretAccessKey,
        ...(c.sessionToken === undefined ? {} : { sessionToken: c.sessionToken }),
      };
      return { ok: true, value, lifetimeS };
    } catch (err) {
      return { ok: false, message: stsFailure(err) };
    }
  });
}

/** STS's error code and status, or the network error's code; never the web identity token or a key. */
function stsFailure(err: unknown): string {
  const e = err as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: unknown } };
  const status = e.$metadata?.httpStatusCode;
  const name = typeof e.name === 'string' && /^[A-Za-z]{1,64}$/.test(e.name) ? e.name : 'error';
  if (typeof status === 'number') return `STS AssumeRoleWithWebIdentity answered ${status} (${name})`;
  const code = typeof e.code === 'string' && /^[A-Z_]{1,32}$/.test(e.code) ? e.code : name;
  return `STS AssumeRoleWithWebIdentity failed (${code})`;
}
