// Anthropic's error `type` for each HTTP status, the one table the gateway answers from. The mock
// provider keeps a copy (src/mock/ may import nothing outside itself), and
// test/mock/anthropic-error-types.test.ts holds the two equal.

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

/**
 * The statuses Anthropic's API documents, plus 503: Anthropic sends its overload as 529, but a
 * 503 says the same thing, and errors.ts's catalog renders the gateway's own 503s that way too.
 */
export const ANTHROPIC_ERROR_TYPES: Readonly<Record<number, AnthropicErrorType>> = Object.freeze({
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
});

/** A status the table does not name: Anthropic uses its 400 type for any other 4xx, and the 500 type for any other 5xx. */
export function anthropicErrorTypeOfClass(status: number): 'invalid_request_error' | 'api_error' {
  return status < 500 ? 'invalid_request_error' : 'api_error';
}
