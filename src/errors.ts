// The error catalog: every failure a client or operator can see has a stable snake_case
// code, one HTTP status and its wire types in both client protocols. Failover and tests
// branch on `code`, never on message text. This file imports nothing, so every folder may
// use it. Messages are written by the thrower and must never hold a secret value.

export interface ErrorSpec {
  readonly status: number;
  readonly openai: string;
  readonly anthropic: string;
}

export const errorCatalog = {
  invalid_json: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  invalid_request: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  duplicate_key: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  probe_address_not_allowed: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  mcp_protocol_version_unsupported: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  over_limit_capacity: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  context_length_exceeded: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  content_filter: { status: 400, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  unauthorized: { status: 401, openai: 'authentication_error', anthropic: 'authentication_error' },
  key_expired: { status: 401, openai: 'authentication_error', anthropic: 'authentication_error' },
  budget_exceeded: { status: 402, openai: 'insufficient_quota', anthropic: 'permission_error' },
  model_not_allowed: { status: 403, openai: 'permission_error', anthropic: 'permission_error' },
  tool_not_allowed: { status: 403, openai: 'permission_error', anthropic: 'permission_error' },
  agent_not_allowed: { status: 403, openai: 'permission_error', anthropic: 'permission_error' },
  residency_not_allowed: { status: 403, openai: 'permission_error', anthropic: 'permission_error' },
  origin_not_allowed: { status: 403, openai: 'permission_error', anthropic: 'permission_error' },
  forbidden: { status: 403, openai: 'permission_error', anthropic: 'permission_error' },
  not_found: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  model_not_found: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  no_route: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  tool_not_found: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  mcp_session_not_found: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  response_not_found: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  conversation_not_found: { status: 404, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  method_not_allowed: { status: 405, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  conflict: { status: 409, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  managed_by_config: { status: 409, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  precondition_failed: { status: 412, openai: 'invalid_request_error', anthropic: 'invalid_request_error' },
  response_provider_withdrawn: { status: 410, openai: 'invalid_request_error', anthropic: 'not_found_error' },
  body_too_large: { status: 413, openai: 'invalid_request_error', anthropic: 'request_too_large' },
  upstream_rate_limited: { status: 429, openai: 'rate_limit_error', anthropic: 'rate_limit_error' },
  rate_limit_exceeded: { status: 429, openai: 'rate_limit_error', anthropic: 'rate_limit_error' },
  quota_exceeded: { status: 429, openai: 'insufficient_quota', anthropic: 'rate_limit_error' },
  internal_error: { status: 500, openai: 'server_error', anthropic: 'api_error' },
  upstream_error: { status: 502, openai: 'server_error', anthropic: 'api_error' },
  upstream_auth_failed: { status: 502, openai: 'server_error', anthropic: 'api_error' },
  upstream_unavailable: { status: 503, openai: 'server_error', anthropic: 'overloaded_error' },
  credential_unavailable: { status: 503, openai: 'server_error', anthropic: 'api_error' },
  governance_unavailable: { status: 503, openai: 'server_error', anthropic: 'overloaded_error' },
  database_unavailable: { status: 503, openai: 'server_error', anthropic: 'overloaded_error' },
  store_unavailable: { status: 503, openai: 'server_error', anthropic: 'overloaded_error' },
  guardrail_unavailable: { status: 503, openai: 'server_error', anthropic: 'overloaded_error' },
  outcome_unknown: { status: 503, openai: 'server_error', anthropic: 'api_error' },
  shutting_down: { status: 503, openai: 'server_error', anthropic: 'overloaded_error' },
  upstream_timeout: { status: 504, openai: 'server_error', anthropic: 'api_error' },
  stream_interrupted: { status: 502, openai: 'server_error', anthropic: 'api_error' },
  stream_event_too_large: { status: 502, openai: 'server_error', anthropic: 'api_error' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorCatalog;

export class SwitchyardError extends Error {
  readonly code: ErrorCode;
  /** The request field the error is about, in OpenAI's `param` sense (e.g. `messages`). */
  readonly param: string | null;
  /** Response headers that belong to this answer (`allow` on a 405, `connection: close` on a 413). */
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, message: string, param: string | null = null, headers?: Readonly<Record<string, string>>) {
    super(message);
    this.name = 'SwitchyardError';
    this.code = code;
    this.param = param;
    this.headers = headers;
  }

  get status(): number {
    return errorCatalog[this.code].status;
  }
}

export function statusOf(code: ErrorCode): number {
  return errorCatalog[code].status;
}

/** OpenAI's error body: `{"error": {"message", "type", "param", "code"}}`. */
export function openaiErrorBody(code: ErrorCode, message: string, param: string | null = null): string {
  return JSON.stringify({ error: { message, type: errorCatalog[code].openai, param, code } });
}

/** Anthropic's error body: `{"type": "error", "error": {"type", "message"}}`. */
export function anthropicErrorBody(code: ErrorCode, message: string): string {
  return JSON.stringify({ type: 'error', error: { type: errorCatalog[code].anthropic, message } });
}
