// The shapes the MCP pieces share: a tool as an MCP server published it, one server's
// catalog, and what a routed `tools/call` comes back as. JSON-RPC values are kept as the
// server sent them (plain JSON), so a tool's schemas and annotations reach the gateway's
// clients unchanged.

/** The protocol versions the gateway speaks, newest first (as a server to its clients, and as a client upstream). */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'] as const;
export type McpProtocolVersion = (typeof MCP_PROTOCOL_VERSIONS)[number];
export const LATEST_MCP_PROTOCOL_VERSION: McpProtocolVersion = '2025-11-25';

/** A JSON-RPC id: the spec forbids null for requests. */
export type JsonRpcId = string | number;

export interface JsonRpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** A JSON-RPC notification (no id), e.g. `notifications/progress`. */
export interface JsonRpcNotification {
  readonly jsonrpc: '2.0';
  readonly method: string;
  readonly params?: Record<string, unknown>;
}

/** Tool annotations: hints only, untrusted unless the provider is marked `trust_annotations`. */
export interface ToolAnnotations {
  readonly title?: string;
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/** A tool as its server listed it in `tools/list`: every field kept as published. */
export interface McpToolDefinition {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema?: Record<string, unknown>;
  readonly annotations?: ToolAnnotations;
  readonly icons?: unknown;
  readonly _meta?: Record<string, unknown>;
  /** Anything else the server sent, kept (the schema is open). */
  readonly [extra: string]: unknown;
}

/** One MCP server's tools, as last listed (every page). Immutable: a new listing is a new catalog. */
export interface ToolCatalog {
  /** The `providers.<name>` it was listed from. */
  readonly provider: string;
  /** Tools by upstream name, in the server's order. */
  readonly tools: ReadonlyMap<string, McpToolDefinition>;
  /** Names the server listed more than once: only the first definition is in `tools`. */
  readonly duplicates: readonly string[];
  /** When it was listed (ISO 8601). */
  readonly refreshedAt: string;
  /** The upstream's protocol version and serverInfo from its initialize answer. */
  readonly protocolVersion: string;
  readonly serverInfo: { readonly name: string; readonly version: string } | null;
}

/** Why an upstream call failed without a JSON-RPC answer, for careful failover. */
export type CallFailureReason =
  /** The connection could not be made (refused, DNS, TLS): the server never saw the call. */
  | 'refused'
  /** No answer (headers, or the next event) within timeout_ms. */
  | 'timeout'
  /** The connection dropped after the call was sent. */
  | 'dropped'
  /** An HTTP status instead of an answer (`status` says which). */
  | 'status'
  /** The upstream session could not be (re)initialized, so the call was never sent. */
  | 'session'
  /** The answer could not be read as JSON-RPC. */
  | 'malformed'
  /** The caller's signal ended the call. */
  | 'aborted';

export type CallOutcome =
  /** The server answered: its JSON-RPC `result` (a CallToolResult) or `error`, exactly as sent. */
  | {
      readonly kind: 'result';
      readonly result: Record<string, unknown>;
      /** The result's JSON text as the server sent it, when it could be cut out without a scan (see upstream-rpc.ts); else undefined. */
      readonly resultJson?: string;
    }
  | { readonly kind: 'error'; readonly error: JsonRpcError }
  | {
      readonly kind: 'failed';
      readonly reason: CallFailureReason;
      /** False only when the server provably never received the call (refused, session). */
      readonly reached: boolean;
      /** With reason `status`. */
      readonly status?: number;
      /** For logs and the failure list; never a credential. */
      readonly detail: string;
    };
