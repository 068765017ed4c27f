// The tables, as both engines hold them: text for ids, JSON and times (RFC 3339 UTC, which
// sorts as it reads), integers for versions, counts and micro-USD. One shape for SQLite and
// Postgres, so one query layer serves both.

export interface SchemaVersionTable {
  version: number;
  name: string;
  applied_at: string;
}

/** One row: the version every write bumps, so that a replica knows whether it is behind. */
export interface ManagedStateTable {
  id: number;
  version: number;
}

export interface TeamsTable {
  id: string;
  /** The team's fields as the config file writes them (rate_limit, quota, budget, allowed_models, …), as JSON. */
  spec: string;
  /** Free-form JSON object. */
  metadata: string;
  version: number;
  created_at: string;
  updated_at: string;
}

export interface KeysTable {
  id: string;
  team: string;
  /** Lowercase hex SHA-256 of the secret: the secret itself is never stored. */
  sha256: string;
  /** The secret's first characters, not enough to use it: how a person recognises a key. */
  prefix: string;
  /** The secret a rotation replaced, while its grace lasts. */
  previous_sha256: string | null;
  previous_until: string | null;
  /** The key's limits and lists as the config file writes them (rpm, tpm, allowed_models, …), as JSON. */
  spec: string;
  metadata: string;
  expires_at: string | null;
  revoked_at: string | null;
  version: number;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
}

export interface UsageRequestsTable {
  at: string;
  /** UTC day of `at` (YYYY-MM-DD): what Postgres partitions by and retention prunes by. */
  day: string;
  request_id: string;
  /**
   * The ledger writer's own id for the row, unique per day: a retried batch (its commit's
   * answer lost) inserts nothing twice. `request_id` cannot be the key: a client may send
   * the same x-request-id twice. Null in rows written before schema version 2.
   */
  entry_id: string | null;
  team: string;
  key_id: string;
  endpoint: string;
  model: string;
  provider: string;
  candidate: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_micro_usd: number;
  status: number;
  partial: number;
  duration_ms: number;
  /** The strongest action a guardrail took (`warn`, `mask`, `block`), null when none did or before schema version 4. */
  guardrail: string | null;
  /** What the response cache made of the request (`hit`, `miss`, `refresh`, `bypass`, `error`); null when its route has no cache, or before schema version 5. */
  cache: string | null;
  /** A hit: what its entry cost when it was made, the money the hit saved (0 otherwise, and before schema version 5). */
  saved_micro_usd: number;
}

export interface UsageDailyTable {
  day: string;
  team: string;
  key_id: string;
  model: string;
  provider: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_micro_usd: number;
  /** Requests the response cache answered (0 before schema version 5). */
  cache_hits: number;
  /** What those hits' entries cost when they were made. */
  saved_micro_usd: number;
}

/** A Responses API response the gateway served (the responses store, schema version 3). */
export interface ResponsesTable {
  id: string;
  team: string | null;
  model: string;
  /** Unix seconds: what retention prunes by. */
  created_at: number;
  conversation: string | null;
  /** JSON array of the response ids it continued, oldest first. */
  ancestors: string;
  /** JSON array of this turn's input items. */
  input: string;
  /** The Response object as the client was given it, as JSON. */
  response: string;
  /** The provider identity whose own Responses API wrote the output; null when the gateway wrote it. */
  origin: string | null;
}

/** Which stored response holds an item (input or output): what an item_reference is looked up by. */
export interface ResponseItemsTable {
  item_id: string;
  response_id: string;
  team: string | null;
}

export interface ConversationsTable {
  id: string;
  team: string | null;
  /** Unix seconds: what retention prunes by. */
  created_at: number;
  /** JSON object of strings. */
  metadata: string;
}

/** A conversation's items in order: `seq` grows with each append and is never reused. */
export interface ConversationItemsTable {
  conv_id: string;
  seq: number;
  item_id: string;
  /** The item as JSON. */
  item: string;
}

/** A provider, model route, tool route or price written through the admin API (schema version 6). */
export interface TopologyTable {
  /** `provider`, `route`, `tool_route` or `price`. */
  kind: string;
  /** The provider's, route's or tool's name; a price's model. */
  id: string;
  /** The object as the config file writes it under its name, as JSON; secrets only as references. */
  spec: string;
  version: number;
  created_at: string;
  updated_at: string;
}

/** One row: the topology's version, and whether (and from which config) the file's topology was seeded. */
export interface TopologyStateTable {
  id: number;
  version: number;
  seeded_at: string | null;
  /** SHA-256 of the config file the seed read. */
  seeded_from: string | null;
}

/** A replica's heartbeat: what it serves, since when, and its last refused reload. */
export interface ReplicasTable {
  instance: string;
  generation: number;
  /** The serving generation's content digest. */
  digest: string;
  built_at: string;
  heartbeat_at: string;
  /** When this replica began serving this digest. */
  digest_since: string;
  last_reload_error: string | null;
}

export interface Tables {
  schema_version: SchemaVersionTable;
  managed_state: ManagedStateTable;
  teams: TeamsTable;
  keys: KeysTable;
  usage_requests: UsageRequestsTable;
  usage_daily: UsageDailyTable;
  responses: ResponsesTable;
  response_items: ResponseItemsTable;
  conversations: ConversationsTable;
  conversation_items: ConversationItemsTable;
  topology: TopologyTable;
  topology_state: TopologyStateTable;
  replicas: ReplicasTable;
}
