import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Database, USAGE_GROUPS, type UsageFilter, type UsageGroup, usageRecordsPage, usageTotalsPage } from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import { sendPage } from './usage-export.js';

// The usage ledger under /admin/v1/usage: totals from the daily rollups, grouped as asked,
// and the raw rows, both page by page (JSON or CSV, written as the rows are read). An admin
// or read_only token sees every team; a team:<id> token sees its own team only, and naming
// another is 403. Every parameter is checked, and a bad one is a 400 that names it.

/** What admin-v1.ts hands over of a call: of its V1Request (admin-caller.ts), what this file reads. */
interface UsageCall {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly caller: { readonly id: string; readonly role: string };
}

/** What the config says of usage reads (`database.usage_max_range_days`). */
export interface UsageSettings {
  readonly maxRangeDays: number;
}

const TOTALS_PARAMS = new Set(['from', 'to', 'group_by', 'team', 'key', 'model', 'limit', 'after', 'format']);
const RECORDS_PARAMS = new Set(['from', 'to', 'team', 'key', 'model', 'limit', 'after', 'format']);
/** Page sizes: a group of totals is one small row, so its pages are larger than the raw rows'. */
const TOTALS_PAGE = { default: 1000, max: 10_000 } as const;
const RECORDS_PAGE = { default: 100, max: 1000 } as const;
const DAY_MS = 86_400_000;
/** RFC 3339: a full-date, or a date-time with its offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2})))?$/;

/** GET /admin/v1/usage and /admin/v1/usage/requests; `path` is what follows `usage`. */
export async function serveUsage(
  database: Database | null,
  settings: UsageSettings | null,
  call: UsageCall,
  method: string,
  path: readonly string[],
): Promise<void> {
  const [what, ...more] = path;
  if (more.length > 0 || (what !== undefined && what !== 'requests')) {
    throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/usage/${path.join('/')}`);
  }
  if (method !== 'GET') throw new SwitchyardError('method_not_allowed', 'this admin endpoint takes GET', null, { allow: 'GET' });
  if (database === null || settings === null) {
    throw new SwitchyardError('not_found', 'the usage ledger needs a database: set database.url in the config');
  }
  const query = new URL(call.req.url ?? '/', 'http://admin').searchParams;
  checkNames(query, what === undefined ? TOTALS_PARAMS : RECORDS_PARAMS);
  const filter = filterOf(query, call.caller);
  const format = formatOf(query);
  const { fromMs, toMs } = rangeOf(query, what === undefined, settings);
  if (what === undefined) {
    const groupBy = groupsOf(query.get('group_by'));
    const limit = limitOf(query.get('limit'), TOTALS_PAGE);
    const after = cursorOf(query.get('after'), groupBy);
    const page = await usageTotalsPage(
      database,
      { fromDay: day(fromMs), toDay: day(toMs) },
      filter,
      groupBy,
      after === undefined ? { limit } : { limit, after },
    );
    const next = page.next === null ? null : cursorText(page.next, groupBy);
    return sendPage(call.res, format, page.columns, page.text(format), next);
  }
  const limit = limitOf(query.get('limit'), RECORDS_PAGE);
  const after = cursorOf(query.get('after'), null);
  const page = await usageRecordsPage(
    database,
    { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() },
    filter,
    after === undefined ? { limit } : { limit, after },
  );
  const next = page.next === null ? null : cursorText(page.next, null);
  return sendPage(call.res, format, page.columns, page.text(format), next);
}

function checkNames(query: URLSearchParams, allowed: ReadonlySet<string>): void {
  for (const [name, value] of query) {
    if (!allowed.has(name)) throw invalid(name, `unknown parameter ${name} (this endpoint takes ${[...allowed].join(', ')})`);
    // No engine stores a NUL in text (Postgres refuses it): it can only be a mistake or a probe.
    if (value.includes('\0')) throw invalid(name, `${name} must not contain a NUL character`);
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
 * from the start of this UTC month to the end of today (totals) or to now (raw rows). A
 * range longer than `database.usage_max_range_days` is refused: it bounds what one cursor
 * walk may scan.
 */
function rangeOf(query: URLSearchParams, totals: boolean, settings: UsageSettings): { fromMs: number; toMs: number } {
  const nowMs = Date.now();
  const fromMs = timeOf(query, 'from') ?? Date.parse(`${day(nowMs).slice(0, 7)}-01T00:00:00Z`);
  const toMs = timeOf(query, 'to') ?? (totals ? Date.parse(`${day(nowMs + DAY_MS)}T00:00:00Z`) : nowMs + 1);
  if (toMs <= fromMs) throw invalid('to', 'to must be after from');
  if (toMs - fromMs > settings.maxRangeDays * DAY_MS) {
    throw invalid(
      'to',
      `the range from ${new Date(fromMs).toISOString()} to ${new Date(toMs).toISOString()} is longer than database.usage_max_range_days (${settings.maxRangeDays} days): ask for a shorter range`,
    );
  }
  return { fromMs, toMs };
}

/** A time that names a real calendar date and clock time: 2026-02-30 is refused, never read as March 2. */
function timeOf(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  const m = RFC3339.exec(value);
  const [year, month, dayOfMonth, hour, minute, second, offsetHour, offsetMinute] = (m?.slice(1) ?? []).map((v) =>
    v === undefined ? 0 : Number(v),
  ) as number[];
  const real =
    m !== null &&
    (month as number) >= 1 &&
    (month as number) <= 12 &&
    (dayOfMonth as number) >= 1 &&
    (dayOfMonth as number) <= daysIn(year as number, month as number) &&
    (hour as number) <= 23 &&
    (minute as number) <= 59 &&
    (second as number) <= 59 &&
    (offsetHour as number) <= 23 &&
    (offsetMinute as number) <= 59;
  const ms = real ? Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value.toUpperCase().replace(' ', 'T')) : NaN;
  if (!Number.isFinite(ms)) {
    throw invalid(name, `${name} must be a real RFC 3339 date (2026-12-01) or date-time (2026-12-01T08:00:00Z)`);
  }
  return ms;
}

/** Days in a month of the proleptic Gregorian calendar (day 0 of the next month is the last of this one). */
const daysIn = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate();

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

function limitOf(value: string | null, page: { readonly default: number; readonly max: number }): number {
  if (value === null) return page.default;
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > page.max) throw invalid('limit', `limit must be a whole number 1-${page.max}`);
  return limit;
}

/**
 * The cursor is the last row's sort key, opaque to the client: a raw page's time and
 * request id (`[at, request_id]`, as before), or a totals page's group values with the
 * grouping they belong to (`{group_by, after}`), so a cursor is never read against another.
 */
function cursorText(key: readonly string[], groupBy: readonly UsageGroup[] | null): string {
  const value = groupBy === null ? key : { group_by: groupBy.join(','), after: key };
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function cursorOf(value: string | null, groupBy: readonly UsageGroup[] | null): readonly string[] | undefined {
  if (value === null) return undefined;
  let parsed: unknown = null;
  if (/^[A-Za-z0-9_-]+$/.test(value)) {
    try {
      parsed = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    } catch {
      // answered below
    }
  }
  const key =
    groupBy === null
      ? parsed
      : typeof parsed === 'object' && parsed !== null && (parsed as { group_by?: unknown }).group_by === groupBy.join(',')
        ? (parsed as { after?: unknown }).after
        : null;
  const length = groupBy === null ? 2 : groupBy.length;
  if (
    length > 0 &&
    Array.isArray(key) &&
    key.length === length &&
    key.every((k): k is string => typeof k === 'string' && k.length <= 1024 && !k.includes('\0'))
  ) {
    return key;
  }
  throw invalid('after', `after must be a previous page's next${groupBy === null ? '' : ', asked with the same group_by'}`);
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const invalid = (param: string, message: string): SwitchyardError => new SwitchyardError('invalid_request', message, param);
