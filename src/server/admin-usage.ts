import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Database,
  USAGE_GROUPS,
  type UsageCursor,
  type UsageFilter,
  type UsageGroup,
  type UsageRecord,
  usageRecords,
  usageTotals,
} from '../database/index.js';
import { SwitchyardError } from '../errors.js';

// The usage ledger under /admin/v1/usage: totals from the daily rollups, grouped as asked
// (JSON or CSV), and the raw rows page by page. An admin or read_only token sees every team;
// a team:<id> token sees its own team only, and naming another is 403. Every parameter is
// checked, and a bad one is a 400 that names it.

/** What admin-v1.ts hands over of a call (its V1Request: this file may not import that one). */
interface UsageCall {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly caller: { readonly id: string; readonly role: string };
}

const TOTALS_PARAMS = new Set(['from', 'to', 'group_by', 'team', 'key', 'model', 'format']);
const RECORDS_PARAMS = new Set(['from', 'to', 'team', 'key', 'model', 'limit', 'after', 'format']);
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;
const DAY_MS = 86_400_000;
/** RFC 3339: a full-date, or a date-time with its offset. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2}))?$/;
const TOTAL_COLUMNS = ['requests', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cost_usd'] as const;
const RECORD_COLUMNS = [
  'at',
  'request_id',
  'team',
  'key',
  'endpoint',
  'model',
  'provider',
  'candidate',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cost_usd',
  'status',
  'partial',
  'duration_ms',
] as const;

/** GET /admin/v1/usage and /admin/v1/usage/requests; `path` is what follows `usage`. */
export async function serveUsage(database: Database | null, call: UsageCall, method: string, path: readonly string[]): Promise<void> {
  const [what, ...more] = path;
  if (more.length > 0 || (what !== undefined && what !== 'requests')) {
    throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/usage/${path.join('/')}`);
  }
  if (method !== 'GET') throw new SwitchyardError('method_not_allowed', 'this admin endpoint takes GET', null, { allow: 'GET' });
  if (database === null) throw new SwitchyardError('not_found', 'the usage ledger needs a database: set database.url in the config');
  const query = new URL(call.req.url ?? '/', 'http://admin').searchParams;
  checkNames(query, what === undefined ? TOTALS_PARAMS : RECORDS_PARAMS);
  const filter = filterOf(query, call.caller);
  const format = formatOf(query);
  const { fromMs, toMs } = rangeOf(query, what === undefined);
  if (what === undefined) {
    const groupBy = groupsOf(query.get('group_by'));
    const totals = await usageTotals(database, { fromDay: day(fromMs), toDay: day(toMs) }, filter, groupBy);
    const rows = totals.map((t) => ({
      ...Object.fromEntries(groupBy.map((g) => [g, t.group[g] ?? ''])),
      requests: t.requests,
      input_tokens: t.inputTokens,
      output_tokens: t.outputTokens,
      cache_read_tokens: t.cacheReadTokens,
      cache_write_tokens: t.cacheWriteTokens,
      cost_usd: t.costMicroUsd / 1e6,
    }));
    return format === 'csv' ? sendCsv(call.res, [...groupBy, ...TOTAL_COLUMNS], rows) : sendJson(call.res, { rows });
  }
  const limit = limitOf(query.get('limit'));
  const after = cursorOf(query.get('after'));
  const page = await usageRecords(
    database,
    { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() },
    filter,
    after === undefined ? { limit } : { limit, after },
  );
  const rows = page.rows.map(recordView);
  const next = page.next === null ? null : cursorText(page.next);
  if (format === 'csv') return sendCsv(call.res, RECORD_COLUMNS, rows, next);
  sendJson(call.res, { rows, next });
}

function checkNames(query: URLSearchParams, allowed: ReadonlySet<string>): void {
  for (const name of query.keys()) {
    if (!allowed.has(name)) throw invalid(name, `unknown parameter ${name} (this endpoint takes ${[...allowed].join(', ')})`);
  }
  for (const name of allowed) if (query.getAll(name).length > 1) throw invalid(name, `${name} is given more than once`);
}

/** The team, key and model filters; a team token is held to its own team. */
function filterOf(query: URLSearchParams, caller: UsageCall['caller']): UsageFilter {
  const own = caller.role.startsWith('team:') ? caller.role.slice('team:'.length) : null;
  if (own === null && caller.role !== 'admin' && caller.role !== 'read_only') {
    throw new SwitchyardError('forbidden', `admin token "${caller.id}" (role ${caller.role}) may not read usage`);
  }
  const team = nonEmpty(query, 'team');
  if (own !== null && team !== undefined && team !== own) {
    throw new SwitchyardError('forbidden', `admin token "${caller.id}" may read team "${own}" only`);
  }
  const keyId = nonEmpty(query, 'key');
  const model = nonEmpty(query, 'model');
  const scoped = own ?? team;
  return {
    ...(scoped === undefined ? {} : { team: scoped }),
    ...(keyId === undefined ? {} : { keyId }),
    ...(model === undefined ? {} : { model }),
  };
}

function nonEmpty(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  if (value === '' || value.length > 256) throw invalid(name, `${name} must be 1-256 characters`);
  return value;
}

function formatOf(query: URLSearchParams): 'json' | 'csv' {
  const format = query.get('format') ?? 'json';
  if (format !== 'json' && format !== 'csv') throw invalid('format', 'format must be json or csv');
  return format;
}

/**
 * `from` (inclusive) and `to` (exclusive), each an RFC 3339 date or date-time. By default
 * from the start of this UTC month to the end of today (totals) or to now (raw rows).
 */
function rangeOf(query: URLSearchParams, totals: boolean): { fromMs: number; toMs: number } {
  const nowMs = Date.now();
  const fromMs = timeOf(query, 'from') ?? Date.parse(`${day(nowMs).slice(0, 7)}-01T00:00:00Z`);
  const toMs = timeOf(query, 'to') ?? (totals ? Date.parse(`${day(nowMs + DAY_MS)}T00:00:00Z`) : nowMs + 1);
  if (toMs <= fromMs) throw invalid('to', 'to must be after from');
  return { fromMs, toMs };
}

function timeOf(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  const ms = RFC3339.test(value) ? Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value.toUpperCase().replace(' ', 'T')) : NaN;
  if (!Number.isFinite(ms)) throw invalid(name, `${name} must be an RFC 3339 date (2026-12-01) or date-time (2026-12-01T08:00:00Z)`);
  return ms;
}

function groupsOf(value: string | null): UsageGroup[] {
  if (value === null || value === '') return [];
  const groups: UsageGroup[] = [];
  for (const part of value.split(',')) {
    const group = USAGE_GROUPS.find((g) => g === part.trim());
    if (group === undefined) throw invalid('group_by', `group_by takes a comma-separated list of ${USAGE_GROUPS.join(', ')}`);
    if (groups.includes(group)) throw invalid('group_by', `group_by names ${group} twice`);
    groups.push(group);
  }
  return groups;
}

function limitOf(value: string | null): number {
  if (value === null) return DEFAULT_PAGE;
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > MAX_PAGE) throw invalid('limit', `limit must be a whole number 1-${MAX_PAGE}`);
  return limit;
}

/** The cursor is the last row's time and request id, opaque to the client. */
function cursorText(cursor: UsageCursor): string {
  return Buffer.from(JSON.stringify([cursor.at, cursor.requestId])).toString('base64url');
}

function cursorOf(value: string | null): UsageCursor | undefined {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && typeof parsed[1] === 'string') {
      return { at: parsed[0], requestId: parsed[1] };
    }
  } catch {
    // answered below
  }
  throw invalid('after', "after must be a previous page's next");
}

function recordView(r: UsageRecord): Record<(typeof RECORD_COLUMNS)[number], string | number | boolean> {
  return {
    at: r.at,
    request_id: r.requestId,
    team: r.team,
    key: r.keyId,
    endpoint: r.endpoint,
    model: r.model,
    provider: r.provider,
    candidate: r.candidate,
    input_tokens: r.inputTokens,
    output_tokens: r.outputTokens,
    cache_read_tokens: r.cacheReadTokens,
    cache_write_tokens: r.cacheWriteTokens,
    cost_usd: r.costMicroUsd / 1e6,
    status: r.status,
    partial: r.partial,
    duration_ms: r.durationMs,
  };
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const invalid = (param: string, message: string): SwitchyardError => new SwitchyardError('invalid_request', message, param);

function sendJson(res: ServerResponse, value: unknown): void {
  send(res, JSON.stringify(value), 'application/json', {});
}

/** A header line, then one line per row (RFC 4180 quoting); a raw page's next cursor goes in a header. */
function sendCsv(
  res: ServerResponse,
  columns: readonly string[],
  rows: ReadonlyArray<Record<string, unknown>>,
  next: string | null = null,
): void {
  const lines = [columns.join(','), ...rows.map((r) => columns.map((c) => csvField(r[c])).join(','))];
  send(res, `${lines.join('\r\n')}\r\n`, 'text/csv; charset=utf-8', next === null ? {} : { 'x-switchyard-next': next });
}

function csvField(value: unknown): string {
  const text = String(value ?? '');
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function send(res: ServerResponse, body: string, contentType: string, headers: Record<string, string>): void {
  res.writeHead(200, { ...headers, 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}
