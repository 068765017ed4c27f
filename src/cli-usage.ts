import { type Command, help, UsageError } from './cli-command.js';

// `switchyard usage`: the usage ledger's totals through a gateway's admin API
// (GET /admin/v1/usage), as a table, CSV or JSON. The token comes from the environment,
// never from an argument, so that it stays out of the shell history and the process list.

const FORMATS = ['table', 'csv', 'json'] as const;
type Format = (typeof FORMATS)[number];
const TOKEN_ENV = 'SWITCHYARD_ADMIN_TOKEN';

export const usageCommand: Command = {
  summary: "print the usage ledger's totals (GET /admin/v1/usage) as a table, CSV or JSON",
  usage: `switchyard usage --admin-url URL [--from DATE] [--to DATE] [--group-by FIELDS] [--team TEAM]
                 [--key KEY] [--model MODEL] [--format table|csv|json]

Asks the gateway's admin listener at URL (e.g. http://127.0.0.1:9090) for the usage totals of
the UTC days from --from (inclusive, default the first of this month) to --to (exclusive,
default tomorrow), each an RFC 3339 date or date-time, grouped by FIELDS (a comma-separated
list of day, team, key, model, provider; default team,model). The admin token is read from
${TOKEN_ENV}; a team:<id> token sees its own team only.`,
  options: {
    'admin-url': { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    'group-by': { type: 'string' },
    team: { type: 'string' },
    key: { type: 'string' },
    model: { type: 'string' },
    format: { type: 'string' },
    help,
  },
  async run(values) {
    const adminUrl = values['admin-url'];
    if (typeof adminUrl !== 'string' || !URL.canParse(adminUrl)) throw new UsageError('--admin-url must be the admin listener URL');
    const format = FORMATS.find((f) => f === (values.format ?? 'table'));
    if (format === undefined) throw new UsageError(`--format must be one of ${FORMATS.join(', ')}`);
    const url = new URL('/admin/v1/usage', adminUrl);
    url.searchParams.set('group_by', typeof values['group-by'] === 'string' ? values['group-by'] : 'team,model');
    for (const [flag, param] of [
      ['from', 'from'],
      ['to', 'to'],
      ['team', 'team'],
      ['key', 'key'],
      ['model', 'model'],
    ] as const) {
      const value = values[flag];
      if (typeof value === 'string') url.searchParams.set(param, value);
    }
    if (format === 'csv') url.searchParams.set('format', 'csv');
    const token = process.env[TOKEN_ENV];
    const res = await fetch(url, { headers: token === undefined || token === '' ? {} : { authorization: `Bearer ${token}` } });
    const text = await res.text();
    if (res.status !== 200) {
      process.stderr.write(`switchyard usage: the gateway answered ${res.status}: ${errorMessage(text)}\n`);
      return 1;
    }
    process.stdout.write(render(format, text));
    return 0;
  },
};

function render(format: Format, text: string): string {
  if (format === 'csv') return text;
  const body = JSON.parse(text) as { rows: Array<Record<string, string | number>> };
  if (format === 'json') return `${JSON.stringify(body, null, 2)}\n`;
  return table(body.rows);
}

/** Columns padded to their widest cell; numbers right-aligned. */
function table(rows: ReadonlyArray<Record<string, string | number>>): string {
  if (rows.length === 0) return 'no usage in that range\n';
  const columns = Object.keys(rows[0] as object);
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => (row[i] as string).length)));
  const numeric = columns.map((c) => typeof (rows[0] as Record<string, unknown>)[c] === 'number');
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => (numeric[i] ? v.padStart(widths[i] as number) : v.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return `${[line(columns), ...cells.map(line)].join('\n')}\n`;
}

function cell(value: string | number | undefined): string {
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(6);
  return value ?? '';
}

function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } };
    return body.error?.message ?? text;
  } catch {
    return text.slice(0, 500);
  }
}
