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
  | 'unable';

/** An upstream status that means "try someone else" rather than "your request is wrong". */
export function isFailoverStatus(status: number): boolean {
  return status >= 500 || status === 429;
}

export function reasonForStatus(status: number): FailureReason {
  return status === 429 ? 'status_429' : 'status_5xx';
}
