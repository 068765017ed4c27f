// Ledger rows as the usage API writes them, JSON objects or CSV lines, rendered where they
// are read: on the read worker for SQLite, so that the gateway's event loop handles only
// finished text; batch by batch on the loop for Postgres. Pure functions, no imports: the
// worker thread loads this file as it is.

export type TextFormat = 'json' | 'csv';

/** How a database value is written: as text, text or null (empty in CSV), a number, micro-USD as USD, or 0/1 as a boolean. */
export type FieldKind = 'text' | 'text_or_null' | 'number' | 'usd' | 'boolean';

/** One output field: its name on the wire, the database column it comes from, and how it is written. */
export interface TextColumn {
  readonly name: string;
  readonly from: string;
  readonly kind: FieldKind;
}

/** A batch of rows: JSON objects joined by commas (no brackets), or CSV lines each ending in CRLF (no header). */
export function renderRows(rows: readonly Record<string, unknown>[], columns: readonly TextColumn[], format: TextFormat): string {
  if (format === 'csv') return rows.map((r) => `${columns.map((c) => csvField(fieldValue(r[c.from], c.kind))).join(',')}\r\n`).join('');
  const names = columns.map((c) => `${JSON.stringify(c.name)}:`);
  return rows.map((r) => `{${columns.map((c, i) => `${names[i]}${JSON.stringify(fieldValue(r[c.from], c.kind))}`).join(',')}}`).join(',');
}

/** The CSV header line for `columns`. */
export const csvHeader = (columns: readonly TextColumn[]): string => `${columns.map((c) => csvField(c.name)).join(',')}\r\n`;

function fieldValue(value: unknown, kind: FieldKind): string | number | boolean | null {
  if (kind === 'text') return String(value ?? '');
  if (kind === 'text_or_null') return value == null ? null : String(value);
  if (kind === 'boolean') return Number(value) === 1;
  return kind === 'usd' ? Number(value) / 1e6 : Number(value);
}

/**
 * RFC 4180 quoting, after OWASP's guard against formula injection: a text field that a
 * spreadsheet would read as a formula (it begins with =, +, -, @, a tab or a carriage
 * return) is prefixed with a single quote. Numbers are written as numbers.
 */
export function csvField(value: unknown): string {
  let text = String(value ?? '');
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
