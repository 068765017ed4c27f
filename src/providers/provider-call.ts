import type { CallCredential, ClientRequestHeaders, Operation, ProviderWire } from './adapter.js';
import type { ProviderProtocol } from './canonical/index.js';

/**
 * The headers of an upstream call, asking for the answer uncompressed, with the provider's
 * configured extra headers, then its type's own and its authentication (the wire's). No
 * other client header is forwarded.
 */
export function providerHeaders(
  p: { readonly wire: ProviderWire },
  credential: CallCredential,
  extra: Readonly<Record<string, string>>,
  accept: string,
  requestId: string,
  client: ClientRequestHeaders,
): Record<string, string> {
  // identity: the relay reads usage from the answer's bytes and passes them on as they are.
  const headers: Record<string, string> = {
    ...extra,
    'content-type': 'application/json',
    accept,
    'accept-encoding': 'identity',
    'x-request-id': requestId,
  };
  p.wire.authenticate(headers, credential, client);
  return headers;
}

/**
 * The endpoint's path under the provider's base URL: the wire's, for chat and a
 * non-streamed answer unless told, in the protocol the model's name tells unless told.
 */
export function upstreamPathFor(
  p: { readonly wire: ProviderWire },
  upstreamModel: string,
  operation: Operation = 'chat',
  stream = false,
  protocol: ProviderProtocol = p.wire.protocolOf(upstreamModel),
): string {
  return p.wire.path(upstreamModel, operation, stream, protocol);
}

/** The path of one stored response under the provider's base URL, the client's query kept. */
export function storedResponsePath(p: { readonly wire: ProviderWire }, responseId: string, query: string): string {
  return p.wire.storedResponsePath(responseId, query);
}
