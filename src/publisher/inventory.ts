// The publisher's input: an inventory of providers (YAML or JSON), validated once here with
// zod. Unknown keys are refused, so a typo never silently means "default".
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { formatPath, readFileSlice } from '../contract/index.js';
import { PublishError, type PublishIssue } from './issues.js';

/** An inventory is a hand-edited list; a megabyte is far beyond any real one. */
export const MAX_INVENTORY_BYTES = 1024 * 1024;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const name = (what: string) => z.string().regex(NAME, `must be a ${what}: 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)`);
/** The contract's string rules, kept simple: no blank, no control characters, at most 256 bytes. */
const text = () =>
  z
    .string()
    .min(1, 'must not be empty')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s) && Buffer.byteLength(s) <= 256 && s.trim() !== '', {
      message: 'must be 1-256 bytes, not blank, without control characters',
    });
/**
 * The MCP specification's advised tool-name characters (1-128 of these): the gateway exposes
 * the name to its clients as is, so anything outside them could not be listed.
 */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const toolName = () => z.string().regex(TOOL_NAME, 'must be an MCP tool name: 1-128 of A-Z a-z 0-9 _ - .');
const kubernetesName = () =>
  z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'must be a Kubernetes object name (lowercase letters, digits, "-" and ".")');
const int = (min: number, max: number) => {
  const message = `must be a whole number ${min}-${max}`;
  return z.int(message).min(min, message).max(max, message);
};

export const providerStates = ['active', 'drain', 'withdrawn'] as const;
export type ProviderState = (typeof providerStates)[number];

const healthSchema = z.strictObject({
  // No user:password in the URL: the inventory is shown as read on /status.
  url: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .refine((u) => !/^[a-z]+:\/\/[^/]*@/i.test(u), 'must not carry credentials (user:password@)')
    .refine(
      (u) => !/[?&](access_token|token|api[_-]?key|key|secret|password|sig|signature)=/i.test(u),
      'must not carry a credential in its query',
    ),
  interval_ms: int(10, 3_600_000).default(2000),
  timeout_ms: int(1, 600_000).default(1000),
  unhealthy_after: int(1, 100).default(2),
  healthy_after: int(1, 100).default(3),
});

const providerSchema = z.strictObject({
  cluster: name('provider name'),
  site: text(),
  region: text(),
  models: z.array(text()).default([]),
  // Tools a `type: mcp` provider serves; rendered as mcp_tool candidates beside the models.
  tools: z.array(toolName()).default([]),
  state: z.enum(providerStates, 'must be one of: active, drain, withdrawn').default('active'),
  weight: int(1, 1000).default(1),
  // A reference only: which Secret key the gateway reads. There is no field for a value.
  credential: z
    .strictObject({
      name: kubernetesName(),
      namespace: kubernetesName(),
      key: z.string().regex(/^[-._a-zA-Z0-9]{1,253}$/, 'must be a Secret key (letters, digits, "-", "_" and ".")'),
    })
    .optional(),
  health: healthSchema.optional(),
});

export const inventorySchema = z
  .strictObject({
    network: text(),
    gateway: text(),
    namespace: text(),
    local_site: text(),
    local_region: text().optional(),
    selection_policy: z
      .strictObject({
        mode: z.enum(
          ['deterministic', 'roundRobin', 'random', 'weightedRandom'],
          'must be one of: deterministic, roundRobin, random, weightedRandom',
        ),
      })
      .optional(),
    providers: z.array(providerSchema),
  })
  .superRefine((inv, ctx) => {
    // Two entries for one (model, site, cluster) would render duplicate candidates, which the
    // contract refuses; say so here, at the inventory path, instead.
    const seen = new Map<string, number>();
    inv.providers.forEach((p, i) => {
      const key = `${p.cluster}\u0000${p.site}`;
      const first = seen.get(key);
      if (first !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['providers', i, 'cluster'], message: `repeats providers[${first}] (same cluster and site)` });
      } else seen.set(key, i);
      if (p.models.length === 0 && p.tools.length === 0) {
        ctx.addIssue({ code: 'custom', path: ['providers', i, 'models'], message: 'must list at least one model or tool' });
      }
      // A model and a tool may share a name: they are different kinds, so different candidates.
      for (const list of ['models', 'tools'] as const) {
        const names = new Set<string>();
        p[list].forEach((n, j) => {
          if (names.has(n)) ctx.addIssue({ code: 'custom', path: ['providers', i, list, j], message: 'listed twice' });
          names.add(n);
        });
      }
    });
  });

export type Inventory = z.infer<typeof inventorySchema>;
export type InventoryProvider = Inventory['providers'][number];
export type HealthCheck = NonNullable<InventoryProvider['health']>;

/**
 * Parses inventory text (YAML, or JSON, which YAML reads too). Throws a PublishError holding
 * every problem found, each at its path, so one run reports them all.
 */
export function parseInventory(source: string, where = 'inventory'): Inventory {
  if (source.trim() === '') throw new PublishError('inventory_invalid', `${where}: the file is empty`);
  const doc = parseDocument(source, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw invalid(
      where,
      doc.errors.map((e) => ({
        path: e.linePos ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '(document)',
        message: `YAML syntax error: ${e.code}`,
      })),
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new PublishError('inventory_invalid', `${where}: YAML cannot be expanded: ${(err as Error).message}`);
  }
  const parsed = inventorySchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.flatMap((issue): PublishIssue[] => {
    // One issue names every unknown key of an object: each is its own error, at its own path.
    if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => ({ path: pathOf([...issue.path, k]), message: 'unknown key' }));
    const message = issue.input === undefined && issue.code === 'invalid_type' ? 'required' : issue.message;
    return [{ path: pathOf(issue.path), message }];
  });
  throw invalid(where, issues.length > 0 ? issues : [{ path: '(top level)', message: 'invalid' }]);
}

function pathOf(path: readonly PropertyKey[]): string {
  return formatPath(path) || '(top level)';
}

/** One line for logs and `last_error` (every issue, `; ` apart); the CLI prints `issues` one a line. */
function invalid(where: string, issues: readonly PublishIssue[]): PublishError {
  return new PublishError('inventory_invalid', `${where}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, {
    subject: where,
    issues,
  });
}

/** Reads (bounded, through the contract's reader) and parses an inventory file. */
export async function readInventory(path: string): Promise<Inventory> {
  const read = await readFileSlice(path, 0, MAX_INVENTORY_BYTES + 1, 'inventory file');
  if (!read.ok) throw new PublishError(read.reason === 'missing' ? 'inventory_missing' : 'inventory_unreadable', read.message);
  if (read.size > MAX_INVENTORY_BYTES) {
    throw new PublishError('inventory_too_large', `inventory file ${JSON.stringify(path)}: larger than ${MAX_INVENTORY_BYTES} bytes`);
  }
  return parseInventory(read.bytes.toString('utf8'), `inventory file ${JSON.stringify(path)}`);
}
