import { type Command, help, UsageError } from './command.js';

// `switchyard usage`: the usage ledger's totals through a gateway's admin API
// (GET /admin/v1/usage), as a table, CSV or JSON, every page of them. The token comes from
// the environment, never from an argument, so that it stays out of the shell history and
// the process list.

const FORMATS = ['table', 'csv', 'json'] as const;
const TOKEN_ENV = 'SWITCHYARD_ADMIN_TOKEN';
/** Groups per page: the most the API gives. */
const PAGE_LIMIT = 10_000;
/** A walk that would take more pages than this is a cursor that does not move: stop rather than loop. */
const MAX_PAGES = 100_000;

export const usageCommand: Command = {
  summary: "print the usage ledger's totals (GET /admin/v1/usage) as a table, CSV or JSON",
  usage: `switchyard usage --admin-url URL [--from DATE] [--to DATE] [--group-by FIELDS] [--team TEAM]
                 [--key KEY] [--model MODEL] [--format table|csv|json]

Asks the gateway's admin listener at URL (e.g. http://127.0.0.1:9090) for the usage totals of
the UTC days from --from (inclusive, default the first of this month) to --to (exclusive,
default tomorrow), each an RFC 3339 date or date-time, grouped by FIELDS (a comma-separated
list of day, team, key, model, provider; default team,model). The admin token is read from
${TOKEN_ENV}; a team:<id> token sees its own team only. Every page is fetched
(${PAGE_LIMIT} groups each); CSV is printed page by page, as it arrives.`,
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
    url.searchParams.set('limit', String(PAGE_LIMIT));
    const token = process.env[TOKEN_ENV];
    const headers: Record<string, string> = token === undefined || token === '' ? {} : { authorization: `Bearer ${token}` };
    const rows: Array<Record<string, string | number>> = [];
    for (let page = 0; page < MAX_PAGES; page++) {
      const res = await fetch(url, { headers });
      const text = await res.text();
      if (res.status !== 200) {
        process.stderr.write(`switchyard usage: the gateway answered ${res.status}: ${errorMessage(text)}\n`);
        return 1;
      }
      let next: string | null;
      if (format === 'csv') {
        // Every page starts with the header line: printed once.
        process.stdout.write(page === 0 ? text : text.slice(text.indexOf('\r\n') + 2));
        next = res.headers.get('x-switchyard-next');
      } else {
        const body = JSON.parse(text) as { rows: Array<Record<string, string | number>>; next?: string | null };
        rows.push(...body.rows);
        next = body.next ?? null;
      }
      if (next === null) {
        if (format !== 'csv') process.stdout.write(format === 'json' ? `${JSON.stringify({ rows }, null, 2)}\n` : table(rows));
        return 0;
      }
      url.searchParams.set('after', next);
    }
    process.stderr.write(`switchyard usage: stopped after ${MAX_PAGES} pages: the gateway's cursor does not move\n`);
    return 1;
  },
};

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
