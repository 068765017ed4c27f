import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { hashKey } from '../governance/index.js';
import { type Command, help, UsageError } from './command.js';
import { exportConfig } from './export.js';

// The managed teams and keys from a shell: against a running gateway's admin API (the
// token from SWITCHYARD_ADMIN_TOKEN), or offline (a key's config line; the effective config
// with the database's teams and keys, for review in Git).

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const TOKEN_ENV = 'SWITCHYARD_ADMIN_TOKEN';

const adminOptions = { 'admin-url': { type: 'string' }, help } as const;
const limitOptions = {
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  'tokens-per-day': { type: 'string' },
  'budget-usd': { type: 'string' },
  'allowed-models': { type: 'string' },
} as const;

type Values = Record<string, string | boolean | undefined>;
// biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON, read field by field only to print it
type Json = Record<string, any>;

export function managedCommands(): Record<string, Command> {
  return {
    keys: {
      summary: 'create, list, revoke and rotate API keys (through a running gateway, or a config line offline)',
      usage: `switchyard keys create --team TEAM [--id ID] --offline
switchyard keys create --team TEAM [--id ID] [--rpm N] [--tpm N] [--tokens-per-day N] [--budget-usd N]
                       [--allowed-models a,b] [--expires-at TIME] --admin-url URL
switchyard keys list [--team TEAM] --admin-url URL
switchyard keys revoke ID --admin-url URL
switchyard keys rotate ID [--grace-s N] --admin-url URL

Against a running gateway's admin listener (URL, e.g. http://127.0.0.1:9090), with the
admin token from ${TOKEN_ENV}; the gateway needs a database (database.url). A new or
rotated key's secret is printed ONCE: the gateway keeps only its SHA-256.

--offline  (or no --admin-url) prints a new random key ONCE and the line to add under "keys:"
           in the config, which holds only its SHA-256; no gateway is involved. ID defaults to
           a random one.`,
      options: {
        ...adminOptions,
        ...limitOptions,
        team: { type: 'string', short: 't' },
        id: { type: 'string' },
        offline: { type: 'boolean' },
        'expires-at': { type: 'string' },
        'grace-s': { type: 'string' },
      },
      positionals: true,
      async run(values, positionals) {
        const [verb, id, ...extra] = positionals;
        if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')}`);
        // Without a gateway to ask, a key is made the offline way, as this command always did.
        if (verb === 'create' && (values.offline === true || values['admin-url'] === undefined)) return offlineKey(values);
        if (verb === 'create') {
          if (id !== undefined) throw new UsageError('give the key id as --id');
          const body = { ...limitsOf(values), team: required(values.team, '--team') } as Record<string, unknown>;
          if (typeof values.id === 'string') body.id = values.id;
          if (typeof values['expires-at'] === 'string') body.expires_at = values['expires-at'];
          const reply = await call(values, 'POST', 'keys', body);
          process.stdout.write(
            `# API key "${reply.id}" for team "${reply.team}". Shown once: the gateway keeps only its SHA-256.\n${reply.key}\n`,
          );
          return 0;
        }
        if (verb === 'list') {
          if (id !== undefined) throw new UsageError('keys list takes no id');
          const query = typeof values.team === 'string' ? `?team=${encodeURIComponent(values.team)}&limit=500` : '?limit=500';
          const rows = await everyPage(values, `keys${query}`);
          printTable(
            ['id', 'team', 'prefix', 'managed by', 'last used', 'expires', 'revoked'],
            rows.map((k) => [k.id, k.team, k.prefix ?? '-', k.managed_by, k.last_used_at ?? '-', k.expires_at ?? '-', k.revoked_at ?? '-']),
          );
          return 0;
        }
        if (verb === 'revoke' || verb === 'rotate') {
          const keyId = required(id, 'the key id');
          if (verb === 'revoke') {
            await call(values, 'POST', `keys/${encodeURIComponent(keyId)}/revoke`, {});
            process.stdout.write(`key "${keyId}" revoked\n`);
            return 0;
          }
          const grace = typeof values['grace-s'] === 'string' ? wholeNumber(values['grace-s'], '--grace-s') : 0;
          const reply = await call(values, 'POST', `keys/${encodeURIComponent(keyId)}/rotate`, { grace_s: grace });
          const until = reply.previous_secret_valid_until as string | null;
          process.stdout.write(
            `# New secret for key "${keyId}". Shown once.${until === null ? ' The old one has stopped working.' : ` The old one works until ${until}.`}\n${reply.key}\n`,
          );
          return 0;
        }
        throw new UsageError('expected "keys create", "keys list", "keys revoke ID" or "keys rotate ID"');
      },
    },
    teams: {
      summary: 'list, create and update teams through a running gateway',
      usage: `switchyard teams list --admin-url URL
switchyard teams create ID [--rpm N] [--tpm N] [--tokens-per-day N] [--budget-usd N] [--allowed-models a,b] --admin-url URL
switchyard teams update ID [the same flags] --admin-url URL

Against a running gateway's admin listener, with the admin token from ${TOKEN_ENV}. An
update changes only the limits it names.`,
      options: { ...adminOptions, ...limitOptions },
      positionals: true,
      async run(values, positionals) {
        const [verb, id, ...extra] = positionals;
        if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')}`);
        if (verb === 'list') {
          const rows = await everyPage(values, 'teams?limit=500');
          printTable(
            ['id', 'managed by', 'rpm', 'tpm', 'tokens/day', 'budget usd/month', 'allowed models'],
            rows.map((t) => [
              t.id,
              t.managed_by,
              t.rate_limit?.rpm ?? '-',
              t.rate_limit?.tpm ?? '-',
              t.quota?.tokens_per_day ?? '-',
              t.budget?.usd_per_month ?? '-',
              (t.allowed_models ?? ['*']).join(','),
            ]),
          );
          return 0;
        }
        if (verb === 'create' || verb === 'update') {
          const teamId = required(id, 'the team id');
          const body = teamBody(values, verb === 'update');
          const reply =
            verb === 'create'
              ? await call(values, 'POST', 'teams', { id: teamId, ...body })
              : await call(values, 'PATCH', `teams/${encodeURIComponent(teamId)}`, body);
          process.stdout.write(`team "${reply.id}" ${verb === 'create' ? 'created' : 'updated'}\n`);
          return 0;
        }
        throw new UsageError('expected "teams list", "teams create ID" or "teams update ID"');
      },
    },
    config: {
      summary: "print the effective config, the database's teams and keys included, as YAML",
      usage: `switchyard config export --config FILE

Prints FILE with the teams and keys of its database (database.url) joined in, keys as their
SHA-256, as YAML that "switchyard validate" accepts: the whole governance of the gateway in one
file, for review in Git. Secrets stay references; no key is ever printed in clear.`,
      options: { config: { type: 'string', short: 'c' }, help },
      positionals: true,
      async run(values, positionals) {
        if (positionals.length !== 1 || positionals[0] !== 'export') throw new UsageError('expected "config export"');
        return exportConfig(resolve(required(values.config, '--config')));
      },
    },
  };
}

function offlineKey(values: Values): number {
  const team = required(values.team, '--team');
  const id = typeof values.id === 'string' ? values.id : `key-${randomBytes(4).toString('hex')}`;
  for (const [flag, value] of [
    ['--team', team],
    ['--id', id],
  ] as const) {
    if (!ID.test(value)) throw new UsageError(`${flag} must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)`);
  }
  const key = `sy-${randomBytes(32).toString('base64url')}`;
  process.stdout.write(
    `# API key "${id}" for team "${team}". Shown once: the gateway keeps only its SHA-256.\n${key}\n` +
      `# Add under "keys:" in the gateway config (team "${team}" must be under "teams:"):\n` +
      `- { id: ${JSON.stringify(id)}, team: ${JSON.stringify(team)}, sha256: "${hashKey(key)}" }\n`,
  );
  return 0;
}

function limitsOf(values: Values): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof values.rpm === 'string') out.rpm = wholeNumber(values.rpm, '--rpm');
  if (typeof values.tpm === 'string') out.tpm = wholeNumber(values.tpm, '--tpm');
  if (typeof values['tokens-per-day'] === 'string') out.tokens_per_day = wholeNumber(values['tokens-per-day'], '--tokens-per-day');
  if (typeof values['budget-usd'] === 'string') out.budget_usd_per_month = amount(values['budget-usd'], '--budget-usd');
  if (typeof values['allowed-models'] === 'string') out.allowed_models = values['allowed-models'].split(',').filter((m) => m !== '');
  return out;
}

/** A team's fields from the same flags: rpm and tpm under rate_limit, the budget under budget. */
function teamBody(values: Values, patch: boolean): Record<string, unknown> {
  const limits = limitsOf(values);
  const body: Record<string, unknown> = {};
  const rate: Record<string, unknown> = {};
  if (limits.rpm !== undefined) rate.rpm = limits.rpm;
  if (limits.tpm !== undefined) rate.tpm = limits.tpm;
  if (Object.keys(rate).length > 0) body.rate_limit = rate;
  if (limits.tokens_per_day !== undefined) body.quota = { tokens_per_day: limits.tokens_per_day };
  if (limits.budget_usd_per_month !== undefined) body.budget = { usd_per_month: limits.budget_usd_per_month };
  if (limits.allowed_models !== undefined) body.allowed_models = limits.allowed_models;
  if (patch && Object.keys(body).length === 0)
    throw new UsageError('teams update needs at least one of --rpm, --tpm, --tokens-per-day, --budget-usd, --allowed-models');
  return body;
}

/** One admin API call; a refusal is printed with each field at fault, and exits 1. */
async function call(values: Values, method: string, path: string, body?: unknown): Promise<Json> {
  const base = required(values['admin-url'], '--admin-url').replace(/\/+$/, '');
  const token = process.env[TOKEN_ENV];
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined && token !== '') headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(`${base}/admin/v1/${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  } catch (err) {
    throw new CliFailure(
      `cannot reach ${base}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
    );
  }
  const text = await res.text();
  let parsed: Json = {};
  try {
    parsed = text === '' ? {} : (JSON.parse(text) as Json);
  } catch {
    throw new CliFailure(`${method} ${path}: HTTP ${res.status}, not JSON`);
  }
  if (!res.ok) {
    const error = parsed.error as { code?: string; message?: string; errors?: Array<{ path: string; message: string }> } | undefined;
    const fields = (error?.errors ?? []).map((e) => `\n  ${e.path === '' ? '' : `${e.path}: `}${e.message}`).join('');
    const hint = res.status === 401 ? ` (set ${TOKEN_ENV})` : '';
    throw new CliFailure(`${error?.code ?? `HTTP ${res.status}`}: ${error?.message ?? text}${hint}${fields}`);
  }
  return parsed;
}

async function everyPage(values: Values, path: string): Promise<Array<Json>> {
  const rows: Array<Json> = [];
  let next: string | null = null;
  for (;;) {
    const page = await call(values, 'GET', next === null ? path : `${path}&after=${encodeURIComponent(next)}`);
    rows.push(...(page.data as Array<Json>));
    next = page.next as string | null;
    if (next === null) return rows;
  }
}

/** A command that ran and failed (the gateway refused, or could not be reached): its message, exit 1. */
export class CliFailure extends Error {}

function printTable(head: readonly string[], rows: ReadonlyArray<ReadonlyArray<unknown>>): void {
  const cells = [head, ...rows.map((r) => r.map((c) => String(c)))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  for (const r of cells)
    process.stdout.write(
      `${r
        .map((c, i) => (c ?? '').padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
}

function required(value: string | boolean | undefined, what: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`${what} is required`);
  return value;
}

function wholeNumber(text: string, flag: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new UsageError(`${flag} must be a whole number`);
  return Number(text);
}

function amount(text: string, flag: string): number {
  const n = Number(text);
  if (text === '' || !Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be a number of USD, 0 or more`);
  return n;
}
