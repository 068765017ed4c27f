import { hash } from 'node:crypto';
import type { CachedOperation, CachedProtocol } from './entry.js';

// The key of a cached answer: SHA-256 over the canonical JSON (members sorted by name at
// every level, so key order never matters) of everything that
// decides what the answer says, and nothing else. The request's body counts whole (key
// order does not: JCS sorts it), less the fields that never change the answer, with each
// field that equals its documented default left out (so `n: 1` and no `n` are one key);
// beside it the endpoint and client protocol, the route, the caller's scope, the client's
// namespace, the beta headers that change what a provider answers, and the guardrails the
// request runs. The table below is the documentation (docs/cache.md): a test keeps the two
// equal. For semantic mode the same key is also made without the last user turn's text
// (the context), and that text is what gets embedded.

/** One row of the key's table: a part of the key, and what it is. */
export interface KeyPart {
  readonly part: string;
  readonly what: string;
}

/** What the key is a digest of, in the order the docs list it. */
export const KEY_PARTS: readonly KeyPart[] = Object.freeze([
  { part: 'endpoint', what: 'chat (OpenAI chat completions or Anthropic Messages), completions, responses or embeddings' },
  { part: 'protocol', what: "the client's protocol (openai, anthropic, responses): entries never cross protocols" },
  { part: 'route', what: 'the model the client asked for (the route), not the candidate that answered' },
  { part: 'scope', what: '`team:<id>`, `key:<id>` or `global`, by `cache.scope`; an anonymous caller is team or key `none`' },
  { part: 'namespace', what: 'the `x-switchyard-cache-namespace` header, or none' },
  { part: 'body', what: 'the request body, every field but those listed as left out, with defaults removed (below)' },
  {
    part: 'headers',
    what: '`anthropic-beta`, `anthropic-version` and `openai-beta`, as sent (they change what a provider answers)',
  },
  {
    part: 'guardrails',
    what: 'the names and settings of the guardrails the request runs (a changed guardrail never replays an answer it did not check)',
  },
]);

/** Body fields that never change the answer: left out of the key, with why. */
export const LEFT_OUT: Readonly<Record<string, string>> = Object.freeze({
  stream: 'a streamed and a whole answer are one entry: each is built from the other',
  stream_options: 'only decides whether a stream ends with a usage chunk, which a replay adds or leaves out',
  user: "an end-user id for the provider's abuse tracking; the scope decides who shares answers",
  metadata: "tags for the provider's logs (Anthropic's user_id, OpenAI's metadata)",
  safety_identifier: "an end-user id for the provider's abuse tracking",
  prompt_cache_key: "a hint for the provider's own prompt cache",
  service_tier: "the provider's latency tier, not the answer",
  store: 'a Responses request is cached only with `store: false`',
});

/** Per endpoint and protocol, the fields whose default value is the same as leaving them out. */
export const DEFAULTS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = Object.freeze({
  'chat/openai': Object.freeze({
    n: 1,
    temperature: 1,
    top_p: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    logprobs: false,
    parallel_tool_calls: true,
    stop: null,
  }),
  'chat/anthropic': Object.freeze({ temperature: 1, stop_sequences: [] }),
  'completions/openai': Object.freeze({
    n: 1,
    best_of: 1,
    temperature: 1,
    top_p: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    echo: false,
    logprobs: null,
    suffix: null,
    stop: null,
  }),
  'responses/responses': Object.freeze({ temperature: 1, top_p: 1, parallel_tool_calls: true, truncation: 'disabled' }),
  'embeddings/openai': Object.freeze({ encoding_format: 'float' }),
});

export interface KeyInput {
  readonly operation: CachedOperation;
  readonly protocol: CachedProtocol;
  readonly route: string;
  readonly scope: string;
  readonly namespace: string | null;
  readonly body: Readonly<Record<string, unknown>>;
  /** The beta and version headers, lowercased names; absent ones left out. */
  readonly headers: Readonly<Record<string, string>>;
  /** The guardrails' fingerprint (guardrailsFingerprint), '' for none. */
  readonly guardrails: string;
}

/** The key of a request, and what semantic mode needs of it. */
export interface RequestKey {
  /** Hex SHA-256: the exact key. */
  readonly key: string;
  /**
   * For semantic mode: the key without the last user turn's text (the scope and everything
   * before and around that turn), and the turn's text; null when the request has no such
   * turn (the last message is not the user's text, or holds more than text).
   */
  readonly semantic: { readonly context: string; readonly text: string } | null;
  /** The user turns of the conversation (a system prompt is not one): semantic mode's `max_turns`. */
  readonly userTurns: number;
}

/**
 * The exact key of a request and, with `semantic` (a route in semantic mode), its semantic
 * context and last user turn, where it has one.
 */
export function requestKey(input: KeyInput, semantic = true): RequestKey {
  const body = keyBody(input.operation, input.protocol, input.body);
  const key = digest({ ...head(input), body });
  const turn = semantic ? lastUserTurn(input.operation, input.protocol, body) : null;
  if (turn === null) return { key, semantic: null, userTurns: semantic ? userTurns(input.operation, input.protocol, body) : 0 };
  return {
    key,
    semantic: { context: digest({ ...head(input), body: turn.without, semantic: true }), text: turn.text },
    userTurns: userTurns(input.operation, input.protocol, body),
  };
}

function head(input: KeyInput): Record<string, unknown> {
  return {
    v: 1,
    operation: input.operation,
    protocol: input.protocol,
    route: input.route,
    scope: input.scope,
    namespace: input.namespace,
    headers: input.headers,
    guardrails: input.guardrails,
  };
}

function digest(value: unknown): string {
  return hash('sha256', canonicalJson(value), 'hex');
}

/**
 * JSON with every object's members sorted by name, at every level: one text per value,
 * whatever order its members came in. (A parsed body holds only JSON values.)
 */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += `${i === 0 ? '' : ','}${canonicalJson(value[i])}`;
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const names = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const name of names) {
    const v = record[name];
    if (v === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(name)}:${canonicalJson(v)}`;
    first = false;
  }
  return `${out}}`;
}

/** The body as the key sees it: the left-out fields and the defaults removed, `model` too (the route stands for it). */
function keyBody(operation: CachedOperation, protocol: CachedProtocol, body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const defaults = DEFAULTS[`${operation}/${protocol}`] ?? {};
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(body)) {
    if (name === 'model' || name in LEFT_OUT) continue;
    const value = body[name];
    if (value === undefined) continue;
    if (name in defaults && sameJson(value, defaults[name])) continue;
    out[name] = value;
  }
  return out;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

interface Turn {
  readonly text: string;
  /** The body with that text taken out (its place kept, so a different conversation is a different context). */
  readonly without: Record<string, unknown>;
}

/** The last user turn's text, when the request ends with one made of text alone. */
function lastUserTurn(operation: CachedOperation, protocol: CachedProtocol, body: Record<string, unknown>): Turn | null {
  switch (operation) {
    case 'chat':
      return lastMessageText(body, 'messages', 'text');
    case 'responses': {
      const input = body.input;
      if (typeof input === 'string') return { text: input, without: { ...body, input: TURN } };
      return lastMessageText(body, 'input', 'input_text');
    }
    case 'completions': {
      const prompt = body.prompt;
      return typeof prompt === 'string' ? { text: prompt, without: { ...body, prompt: TURN } } : null;
    }
    case 'embeddings':
      return null;
  }
}

/** What stands in the context where the last user turn's text was. */
const TURN = '\u0000turn';

function lastMessageText(body: Record<string, unknown>, field: string, partType: string): Turn | null {
  const list = body[field];
  if (!Array.isArray(list) || list.length === 0) return null;
  const last = list[list.length - 1] as Record<string, unknown> | null;
  if (typeof last !== 'object' || last === null || last.role !== 'user') return null;
  if (last.type !== undefined && last.type !== 'message') return null;
  const text = textOf(last.content, partType);
  if (text === null) return null;
  const without = [...list.slice(0, -1), { ...last, content: TURN }];
  return { text, without: { ...body, [field]: without } };
}

/** A message's content as one text: a string, or parts that are all text; null when any part is something else. */
function textOf(content: unknown, partType: string): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || content.length === 0) return null;
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part !== 'object' || part === null) return null;
    const p = part as Record<string, unknown>;
    if ((p.type !== partType && p.type !== 'text') || typeof p.text !== 'string') return null;
    texts.push(p.text);
  }
  return texts.join('\n');
}

/** How many user turns the conversation holds (a tool's result in Anthropic's user message is not a turn of the user's). */
function userTurns(operation: CachedOperation, protocol: CachedProtocol, body: Record<string, unknown>): number {
  if (operation === 'completions' || operation === 'embeddings') return 1;
  const list = operation === 'responses' ? body.input : body.messages;
  if (typeof list === 'string') return 1;
  if (!Array.isArray(list)) return 0;
  let turns = 0;
  for (const m of list) {
    if (typeof m !== 'object' || m === null) continue;
    const message = m as Record<string, unknown>;
    if (message.role !== 'user') continue;
    if (protocol === 'anthropic' && Array.isArray(message.content) && message.content.every((p) => isToolResult(p))) continue;
    turns += 1;
  }
  return turns;
}

function isToolResult(part: unknown): boolean {
  return typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'tool_result';
}

/** The headers that are part of the key, as sent. */
export const KEY_HEADERS: readonly string[] = Object.freeze(['anthropic-beta', 'anthropic-version', 'openai-beta']);

/** The key table as docs/cache.md shows it. */
export function keyTableMarkdown(): string {
  const lines = ['| Part of the key | What it is |', '| --- | --- |'];
  for (const p of KEY_PARTS) lines.push(`| ${p.part} | ${p.what} |`);
  lines.push('', '| Body field left out | Why |', '| --- | --- |');
  for (const [field, why] of Object.entries(LEFT_OUT)) lines.push(`| \`${field}\` | ${why} |`);
  lines.push('', '| Endpoint | Defaults removed (the same as leaving the field out) |', '| --- | --- |');
  for (const [endpoint, defaults] of Object.entries(DEFAULTS)) {
    const list = Object.entries(defaults)
      .map(([f, v]) => `\`${f}: ${JSON.stringify(v)}\``)
      .join(', ');
    lines.push(`| ${endpoint} | ${list} |`);
  }
  return lines.join('\n');
}
