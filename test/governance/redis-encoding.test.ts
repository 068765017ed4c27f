import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Limits, Scope } from '../../src/governance/index.js';
import {
  COUNTERS_TTL_MS,
  decodeReserves,
  decodeStatus,
  encodeReserves,
  encodeSettles,
  encodeStatus,
  type KeysOf,
  type ReserveEntry,
  type ScriptCall,
  type ScriptClock,
  scopeKeys,
} from '../../src/governance/redis-encoding.js';
import type { Reservation } from '../../src/governance/store.js';

// The redis store's wire format without Redis: what each script call sends (KEYS, ARGV, laid
// out as lua/*.lua read them) and how each reply becomes the store's results. The store
// suite runs the same calls against a real Redis; here each field's place is pinned.

const T0 = Date.UTC(2026, 10, 15, 12, 0, 0);
const TTL = 3_600_000;
const keysOf: KeysOf = (s) => scopeKeys('sy:', s);
const at = (nowMs: number): ScriptClock => ({ kind: 'caller', nowMs });
const REDIS: ScriptClock = { kind: 'redis' };
const DEADLINE = T0 + 900;

const team = (id: string, limits: Limits = {}): Scope => ({ kind: 'team', id, team: id, limits });
const key = (id: string, teamId: string, limits: Limits = {}): Scope => ({ kind: 'key', id, team: teamId, limits });
const entry = (id: string, scopes: Scope[], tokens = 10, costMicroUsd = 0, nowMs = T0): ReserveEntry => ({
  id,
  input: { scopes, tokens, costMicroUsd, nowMs },
});

interface ReadReservation {
  readonly id: string;
  readonly tokens: number;
  readonly cost: number;
  readonly scopes: Array<{ keys: string[]; limits: number[] }>;
}

/**
 * The reserve script's ARGV read back the way lua/reserve.lua reads it (a = 6, the limit
 * sets, m, then each reservation), each scope number resolved to its KEYS triple.
 */
function readReserveCall({ keys, args }: ScriptCall): { head: unknown[]; reservations: ReadReservation[] } {
  const limitSets: number[][] = [];
  let a = 5;
  const sets = Number(args[a]);
  for (let l = 0; l < sets; l++) limitSets.push(args.slice(a + 1 + 5 * l, a + 6 + 5 * l).map(Number));
  a += 1 + 5 * sets;
  const m = Number(args[a]);
  a += 1;
  const reservations: ReadReservation[] = [];
  for (let r = 0; r < m; r++) {
    const [id, tokens, cost, n] = args.slice(a, a + 4);
    a += 4;
    const scopes: ReadReservation['scopes'] = [];
    for (let i = 0; i < Number(n); i++) {
      const k = (Number(args[a]) - 1) * 3;
      const limits = limitSets[Number(args[a + 1]) - 1];
      assert.ok(limits !== undefined, `limit set ${String(args[a + 1])} is sent`);
      assert.ok(k + 3 <= keys.length, `scope number ${String(args[a])} is in KEYS`);
      scopes.push({ keys: keys.slice(k, k + 3), limits });
      a += 2;
    }
    reservations.push({ id: String(id), tokens: Number(tokens), cost: Number(cost), scopes });
  }
  assert.equal(a, args.length, 'nothing follows the last reservation');
  return { head: args.slice(0, 5), reservations };
}

/** The reply's head: decided, at `nowMs` (Redis's clock read the same), on that UTC day and month. */
const decidedAt = (nowMs = T0, day = '20261115', month = '202611'): Array<number | string> => [1, nowMs, nowMs, day, month];
/** The results of a reply that was decided (not past its deadline). */
function decoded(reply: Array<number | string>, entries: readonly ReserveEntry[]) {
  const out = decodeReserves(reply, entries);
  assert.ok(!out.expired);
  return out.results;
}
const admitted = (warnMask = 0): number[] => [1, warnMask, 0, 0];
const windowOf = (requests: number, oldest: number, tokens: number): number[] => [requests, oldest, tokens, oldest];

test('a scope has three keys under the prefix, hash-tagged by team, and a key scope is named by its id', () => {
  assert.deepEqual(scopeKeys('sy:', team('platform')), ['sy:{platform}:t:log', 'sy:{platform}:t:counters', 'sy:{platform}:t:resv']);
  assert.deepEqual(scopeKeys('p:', key('ci-bot', 'platform')), [
    'p:{platform}:k:ci-bot:log',
    'p:{platform}:k:ci-bot:counters',
    'p:{platform}:k:ci-bot:resv',
  ]);
});

test('one reserve sends the batch time, its deadline, window, counters TTL, reservation TTL, then its limits', () => {
  const call = encodeReserves(
    at(T0),
    DEADLINE,
    [entry('r1', [team('platform', { rpm: 60, tpm: 1000, tokensPerDay: 5000, budgetMicroUsdPerMonth: 9 })], 42, 7)],
    TTL,
    keysOf,
  );
  assert.deepEqual(call.keys, scopeKeys('sy:', team('platform')));
  assert.deepEqual(call.args, [T0, DEADLINE, 60_000, COUNTERS_TTL_MS, TTL, 1, 60, 1000, 5000, 9, 0, 1, 'r1', 42, 7, 1, 1, 1]);
});

test('a missing limit is sent as -1, a zero limit as 0, and warn-on-budget as 1', () => {
  const call = encodeReserves(
    at(T0),
    DEADLINE,
    [
      entry('a', [team('none')]),
      entry('b', [team('zero', { rpm: 0, tpm: 0, tokensPerDay: 0, budgetMicroUsdPerMonth: 0 })]),
      entry('c', [team('warn', { budgetMicroUsdPerMonth: 5, budgetOnExceeded: 'warn' })]),
    ],
    TTL,
    keysOf,
  );
  const { reservations } = readReserveCall(call);
  assert.deepEqual(
    reservations.map((r) => r.scopes[0]?.limits),
    [
      [-1, -1, -1, -1, 0],
      [0, 0, 0, 0, 0],
      [-1, -1, -1, 5, 1],
    ],
  );
});

test('a batch of several reservations, teams and keys round-trips through the layout the script reads', () => {
  const platform = team('platform', { rpm: 10 });
  const bot = key('bot', 'platform', { tpm: 500 });
  const other = team('research', { budgetMicroUsdPerMonth: 1_000_000 });
  const entries = [
    entry('r1', [platform, bot], 100, 3),
    entry('r2', [platform], 5, 0),
    entry('r3', [other], 0, 0),
    entry('r4', [platform, bot], 1, 1),
  ];
  const call = encodeReserves(at(T0), DEADLINE, entries, TTL, keysOf);
  // Each distinct scope's keys once, in order of first use.
  assert.deepEqual(call.keys, [...keysOf(platform), ...keysOf(bot), ...keysOf(other)]);
  const { head, reservations } = readReserveCall(call);
  assert.deepEqual(head, [T0, DEADLINE, 60_000, COUNTERS_TTL_MS, TTL]);
  assert.deepEqual(
    reservations.map((r) => [r.id, r.tokens, r.cost, r.scopes.map((s) => s.keys[0])]),
    [
      ['r1', 100, 3, ['sy:{platform}:t:log', 'sy:{platform}:k:bot:log']],
      ['r2', 5, 0, ['sy:{platform}:t:log']],
      ['r3', 0, 0, ['sy:{research}:t:log']],
      ['r4', 1, 1, ['sy:{platform}:t:log', 'sy:{platform}:k:bot:log']],
    ],
  );
  assert.deepEqual(reservations[3]?.scopes[1]?.limits, [-1, 500, -1, -1, 0]);
  // Three limit sets, each sent once however many reservations use it.
  assert.equal(call.args[5], 3);
});

test('two scope objects of one team share its keys but each sends its own limits (a reload mid-batch)', () => {
  const before = team('platform', { rpm: 10 });
  const after = team('platform', { rpm: 20 });
  const call = encodeReserves(at(T0), DEADLINE, [entry('old', [before]), entry('new', [after])], TTL, keysOf);
  assert.equal(call.keys.length, 3, 'one key triple');
  const { reservations } = readReserveCall(call);
  assert.deepEqual(
    reservations.map((r) => [r.scopes[0]?.keys[1], r.scopes[0]?.limits[0]]),
    [
      ['sy:{platform}:t:counters', 10],
      ['sy:{platform}:t:counters', 20],
    ],
  );
});

test('large integer costs, budgets and token counts pass unchanged', () => {
  const big = Number.MAX_SAFE_INTEGER;
  const call = encodeReserves(at(T0), DEADLINE, [entry('r', [team('rich', { budgetMicroUsdPerMonth: big })], 2 ** 40, big)], TTL, keysOf);
  const { reservations } = readReserveCall(call);
  assert.equal(reservations[0]?.cost, big);
  assert.equal(reservations[0]?.tokens, 2 ** 40);
  assert.equal(reservations[0]?.scopes[0]?.limits[3], big);
});

test("on Redis's clock the batch sends no time of its own (-1: the script reads TIME), and no deadline is sent as -1", () => {
  const call = encodeReserves(REDIS, -1, [entry('a', [team('t')], 10, 0, T0 + 123_456)], TTL, keysOf);
  assert.deepEqual(call.args.slice(0, 2), [-1, -1]);
});

test('a reply that ran past its deadline is read as expired, with the Redis time it ran at, and yields no results', () => {
  assert.deepEqual(decodeReserves([0, DEADLINE + 7], [entry('a', [team('t')])]), { expired: true, redisNowMs: DEADLINE + 7 });
});

test("the reservation's time, day and month are the ones the script decided at, not the caller's", () => {
  const late = Date.UTC(2026, 11, 31, 23, 59, 59, 999);
  const reply = decodeReserves(
    [1, late + 1, late + 2, '20270101', '202701', ...admitted(), ...windowOf(1, late + 1, 10)],
    [entry('a', [team('t')], 10, 0, late - 5000)],
  );
  assert.ok(!reply.expired);
  assert.equal(reply.redisNowMs, late + 2);
  const [r] = reply.results;
  assert.ok(r?.ok);
  assert.deepEqual([r.reservation.atMs, r.reservation.day, r.reservation.month], [late + 1, '20270101', '202701']);
});

test('an admitted reply becomes a reservation decided at the batch time, with its rate-limit view', () => {
  const platform = team('platform', { rpm: 10, tpm: 1000 });
  const entries = [entry('r1', [platform], 100, 250)];
  const nowMs = T0 + 3;
  const [result] = decoded([...decidedAt(nowMs), ...admitted(), ...windowOf(4, T0 - 20_000, 300)], entries);
  assert.ok(result?.ok);
  assert.deepEqual(result.reservation, {
    id: 'r1',
    scopes: [platform],
    atMs: nowMs,
    tokens: 100,
    costMicroUsd: 250,
    day: '20261115',
    month: '202611',
    enforced: true,
  });
  assert.equal(result.reservation.scopes[0], platform, 'the generation scope object itself, so settle finds its keys');
  assert.deepEqual(result.rateLimit, {
    requests: { limit: 10, remaining: 6, resetMs: 40_000 - 3 },
    tokens: { limit: 1000, remaining: 700, resetMs: 40_000 - 3 },
  });
  assert.deepEqual(result.budgetWarnings, []);
});

test('an empty window (-1 as the oldest time) resets at once, and a scope without rpm or tpm shows no limit', () => {
  const [withRpm, without] = decoded(
    [...decidedAt(), ...admitted(), ...windowOf(0, -1, 0), ...admitted(), ...windowOf(0, -1, 0)],
    [entry('a', [team('a', { rpm: 5 })]), entry('b', [team('b')])],
  );
  assert.ok(withRpm?.ok && without?.ok);
  assert.deepEqual(withRpm.rateLimit, { requests: { limit: 5, remaining: 5, resetMs: 0 }, tokens: null });
  assert.deepEqual(without.rateLimit, { requests: null, tokens: null });
});

test('the warn mask names the scopes over a warn budget, by position', () => {
  const t = team('platform', { budgetMicroUsdPerMonth: 1, budgetOnExceeded: 'warn' });
  const k = key('bot', 'platform', { budgetMicroUsdPerMonth: 1, budgetOnExceeded: 'warn' });
  const window = windowOf(1, T0, 1);
  const replies = [2, 1, 3].map((mask) => decoded([...decidedAt(), ...admitted(mask), ...window, ...window], [entry('r', [t, k])])[0]);
  assert.deepEqual(
    replies.map((r) => (r?.ok ? r.budgetWarnings.map((s) => `${s.kind}:${s.id}`) : 'refused')),
    [['key:bot'], ['team:platform'], ['team:platform', 'key:bot']],
  );
});

test('a refusal names its scope by position, its limit and when to retry', () => {
  const t = team('platform', { rpm: 100 });
  const k = key('bot', 'platform', { rpm: 2 });
  const [result] = decoded(
    [...decidedAt(), 0, 2, 'rpm', 12_001, ...windowOf(1, T0 - 1000, 10), ...windowOf(2, T0 - 48_000, 10)],
    [entry('r', [t, k])],
  );
  assert.ok(result !== undefined && !result.ok);
  assert.equal(result.refusal.code, 'rate_limit_exceeded');
  assert.equal(result.refusal.limit, 'rpm');
  assert.deepEqual(result.refusal.scope, { kind: 'key', id: 'bot' });
  assert.equal(result.refusal.retryAfterS, 13, 'whole seconds, rounded up');
  assert.deepEqual(result.refusal.rateLimit.requests, { limit: 2, remaining: 0, resetMs: 12_000 });
});

test('day and month refusals wait until the next UTC day or month, whatever the script sent as retry', () => {
  const t = team('platform', { tokensPerDay: 10, budgetMicroUsdPerMonth: 10 });
  const window = windowOf(0, -1, 0);
  const [quota, budget] = decoded(
    [...decidedAt(), 0, 1, 'tokens_per_day', 0, ...window, 0, 1, 'budget', 0, ...window],
    [entry('a', [t]), entry('b', [t])],
  );
  assert.ok(quota !== undefined && !quota.ok && budget !== undefined && !budget.ok);
  assert.equal(quota.refusal.code, 'quota_exceeded');
  assert.equal(quota.refusal.retryAfterS, 12 * 3600);
  assert.equal(budget.refusal.code, 'budget_exceeded');
  assert.equal(budget.refusal.retryAfterS, (15 * 24 + 12) * 3600);
});

test('each reply is read at its own offset when reservations have different numbers of scopes', () => {
  const t = team('platform', { rpm: 50 });
  const k = key('bot', 'platform', { rpm: 5 });
  const other = team('other', { tpm: 9 });
  const reply = [
    ...decidedAt(),
    ...admitted(),
    ...windowOf(1, T0, 1),
    ...windowOf(1, T0, 1),
    0,
    1,
    'tpm',
    500,
    ...windowOf(3, T0, 8),
    ...admitted(),
    ...windowOf(2, T0, 2),
  ];
  const results = decoded(reply, [entry('two', [t, k]), entry('one', [other]), entry('last', [t])]);
  assert.deepEqual(
    results.map((r) => (r.ok ? r.reservation.id : `${r.refusal.limit}:${r.refusal.scope?.id}`)),
    ['two', 'tpm:other', 'last'],
  );
  const last = results[2];
  assert.ok(last?.ok);
  assert.equal(last.rateLimit.requests?.remaining, 48);
});

test('numbers Redis returns as strings decode to the same results', () => {
  const t = team('platform', { rpm: 10 });
  const asNumbers = decoded([...decidedAt(), ...admitted(), ...windowOf(3, T0 - 100, 7)], [entry('r', [t])]);
  const asStrings = decoded(
    [1, String(T0), String(T0), '20261115', '202611', 1, '0', '0', '0', '3', String(T0 - 100), '7', String(T0 - 100)],
    [entry('r', [t])],
  );
  assert.deepEqual(asStrings, asNumbers);
});

const reservation = (id: string, scopes: Scope[], over: Partial<Reservation> = {}): Reservation => ({
  id,
  scopes,
  atMs: T0,
  tokens: 100,
  costMicroUsd: 50,
  day: '20261115',
  month: '202611',
  enforced: true,
  ...over,
});

test('a settle batch sends each reservation with its own day, month and time, and its scopes by number', () => {
  const t = team('platform');
  const k = key('bot', 'platform');
  const call = encodeSettles(
    [
      { r: reservation('r1', [t, k]), actual: { tokens: 80, costMicroUsd: 40 } },
      {
        r: reservation('r2', [t], { atMs: T0 - 86_400_000, day: '20261114', tokens: 0, costMicroUsd: 0 }),
        actual: { tokens: 0, costMicroUsd: 0 },
      },
    ],
    keysOf,
  );
  assert.deepEqual(call.keys, [...keysOf(t), ...keysOf(k)]);
  assert.deepEqual(call.args, [
    2,
    ...['r1', 100, 80, 40, 50, '202611', '20261115', T0, 2, 1, 2],
    ...['r2', 0, 0, 0, 0, '202611', '20261114', T0 - 86_400_000, 1, 1],
  ]);
});

test('a settle batch across two teams numbers every distinct scope once, and large costs pass unchanged', () => {
  const a = team('a');
  const b = team('b');
  const big = Number.MAX_SAFE_INTEGER;
  const call = encodeSettles(
    [
      { r: reservation('x', [b], { costMicroUsd: big }), actual: { tokens: 1, costMicroUsd: big } },
      { r: reservation('y', [a]), actual: { tokens: 1, costMicroUsd: 1 } },
      { r: reservation('z', [{ ...b }]), actual: { tokens: 1, costMicroUsd: 1 } },
    ],
    keysOf,
  );
  assert.deepEqual(call.keys, [...keysOf(b), ...keysOf(a)]);
  assert.deepEqual(
    [call.args[4], call.args[5], call.args[10], call.args[20], call.args[30]],
    [big, big, 1, 2, 1],
    'costs, then x, y and z scope numbers',
  );
});

test("a status call sends one key triple per scope asked for, repeats included, and the time (-1 on Redis's clock)", () => {
  const t = team('platform');
  const call = encodeStatus([t, key('bot', 'platform'), t], at(T0), keysOf);
  assert.equal(call.keys.length, 9);
  assert.deepEqual(call.keys.slice(6), [...keysOf(t)]);
  assert.deepEqual(call.args, [T0, 60_000, 3]);
  assert.deepEqual(encodeStatus([t], REDIS, keysOf).args, [-1, 60_000, 1]);
});

test('a status reply is five numbers per scope, each shown against its limit, a missing limit as null and zero as 0', () => {
  const limited = team('platform', { rpm: 60, tpm: 0, tokensPerDay: 5000, budgetMicroUsdPerMonth: 2 ** 50 });
  const open = key('bot', 'platform');
  const status = decodeStatus([3, 120, '4000', 2 ** 50 - 1, 7, 0, 0, 0, 0, 0], [limited, open]);
  assert.deepEqual(status, [
    {
      kind: 'team',
      id: 'platform',
      requestsThisMinute: { used: 3, limit: 60 },
      tokensThisMinute: { used: 120, limit: 0 },
      tokensToday: { used: 4000, limit: 5000 },
      spendThisMonthMicroUsd: { used: 2 ** 50 - 1, reservedMicroUsd: 7, limit: 2 ** 50 },
    },
    {
      kind: 'key',
      id: 'bot',
      requestsThisMinute: { used: 0, limit: null },
      tokensThisMinute: { used: 0, limit: null },
      tokensToday: { used: 0, limit: null },
      spendThisMonthMicroUsd: { used: 0, reservedMicroUsd: 0, limit: null },
    },
  ]);
});
