import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import type { z } from 'zod';
import { configSchema, type GatewayConfig, secretRefSchema } from '../../src/config/index.js';
import { restartOnlyWarnings } from '../../src/live/index.js';

// docs/configuration.md against the code, so neither can drift from the other:
// - every key path the zod schema accepts has a row, and every row names a key the schema has;
// - each row's type and default are the ones the schema states;
// - each row's "reload" cell says `restart` exactly when the reload path reports a change to
//   that key as taking a restart (restartOnlyWarnings, the function the reload runs), else `live`.
// A row's key is its full path; `<name>` stands for a map key and `[]` for a list item. A
// default cell may add a note in brackets after the value: `none (allow)`.

const ROOT = resolve(import.meta.dirname, '../..');
const DOC = 'docs/configuration.md';

type Schema = z.core.$ZodType;
interface KeySpec {
  readonly type: string;
  readonly default: string;
  /** An enum's values (or a list of one's), as the schema spells them. */
  readonly values?: readonly string[];
}

function defOf(s: Schema): Record<string, unknown> & { type: string } {
  return (s as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
}

/** optional / default / prefault / a transform's input: what a reader writes, and its default. */
function unwrap(schema: Schema): { inner: Schema; fallback: string } {
  let s = schema;
  let fallback = 'required';
  for (;;) {
    const def = defOf(s);
    if (def.type === 'optional') fallback = fallback === 'required' ? 'none' : fallback;
    else if (def.type === 'default' || def.type === 'prefault') fallback = formatDefault(def.defaultValue);
    else if (def.type === 'pipe') {
      s = def.in as Schema;
      continue;
    } else if (def.type !== 'prefault') return { inner: s, fallback };
    s = def.innerType as Schema;
  }
}

function formatDefault(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function isObject(s: Schema): boolean {
  const def = defOf(s);
  // A discriminated union of objects (a provider) has keys too.
  return def.type === 'object' || (def.type === 'union' && typeof def.discriminator === 'string');
}

/** A `{file: PATH}` reference (TLS files): one key, `file`, below the top level. */
function isFileRef(s: Schema, path: string): boolean {
  const def = defOf(s);
  return def.type === 'object' && path.includes('.') && Object.keys(def.shape as object).join() === 'file';
}

function typeName(s: Schema, path: string): string {
  if (s === secretRefSchema) return 'secret reference';
  if (isFileRef(s, path)) return 'file reference';
  const def = defOf(s);
  const bag = s as unknown as { format?: string | null; minValue?: number | null; maxValue?: number | null; isInt?: boolean };
  switch (def.type) {
    case 'string':
      return bag.format === 'url' ? 'URL' : 'string';
    case 'boolean':
      return 'boolean';
    case 'number': {
      const base = bag.isInt === true ? 'integer' : 'number';
      const min = bag.minValue ?? Number.NEGATIVE_INFINITY;
      const max = bag.maxValue ?? Number.POSITIVE_INFINITY;
      return max < Number.MAX_SAFE_INTEGER ? `${base} ${min}–${max}` : `${base} ≥ ${min}`;
    }
    case 'literal':
      return (def.values as unknown[]).map(String).join(' or ');
    case 'enum':
      return `one of ${Object.values(def.entries as Record<string, string>).join(', ')}`;
    case 'array': {
      const element = unwrap(def.element as Schema).inner;
      // "list of one of a, bs" would misspell the last value: an enum's values stay as written.
      if (defOf(element).type === 'enum') return `list, each ${typeName(element, path)}`;
      return `list of ${typeName(element, path)}s`;
    }
    case 'record': {
      const value = typeName(unwrap(def.valueType as Schema).inner, path);
      // A map of lists reads "map of lists of strings", not "map of list of stringss".
      return value.startsWith('list ') ? `map of lists ${value.slice(5)}` : `map of ${value}s`;
    }
    case 'object':
      // One option of a plain union (auth's `jwks`): its keys and their types, as a reader writes it.
      return `{${Object.entries(def.shape as Record<string, Schema>)
        .map(([k, v]) => `${k}: ${typeName(unwrap(v).inner, `${path}.${k}`)}`)
        .join(', ')}}`;
    case 'union':
      return (def.options as Schema[]).map((o) => typeName(unwrap(o).inner, path)).join(' or ');
    default:
      throw new Error(`${path}: no type name for a zod "${def.type}"; teach ${import.meta.filename} one`);
  }
}

/** Every key path the schema accepts, down to its leaves, with type and default. */
function schemaKeys(schema: Schema, path = '', out = new Map<string, KeySpec>()): Map<string, KeySpec> {
  const { inner, fallback } = unwrap(schema);
  const def = defOf(inner);
  const into = (child: Schema, childPath: string): void => void schemaKeys(child, childPath, out);
  if (def.type === 'object' && inner !== secretRefSchema && !isFileRef(inner, path)) {
    for (const [key, child] of Object.entries(def.shape as Record<string, Schema>)) into(child, path === '' ? key : `${path}.${key}`);
  } else if (def.type === 'union' && typeof def.discriminator === 'string') {
    discriminatedKeys(def.options as Schema[], def.discriminator, path, out);
  } else if (
    def.type === 'union' &&
    (def.options as Schema[]).some((o) => defOf(unwrap(o).inner).type === 'literal') &&
    (def.options as Schema[]).some((o) => defOf(unwrap(o).inner).type === 'object')
  ) {
    // A word or an object (a route's `cache`: `off`, or its settings): a row for the key, and rows for the object's keys.
    const words = (def.options as Schema[]).filter((o) => defOf(unwrap(o).inner).type === 'literal').map((o) => typeName(o, path));
    out.set(path, { type: [...words, 'an object'].join(' or '), default: fallback });
    for (const option of def.options as Schema[]) if (defOf(unwrap(option).inner).type === 'object') into(option, path);
  } else if (def.type === 'record' && isObject(unwrap(def.valueType as Schema).inner)) {
    into(def.valueType as Schema, `${path}.*`);
  } else if (def.type === 'array' && isObject(unwrap(def.element as Schema).inner)) {
    into(def.element as Schema, `${path}[]`);
  } else {
    const values = enumValues(inner);
    out.set(path, { type: typeName(inner, path), default: fallback, ...(values === null ? {} : { values }) });
  }
  return out;
}

/**
 * A discriminated union (a provider: one object per type) as one set of rows: the
 * discriminator is one of the options' values; a key only some options have is not required
 * of the others, so its default is the most lenient any option gives (`none` when some lack it).
 */
function discriminatedKeys(options: readonly Schema[], discriminator: string, path: string, out: Map<string, KeySpec>): void {
  const merged = new Map<string, KeySpec & { count: number }>();
  const tag = `${path}.${discriminator}`;
  const values: string[] = [];
  for (const option of options) {
    for (const [key, spec] of schemaKeys(option, path)) {
      if (key === tag) values.push(spec.type);
      const prev = merged.get(key);
      if (prev === undefined) merged.set(key, { ...spec, count: 1 });
      else merged.set(key, { ...prev, default: prev.default === 'required' ? spec.default : prev.default, count: prev.count + 1 });
    }
  }
  for (const [key, { count, ...spec }] of merged) {
    const direct = !key.slice(path.length + 1).includes('.') && !key.slice(path.length + 1).includes('[');
    if (key === tag) out.set(key, { type: `one of ${values.join(', ')}`, default: spec.default, values });
    else out.set(key, direct && count < options.length && spec.default === 'required' ? { ...spec, default: 'none' } : spec);
  }
}

/** The values of an enum, or of a list of one; null for any other type. */
function enumValues(s: Schema): string[] | null {
  const def = defOf(s);
  if (def.type === 'enum') return Object.values(def.entries as Record<string, string>);
  if (def.type === 'array') return enumValues(unwrap(def.element as Schema).inner);
  return null;
}

interface Row extends KeySpec {
  readonly key: string;
  readonly reload: string;
  readonly line: number;
}

const TOP_LEVEL = Object.keys(defOf(configSchema).shape as object);

/** The doc's key rows: `| key | type | default | reload | meaning |`, key being a full path. */
function docRows(text: string): Row[] {
  const rows: Row[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.startsWith('|')) return;
    const cells = line
      .slice(1, line.endsWith('|') ? -1 : undefined)
      .split(/(?<!\\)\|/)
      .map((c) => c.replaceAll('`', '').trim());
    const key = (cells[0] ?? '').replace(/<[^>]+>/g, '*');
    if (!TOP_LEVEL.includes(key.split(/[.[]/)[0] ?? '')) return;
    rows.push({ key, type: cells[1] ?? '', default: cells[2] ?? '', reload: cells[3] ?? '', line: i + 1 });
  });
  return rows;
}

// Two configs that set every key once between them (static routes in one, an overlay in the
// other, as the two are exclusive). Parsed, then each key is changed in turn and the reload
// path is asked whether that change takes a restart.
const common = {
  server: {
    listen: '127.0.0.1:8080',
    admin_listen: '127.0.0.1:9090',
    admin_token: { env: 'ADMIN_TOKEN' },
    admin_tokens: [{ id: 'ops', token: { env: 'OPS_TOKEN' }, role: 'read_only' }],
    max_body_bytes: 1024,
    max_config_bytes: 4096,
    drain_timeout_ms: 1000,
    drain_delay_ms: 10,
    max_connections: 10,
    headers_timeout_ms: 1000,
    body_timeout_ms: 1000,
    keep_alive_timeout_ms: 1000,
    watch_config: true,
    watch_debounce_ms: 10,
    public_metrics: true,
    trusted_proxies: ['10.0.0.0/8', '::1'],
    admin_probe_allow: ['127.0.0.1', '10.0.0.0/8'],
  },
  log: { level: 'warn', access: false },
  providers: {
    east: {
      type: 'openai',
      base_url: 'https://east.example/v1',
      api_key: { env: 'EAST_KEY' },
      timeout_ms: 1000,
      request_timeout_ms: 1000,
      stream_max_ms: 1000,
      max_event_bytes: 4096,
      connect_timeout_ms: 1000,
      max_connections: 2,
      headers: { 'x-org': 'org' },
      expose_headers: ['openai-processing-ms'],
      models: { m: 'east-m' },
      tls: { ca: { file: '/ca.pem' }, cert: { file: '/c.pem' }, key: { file: '/k.pem' }, server_name: 'east.example' },
      retry: { attempts: 2, backoff_ms: 50, max_backoff_ms: 500 },
    },
    claude: { type: 'anthropic', base_url: 'https://claude.example/v1', anthropic_version: '2023-06-01' },
    azure: {
      type: 'azure_openai',
      base_url: 'https://azure.example',
      api_version: '2024-10-21',
      auth: {
        type: 'entra',
        tenant_id: 'contoso.onmicrosoft.com',
        client_id: 'app-1',
        client_secret: { env: 'AZURE_CLIENT_SECRET' },
        authority_host: 'https://login.microsoftonline.us',
      },
    },
    bedrock: {
      type: 'bedrock',
      region: 'us-east-1',
      aws: { access_key_id: { env: 'AK' }, secret_access_key: { env: 'SK' }, session_token: { env: 'ST' } },
    },
    irsa: { type: 'bedrock', region: 'eu-west-1', aws: { web_identity: true, sts_endpoint: 'https://sts.eu-west-1.amazonaws.com' } },
    vertex: {
      type: 'vertex',
      project: 'my-project',
      location: 'us-east5',
      gcp: { service_account: { file: '/sa.json' }, token_url: 'https://oauth2.example/token' },
    },
    gke: { type: 'vertex', project: 'my-project', location: 'global', gcp: { metadata_server: true } },
    docs: {
      type: 'mcp',
      base_url: 'https://docs.example/mcp',
      tools: { search: 'search_docs' },
      trust_annotations: true,
      region: 'eu-west-1',
      zones: ['eu', 'gdpr'],
    },
    planner: { type: 'a2a', base_url: 'https://planner.example', card_path: '/agents/planner/card.json', api_key: { env: 'PLANNER_KEY' } },
  },
  pricing: {
    on_missing: 'block',
    models: {
      m: {
        input_usd_per_mtok: 1,
        output_usd_per_mtok: 2,
        cache_read_usd_per_mtok: 0.5,
        cache_write_usd_per_mtok: 1.5,
        max_output_tokens: 8192,
      },
    },
  },
  resilience: { breaker: { failure_threshold: 2, open_base_ms: 10, open_max_ms: 100 } },
  teams: {
    platform: {
      allowed_models: ['m*'],
      rate_limit: { rpm: 1, tpm: 1 },
      quota: { tokens_per_day: 1, tool_calls_per_day: 1, agent_messages_per_day: 1 },
      budget: { usd_per_month: 1, on_exceeded: 'warn' },
      allowed_tools: ['search'],
      allowed_agents: ['plan*'],
      guardrails: { input: ['deny'], output: ['pii'] },
      cache: { mode: 'off' },
      residency: { allow: ['eu', 'gdpr'], fail_closed: false },
    },
  },
  keys: [
    {
      id: 'a',
      team: 'platform',
      sha256: 'a'.repeat(64),
      rpm: 1,
      tpm: 1,
      tokens_per_day: 1,
      budget_usd_per_month: 1,
      expires_at: '2030-01-01T00:00:00Z',
      allowed_models: ['m*'],
      allowed_tools: ['search'],
      tool_calls_per_day: 1,
      allowed_agents: ['planner'],
      agent_messages_per_day: 1,
      guardrails: { input: ['secrets'], output: ['deny'] },
      cache: { mode: 'off' },
      residency: { allow: ['eu'], fail_closed: false },
    },
    { id: 'b', team: 'platform', key: { env: 'B_KEY' } },
  ],
  cache: {
    store: 'redis',
    redis_url: 'rediss://127.0.0.1:6380',
    redis_username: { env: 'CACHE_REDIS_USER' },
    redis_password: { env: 'CACHE_REDIS_PASSWORD' },
    redis_tls: { ca: { file: '/c-ca.pem' }, cert: { file: '/c-c.pem' }, key: { file: '/c-k.pem' }, server_name: 'cache.example' },
    max_bytes: 1024,
    max_entry_bytes: 512,
    default_ttl_s: 10,
    scope: 'key',
    lookup_timeout_ms: 10,
  },
  governance: {
    store: 'redis',
    redis_url: 'rediss://127.0.0.1:6379',
    redis_username: { env: 'REDIS_USER' },
    redis_password: { env: 'REDIS_PASSWORD' },
    redis_tls: {
      ca: { file: '/redis-ca.pem' },
      cert: { file: '/redis-c.pem' },
      key: { file: '/redis-k.pem' },
      server_name: 'redis.example',
    },
    key_prefix: 'sy:',
    on_store_error: 'fail_open',
    default_max_tokens: 10,
    cap_output: true,
  },
  audit: { file: '/var/audit.jsonl', max_bytes: 104857600 },
  auth: {
    jwt: {
      mode: 'optional',
      issuers: [
        {
          id: 'corp',
          issuer: 'https://idp.example/realms/corp',
          audiences: ['switchyard'],
          jwks: { url: 'https://idp.example/realms/corp/certs' },
          jwks_recheck_s: 600,
          jwks_refetch_cooldown_s: 10,
          algorithms: ['RS256'],
          clock_skew_s: 30,
          team: { claim: 'groups', map: { '/ai-platform': 'platform' } },
          principal: { claim: 'azp' },
          roles: { claim: 'realm_access.roles', map: { 'sy-admin': 'admin' } },
          scopes: { claim: 'scope', models: { 'llm.cheap': ['m*'] }, tools: { 'tools.read': ['search'] } },
          principals: { rpm: 1, tpm: 1, tokens_per_day: 1, tool_calls_per_day: 1, budget_usd_per_month: 1 },
        },
      ],
      principals: { rpm: 1, tpm: 1, tokens_per_day: 1, tool_calls_per_day: 1, budget_usd_per_month: 1 },
      resource: 'https://gateway.example/mcp',
    },
  },
  guardrails: {
    pii: {
      type: 'pii',
      entities: ['email', 'credit_card'],
      action: 'mask',
      restore: true,
      stream: 'hold',
      window_chars: 200,
      on_error: 'fail_open',
    },
    secrets: {
      type: 'secrets',
      categories: ['aws_access_key', 'high_entropy'],
      entropy: { min_length: 40, min_entropy: 4.5 },
      action: 'block',
      restore: false,
    },
    deny: { type: 'regex', patterns: ['(?i)ignore (all|previous) instructions'], categories: ['injection'], action: 'block' },
    nemo: {
      type: 'nemo',
      base_url: 'http://127.0.0.1:8000',
      config_id: 'main',
      model: 'm',
      timeout_ms: 500,
      headers: { 'x-api-key': { env: 'NEMO_KEY' } },
    },
    review: { type: 'webhook', url: 'https://guard.example/check', headers: { authorization: { env: 'GUARD_TOKEN' } }, max_bytes: 65536 },
    judge: { type: 'judge', route: 'm', prompt: { file: '/guard-prompt.txt' }, unsafe_when: '^unsafe' },
  },
  database: {
    url: 'postgres://switchyard@db.example:5432/switchyard',
    password: { env: 'DB_PASSWORD' },
    tls: { ca: { file: '/db-ca.pem' }, cert: { file: '/db-c.pem' }, key: { file: '/db-k.pem' }, server_name: 'db.example' },
    recheck_ms: 1000,
    ledger_queue: 1000,
    usage_retention_days: 7,
    usage_max_range_days: 90,
    topology: 'merged',
  },
  a2a: {
    card_recheck_ms: 1000,
    max_card_bytes: 4096,
    max_event_bytes: 4096,
    stream_max_ms: 1000,
    call_timeout_ms: 1000,
    push_urls: ['https://hooks.internal.example/a2a/'],
    tasks: { ttl_s: 60, terminal_ttl_s: 10, max_entries: 10 },
  },
  telemetry: {
    otlp: {
      endpoint: 'http://127.0.0.1:4318/v1/traces',
      headers: { 'x-api-key': { env: 'OTLP_KEY' } },
      service_name: 's',
      sample_ratio: 0.5,
    },
  },
};
const affinity = { header: 'x-session', cookie: 'sid', ttl_s: 10, max_entries: 10 };
const fixtures: Record<string, unknown>[] = [
  {
    ...common,
    routing: {
      routes: {
        m: {
          policy: 'weighted',
          deadline_ms: 1000,
          translation: 'strict',
          fallback_on: ['context_length'],
          guardrails: { input: ['secrets', 'pii'], output: ['pii'] },
          cache: {
            mode: 'semantic',
            ttl_s: 60,
            store_fallbacks: true,
            cache_tool_calls: true,
            semantic: { embedding_route: 'm', threshold: 0.9, max_turns: 2, max_entries_per_context: 10, timeout_ms: 100 },
          },
          candidates: [
            { provider: 'azure', model: 'm', deployment: 'd', weight: 2 },
            { provider: 'vertex', model: 'claude-sonnet-4-5', publisher: 'anthropic' },
          ],
        },
      },
      session_affinity: affinity,
      responses: { ttl_s: 10, max_entries: 10, store: 'redis', retention_days: 10, max_items: 10 },
      translation: 'lenient',
      tools: { search: { policy: 'round_robin', retry_safe: true, candidates: [{ provider: 'docs', tool: 'search_docs', weight: 2 }] } },
      tools_from: [{ provider: 'docs', prefix: 'docs_' }],
      agents: { planner: { policy: 'weighted', candidates: [{ provider: 'planner', weight: 2 }] } },
    },
    mcp: {
      allowed_origins: ['https://app.example.com'],
      sessions: { ttl_s: 60, max_entries: 10, max_per_key: 5 },
      catalog_recheck_ms: 1000,
      list_changed_debounce_ms: 10,
      call_timeout_ms: 1000,
      responses_label: 'gateway_tools',
      responses_self_urls: ['https://gateway.example.com/mcp'],
      responses_max_calls: 8,
      guardrails: { arguments: ['secrets'], results: ['pii'] },
    },
  },
  {
    ...common,
    routing: {
      overlay: {
        file: '/overlay/routing-overlay.json',
        expected_scope: { network: 'n', gateway: 'g', namespace: 'ns', local_site: 's' },
        reload: { enabled: false, debounce_ms: 10, recheck_ms: 1000 },
        max_bytes: 1024,
        credential_mount_base: '/creds',
        deadline_ms: 1000,
        fallback_on: ['content_filter'],
      },
      session_affinity: affinity,
    },
  },
];

/** The concrete path segments a key path names in this document, or null when it sets none. */
function locate(doc: unknown, path: string): (string | number)[] | null {
  const [head, ...rest] = path.split('.');
  const tail = rest.join('.');
  const list = head?.endsWith('[]') === true;
  const name = list ? head.slice(0, -2) : (head as string);
  const here = (doc as Record<string, unknown> | undefined)?.[name];
  if (here === undefined) return null;
  const follow = (value: unknown, prefix: (string | number)[]): (string | number)[] | null => {
    if (tail === '') return prefix;
    if (tail.startsWith('*')) {
      for (const [k, v] of Object.entries(value as object)) {
        const found = tail === '*' ? [] : locate(v, tail.slice(2));
        if (found !== null) return [...prefix, k, ...found];
      }
      return null;
    }
    const found = locate(value, tail);
    return found === null ? null : [...prefix, ...found];
  };
  if (!list) return follow(here, [name]);
  for (const [i, item] of (here as unknown[]).entries()) {
    const found = follow(item, [name, i]);
    if (found !== null) return found;
  }
  return null;
}

function changed(config: GatewayConfig, at: (string | number)[]): GatewayConfig {
  const copy = structuredClone(config) as unknown as Record<string | number, unknown>;
  let node = copy;
  for (const step of at.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  node[at.at(-1) as string | number] = { changed: true };
  return copy as unknown as GatewayConfig;
}

const keys = schemaKeys(configSchema as unknown as Schema);
const rows = docRows(readFileSync(resolve(ROOT, DOC), 'utf8'));
const parsed = fixtures.map((f) => configSchema.parse(f));

/** `restart` when the reload path reports a change to this key as taking a restart. */
function reloadOf(key: string): string {
  for (const [i, fixture] of fixtures.entries()) {
    const at = locate(fixture, key);
    if (at === null) continue;
    const serving = parsed[i] as GatewayConfig;
    return restartOnlyWarnings(serving, changed(serving, at)).length > 0 ? 'restart' : 'live';
  }
  throw new Error(`${key}: no fixture in ${import.meta.filename} sets it; add it to one`);
}

describe(`${DOC} against the config schema`, () => {
  it('finds the schema keys and the rows', () => {
    assert.ok(keys.size > 60, `only ${keys.size} schema keys found`);
    assert.ok(rows.length > 60, `only ${rows.length} key rows found in ${DOC}`);
  });

  it('the fixtures set every schema key, so each one is tried against the reload path', () => {
    const unset = [...keys.keys()].filter((k) => fixtures.every((f) => locate(f, k) === null));
    assert.deepEqual(unset, []);
  });

  it('has a row for every schema key, and only one', () => {
    const documented = rows.map((r) => r.key);
    assert.deepEqual(
      [...keys.keys()].filter((k) => !documented.includes(k)),
      [],
      'schema keys missing from the doc',
    );
    assert.deepEqual(
      documented.filter((k, i) => documented.indexOf(k) !== i),
      [],
      'keys with two rows',
    );
  });

  it('has no row for a key the schema lacks', () => {
    assert.deepEqual(
      rows.filter((r) => !keys.has(r.key)).map((r) => `${DOC}:${r.line}: ${r.key}`),
      [],
    );
  });

  it("gives each key the schema's type and default, and says whether a reload applies it", () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const spec = keys.get(row.key);
      if (spec === undefined) continue;
      const expected = { type: spec.type, default: spec.default, reload: reloadOf(row.key) };
      // A default may carry a note in brackets: `none (allow)`.
      const actual = { type: row.type, default: row.default.replace(/ \(.*\)$/, ''), reload: row.reload };
      if (!isDeepEqual(expected, actual))
        wrong.push(`${DOC}:${row.line}: ${row.key}: want | ${expected.type} | ${expected.default} | ${expected.reload} |`);
    }
    assert.deepEqual(wrong, []);
  });
});

describe(`${DOC}: enum values`, () => {
  it('spells every value of an enum key exactly as the schema does, no more and no fewer', () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const values = keys.get(row.key)?.values;
      if (values === undefined) continue;
      const listed = row.type.replace(/^.*one of /, '').split(/,\s*/);
      if (!isDeepEqual([...listed].sort(), [...values].sort()))
        wrong.push(`${DOC}:${row.line}: ${row.key}: lists ${listed.join(', ')}; the schema takes ${values.join(', ')}`);
    }
    assert.deepEqual(wrong, []);
  });
});

function isDeepEqual(a: object, b: object): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
