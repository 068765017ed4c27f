// Which upstream outcomes move a request on to the next candidate. Only outcomes before
// the first response byte reached the client qualify: after that, failing over would
// splice two providers' answers into one response.

export type FailureReason =
  | 'connect_error'
  | 'timeout'
  | 'status_5xx'
  | 'status_429'
  /** The provider refused the gateway's credential (401, 403). */
  | 'status_auth'
  | 'credential_unavailable'
  /** The candidate's protocol cannot express the request (a field the translation cannot map); nothing was sent. */
  | 'unable'
  /** The candidate lies outside the caller's residency zones; nothing was sent (never a breaker's failure). */
  | 'residency'
  /** A 400/413 saying the prompt is longer than the model takes, on a route with `fallback_on: [context_length]`. */
  | 'context_length'
  /** A 400 refusing the request by a content filter, on a route with `fallback_on: [content_filter]`. */
  | 'content_filter';

/**
 * The client-error answers a route may choose to fail over on (`fallback_on`): the provider
 * is healthy and said so, but another candidate (a longer context, another filter) may serve.
 */
export type FallbackClass = 'context_length' | 'content_filter';

/** An upstream status that means "try someone else" rather than "your request is wrong". */
export function isFailoverStatus(status: number): boolean {
  return status >= 500 || status === 429;
}

export function reasonForStatus(status: number): FailureReason {
  return status === 429 ? 'status_429' : 'status_5xx';
}

/**
 * Whether a failure says nothing against the provider's health: it answered, correctly,
 * that this request does not fit it. The breaker does not count these.
 */
export function isAnswerClass(reason: string): reason is FallbackClass {
  return reason === 'context_length' || reason === 'content_filter';
}
