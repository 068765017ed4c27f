import { RE2JS } from 're2js';
import { z } from 'zod';
import { httpUrl, positiveInt, secretRefSchema } from './schema-parts.js';

// `guardrails`: named checks on prompts, answers, streams and MCP tool calls, and the lists
// that attach them to routes, teams, keys and the /mcp endpoint. A definition says what a
// guardrail detects and what a finding does; an attachment says where it runs. Every
// pattern is RE2 syntax and is compiled here, so a pattern that could backtrack (a
// backreference, a lookaround) never reaches a running gateway. See
// docs/decisions/0040-guardrails.md.

export const GUARDRAIL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const guardrailName = z.string().regex(GUARDRAIL_NAME, 'must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)');

export const PII_ENTITIES = ['email', 'phone', 'credit_card', 'iban', 'us_ssn', 'ip_address'] as const;
export type PiiEntity = (typeof PII_ENTITIES)[number];
export const SECRET_CATEGORIES = [
  'aws_access_key',
  'aws_secret_key',
  'github_token',
  'gitlab_token',
  'slack_token',
  'private_key',
  'jwt',
  'high_entropy',
] as const;
export type SecretCategory = (typeof SECRET_CATEGORIES)[number];

/** The types whose findings are spans of text, which can be replaced by placeholders. */
const MASKING_TYPES: ReadonlySet<string> = new Set(['pii', 'secrets', 'regex', 'webhook']);

const actionSchema = z.enum(['block', 'mask', 'warn'], { error: 'must be "block", "mask" or "warn"' });
export type GuardrailAction = z.infer<typeof actionSchema>;
const onErrorSchema = z.enum(['fail_closed', 'fail_open'], { error: 'must be "fail_closed" or "fail_open"' });
/** How a blocking output guardrail treats a stream: checked whole, per window, or after it was sent. */
const streamSchema = z.enum(['hold', 'window', 'after'], { error: 'must be "hold", "window" or "after"' }).default('window');
const windowChars = positiveInt.max(1_000_000).default(400);
const timeoutMs = positiveInt.max(600_000);
const headerName = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name');
/** A category name: what a block answer and an audit record call a finding. */
const categoryName = z.string().regex(/^[a-z0-9_]{1,64}$/, 'must be 1-64 of a-z 0-9 _');
/** An RE2 pattern; long enough for any sensible rule, short enough to bound compile time. */
const re2Pattern = z.string().min(1, 'must be a non-empty RE2 pattern').max(4096);

function uniqueList<T extends z.ZodType>(element: T, max: number) {
  return z
    .array(element)
    .min(1)
    .max(max)
    .refine((list) => new Set(list).size === list.length, 'lists a value twice');
}

const piiSchema = z.strictObject({
  type: z.literal('pii'),
  entities: uniqueList(z.enum(PII_ENTITIES, { error: `must be one of ${PII_ENTITIES.join(', ')}` }), PII_ENTITIES.length).default([
    ...PII_ENTITIES,
  ]),
  action: actionSchema.default('mask'),
  /** Put the originals back wherever the answer repeats a placeholder (mask only); the mapping lives for one request. */
  restore: z.boolean().default(false),
  stream: streamSchema,
  window_chars: windowChars,
  on_error: onErrorSchema.default('fail_closed'),
});

const secretsSchema = z.strictObject({
  type: z.literal('secrets'),
  categories: uniqueList(
    z.enum(SECRET_CATEGORIES, { error: `must be one of ${SECRET_CATEGORIES.join(', ')}` }),
    SECRET_CATEGORIES.length,
  ).default([...SECRET_CATEGORIES]),
  /** The high_entropy rule: a token this long, with at least this many bits of entropy per character. */
  entropy: z
    .strictObject({
      min_length: positiveInt.min(8).max(4096).default(32),
      min_entropy: z.number().min(0).max(8).default(4.0),
    })
    .prefault({}),
  action: actionSchema.default('block'),
  restore: z.boolean().default(false),
  stream: streamSchema,
  window_chars: windowChars,
});

const regexSchema = z
  .strictObject({
    type: z.literal('regex'),
    patterns: z.array(re2Pattern).min(1, 'give at least one pattern').max(100),
    /** A category per pattern, in order (the default is `pattern_<i>`). */
    categories: z.array(categoryName).max(100).optional(),
    action: actionSchema.default('block'),
    stream: streamSchema,
    window_chars: windowChars,
  })
  .superRefine((g, ctx) => {
    g.patterns.forEach((pattern, i) => {
      const problem = re2Problem(pattern);
      if (problem !== null) ctx.addIssue({ code: 'custom', path: ['patterns', i], message: problem });
    });
    if (g.categories !== undefined && g.categories.length !== g.patterns.length)
      ctx.addIssue({
        code: 'custom',
        path: ['categories'],
        message: `names ${g.categories.length} categories for ${g.patterns.length} patterns: give one per pattern, in order`,
      });
  });

const nemoSchema = z.strictObject({
  type: z.literal('nemo'),
  /** NeMo Guardrails' server; checks are POSTed to {base_url}/v1/guardrail/checks. */
  base_url: httpUrl,
  config_id: z.string().min(1).max(256),
  /** The `model` sent with each check; absent = the request's model. */
  model: z.string().min(1).max(256).optional(),
  /** block: the service's verdict is obeyed; warn: recorded only (a shadow run). */
  action: actionSchema.default('block'),
  timeout_ms: timeoutMs.default(2000),
  on_error: onErrorSchema.default('fail_closed'),
  headers: z.record(headerName, secretRefSchema).optional(),
  stream: streamSchema,
  window_chars: windowChars,
});

const webhookSchema = z.strictObject({
  type: z.literal('webhook'),
  url: httpUrl,
  /** Sent with every call, e.g. `authorization: {env: GUARD_TOKEN}`. */
  headers: z.record(headerName, secretRefSchema).default({}),
  /** block: block answers are obeyed and mask answers only recorded; mask: both are; warn: recorded only. */
  action: actionSchema.default('block'),
  timeout_ms: timeoutMs.default(1500),
  on_error: onErrorSchema.default('fail_open'),
  /** The largest body posted to the webhook, and the largest answer read; past it, on_error applies. */
  max_bytes: positiveInt.max(64 * 1024 * 1024).optional(),
  stream: streamSchema,
  window_chars: windowChars,
});

const judgeSchema = z
  .strictObject({
    type: z.literal('judge'),
    /** A model route of this gateway that answers whether the texts are safe. */
    route: z.string().min(1),
    /** The system message; `{{texts}}` in it is replaced by the checked texts (else they follow as the user message). */
    prompt: z.union(
      [z.strictObject({ file: z.string().min(1, 'must be a file path') }), z.strictObject({ text: z.string().min(1).max(65_536) })],
      {
        error: 'must be {file: PATH} or {text: PROMPT}',
      },
    ),
    /** RE2, matched against the judge's answer: a match means unsafe. */
    unsafe_when: re2Pattern.default('^unsafe'),
    action: actionSchema.default('block'),
    timeout_ms: timeoutMs.default(3000),
    on_error: onErrorSchema.default('fail_closed'),
    stream: streamSchema,
    window_chars: windowChars,
  })
  .superRefine((g, ctx) => {
    const problem = re2Problem(g.unsafe_when);
    if (problem !== null) ctx.addIssue({ code: 'custom', path: ['unsafe_when'], message: problem });
  });

const definitionSchema = z
  .discriminatedUnion('type', [piiSchema, secretsSchema, regexSchema, nemoSchema, webhookSchema, judgeSchema], {
    error: (issue) => (issue.code === 'invalid_union' ? 'must be one of pii, secrets, regex, nemo, webhook, judge' : undefined),
  })
  .superRefine((g, ctx) => {
    if (g.action === 'mask' && !MASKING_TYPES.has(g.type))
      ctx.addIssue({
        code: 'custom',
        path: ['action'],
        message: `a ${g.type} guardrail cannot mask (its verdict names no span of text): use block or warn`,
      });
    if ('restore' in g && g.restore && g.action !== 'mask')
      ctx.addIssue({ code: 'custom', path: ['restore'], message: `applies only with action: mask (this one is ${g.action})` });
  });

/** `guardrails.<name>`, by name. */
export const guardrailsSchema = z.record(guardrailName, definitionSchema);

const nameList = z
  .array(guardrailName)
  .max(64)
  .refine((list) => new Set(list).size === list.length, 'lists a guardrail twice');

/** `guardrails` of a route, a team or a key: added to each other's, never removing one. */
export const guardrailAttachmentSchema = z.strictObject({
  /** Run on what the caller sends. */
  input: nameList.optional(),
  /** Run on what comes back, streamed or not. */
  output: nameList.optional(),
});

/** `mcp.guardrails`: on a tools/call's arguments (before the server is called) and on its result. */
export const mcpGuardrailAttachmentSchema = z.strictObject({
  arguments: nameList.optional(),
  results: nameList.optional(),
});

export type GuardrailsConfig = z.infer<typeof guardrailsSchema>;
export type GuardrailConfig = z.infer<typeof definitionSchema>;
export type PiiGuardrailConfig = z.infer<typeof piiSchema>;
export type SecretsGuardrailConfig = z.infer<typeof secretsSchema>;
export type RegexGuardrailConfig = z.infer<typeof regexSchema>;
export type NemoGuardrailConfig = z.infer<typeof nemoSchema>;
export type WebhookGuardrailConfig = z.infer<typeof webhookSchema>;
export type JudgeGuardrailConfig = z.infer<typeof judgeSchema>;
export type GuardrailAttachmentConfig = z.infer<typeof guardrailAttachmentSchema>;
export type McpGuardrailAttachmentConfig = z.infer<typeof mcpGuardrailAttachmentSchema>;

const PATTERN_SHOWN = 120;

/**
 * The most instructions one compiled pattern may have. RE2's time is linear in the text but
 * also in the pattern's size: finding where `\pL{500}` matches costs ~9 µs per character of
 * text (9 s for a 1 MB prompt), while rules as people write them (`sk-[A-Za-z0-9]{20,}`,
 * `(?i)ignore (all|previous) instructions`) are under 50.
 */
export const MAX_PATTERN_INSTRUCTIONS = 500;

/**
 * Why RE2 refuses a pattern, naming the pattern, or null when it compiles. RE2 has no
 * backreferences or lookaround because they are what makes a match take exponential time;
 * those two get a plain reason, anything else RE2's own.
 */
export function re2Problem(pattern: string): string | null {
  const shown = pattern.length > PATTERN_SHOWN ? `${pattern.slice(0, PATTERN_SHOWN)}…` : pattern;
  let size: number;
  try {
    size = RE2JS.compile(pattern).matcher('').programSize();
  } catch (error) {
    return `RE2 cannot compile "${shown}": ${re2Reason(error)}`;
  }
  if (size > MAX_PATTERN_INSTRUCTIONS)
    return `"${shown}" compiles to ${size} RE2 instructions, more than ${MAX_PATTERN_INSTRUCTIONS}: matching time grows with a pattern's size; prefer {n,} or + to a large {n}`;
  return null;
}

function re2Reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // re2js quotes the offending fragment: `\1`, `(?=`, `(?<!a)b`.
  const fragment = /`([^`]*)`/.exec(message)?.[1] ?? '';
  if (/^\\([1-9]|k<|g)/.test(fragment)) return 'backreferences are not supported';
  if (/^\(\?<?[=!]/.test(fragment)) return 'lookahead and lookbehind are not supported';
  return message.replace(/^error parsing regexp: /, '');
}

type Attachment = { readonly input?: readonly string[]; readonly output?: readonly string[] } | undefined;

interface GuardrailReferences {
  readonly guardrails?: Readonly<Record<string, { readonly type: string; readonly route?: string }>>;
  readonly routing?: { readonly routes?: Readonly<Record<string, { readonly guardrails?: Attachment }>> };
  readonly teams?: Readonly<Record<string, { readonly guardrails?: Attachment }>>;
  readonly keys?: ReadonlyArray<{ readonly guardrails?: Attachment }>;
  readonly mcp?: { readonly guardrails?: { readonly arguments?: readonly string[]; readonly results?: readonly string[] } };
}

/**
 * Every attached name is a defined guardrail, and every judge asks a route that exists and
 * has no judge of its own (it would ask itself). Paths name the reference. In overlay mode
 * the routes come from the overlay, so a judge's route is checked when that is read.
 */
export function checkGuardrailReferences(config: GuardrailReferences, ctx: z.RefinementCtx): void {
  const defined = config.guardrails ?? {};
  const refer = (names: readonly string[] | undefined, path: (string | number)[]): void => {
    names?.forEach((name, i) => {
      if (defined[name] === undefined)
        ctx.addIssue({ code: 'custom', path: [...path, i], message: `unknown guardrail "${name}" (not under guardrails)` });
    });
  };
  const attached = (a: Attachment, path: (string | number)[]): void => {
    refer(a?.input, [...path, 'guardrails', 'input']);
    refer(a?.output, [...path, 'guardrails', 'output']);
  };
  const routes = config.routing?.routes;
  for (const [name, route] of Object.entries(routes ?? {})) attached(route.guardrails, ['routing', 'routes', name]);
  for (const [id, team] of Object.entries(config.teams ?? {})) attached(team.guardrails, ['teams', id]);
  for (const [i, key] of (config.keys ?? []).entries()) attached(key.guardrails, ['keys', i]);
  refer(config.mcp?.guardrails?.arguments, ['mcp', 'guardrails', 'arguments']);
  refer(config.mcp?.guardrails?.results, ['mcp', 'guardrails', 'results']);
  if (routes === undefined) return;
  for (const [name, g] of Object.entries(defined)) {
    if (g.type !== 'judge' || g.route === undefined) continue;
    const route = routes[g.route];
    if (route === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['guardrails', name, 'route'],
        message: `unknown route "${g.route}" (not under routing.routes)`,
      });
      continue;
    }
    const own = [...(route.guardrails?.input ?? []), ...(route.guardrails?.output ?? [])];
    const judge = own.find((other) => defined[other]?.type === 'judge');
    if (judge !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['guardrails', name, 'route'],
        message: `route "${g.route}" has a judge guardrail of its own ("${judge}"): a judge's questions would ask a judge in turn`,
      });
  }
}
