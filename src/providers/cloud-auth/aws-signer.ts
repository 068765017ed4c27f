import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsKeys } from './aws-client.js';
import type { TokenSource } from './token-source.js';

/** The signing name of the Bedrock Runtime (its endpoints are bedrock-runtime.*, its scope is bedrock). */
const BEDROCK_SERVICE = 'bedrock';

/** The headers a signature covers besides the `x-amz-*` it adds: the rest (tracing, request ids) may change on the way without breaking it. */
const SIGNED = new Set(['content-type']);

/**
 * Signs a bedrock provider's requests with AWS Signature Version 4, over the exact bytes
 * sent and the host and path they are sent to (the base URL's path prefix included, as the
 * pool sends it). The keys come from the provider's source at signing time, so refreshed
 * keys apply from the next request on.
 */
export class AwsSigner {
  readonly #keys: TokenSource<AwsKeys>;
  readonly #signer: SignatureV4;
  readonly #protocol: string;
  readonly #hostname: string;
  readonly #port: number | undefined;
  /** What `host` the pool's requests carry: the host name, with the port when it is not the scheme's default. */
  readonly #host: string;
  readonly #basePath: string;

  constructor(keys: TokenSource<AwsKeys>, region: string, baseUrl: string) {
    this.#keys = keys;
    const url = new URL(baseUrl);
    this.#protocol = url.protocol;
    this.#hostname = url.hostname;
    this.#port = url.port === '' ? undefined : Number(url.port);
    this.#host = url.host;
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.#signer = new SignatureV4({
      service: BEDROCK_SERVICE,
      region,
      credentials: async () => {
        const current = this.#keys.current();
        if (current === null) throw new Error(this.#keys.problem());
        return current;
      },
      sha256: Hash.bind(null, 'sha256'),
      // The path goes as sent (a model id's `:` already as %3A) and is escaped once more for the canonical request, as the AWS SDK signs it.
      uriEscapePath: true,
    });
  }

  /** The source of the keys, for the attempt's check that there are some. */
  get keys(): TokenSource<AwsKeys> {
    return this.#keys;
  }

  /** The headers to add to the call: `authorization`, `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token` with temporary keys. */
  async sign(
    method: string,
    path: string,
    headers: Readonly<Record<string, string>>,
    body: string | Buffer | null,
  ): Promise<Record<string, string>> {
    const q = path.indexOf('?');
    const signed: Record<string, string> = { host: this.#host };
    for (const name of SIGNED) {
      const value = headers[name];
      if (value !== undefined) signed[name] = value;
    }
    const request = await this.#signer.sign({
      method,
      protocol: this.#protocol,
      hostname: this.#hostname,
      ...(this.#port === undefined ? {} : { port: this.#port }),
      path: this.#basePath + (q === -1 ? path : path.slice(0, q)),
      query: q === -1 ? {} : Object.fromEntries(new URLSearchParams(path.slice(q + 1))),
      headers: signed,
      body: body ?? '',
    });
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      const lower = name.toLowerCase();
      if (lower === 'authorization' || lower.startsWith('x-amz-')) out[lower] = value;
    }
    return out;
  }
}
