import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { hashKey, utcDayStamp } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// Invariant "time comes from one clock": gateways started under libfaketime (Debian package
// `faketime`), whose wall clock this test steps forward and back while they serve, across a
// minute, an hour, a UTC day and a month. The memory store follows a clock anchored at start
// and moved by the monotonic clock, so a step neither frees a window, starts a new day or
// month, nor drops what was booked; the redis store decides by Redis's clock, so a replica
// whose clock is a day ahead shares the other's window, day and month.

const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
].find((p) => existsSync(p));

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;

const resources = fileResources('switchyard-clock-steps-');
let mock: MockProvider;

before(async () => {
  mock = await resources.startMock({ name: 'east' });
});

/** A gateway whose wall clock is offset by what `step` last wrote (seconds); monotonic time is left alone. */
async function startSkewed(config: Record<string, unknown>): Promise<{ gw: GatewayProcess; step(offsetS: number): void }> {
  const file = join(resources.tempDir(), 'faketime');
  const step = (offsetS: number): void => writeFileSync(file, `${offsetS >= 0 ? '+' : ''}${offsetS}\n`);
  step(0);
  const gw = await resources.startGw(config, {
    env: {
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
  });
  return { gw, step };
}

function governedConfig(governance: Record<string, unknown>): Record<string, unknown> {
  return baseConfig(
    { east: mock.baseUrl },
    { m: { candidates: [{ provider: 'east', model: 'gpt-4o-mini' }] } },
    {
      governance,
      // 1 µUSD an output token, input free: a request's cost in µUSD is its completion tokens.
      pricing: { models: { 'gpt-4o-mini': { input_usd_per_mtok: 0, output_usd_per_mtok: 1 } } },
      teams: {
        books: { rate_limit: { tpm: 1_000_000 }, quota: { tokens_per_day: 1_000_000 }, budget: { usd_per_month: 1000 } },
        minute: { rate_limit: { rpm: 2 } },
      },
      keys: [
        { id: 'books', team: 'books', sha256: hashKey('books-key') },
        { id: 'minute', team: 'minute', sha256: hashKey('minute-key') },
      ],
    },
  );
}

interface Served {
  readonly status: number;
  readonly totalTokens: number;
  readonly completionTokens: number;
  readonly retryAfterS: number | null;
}

async function ask(gw: GatewayProcess, key: string): Promise<Served> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'what time is it?' }], max_tokens: 64 }),
  });
  const body = (await res.json()) as { usage?: { total_tokens: number; completion_tokens: number } };
  const retry = res.headers.get('retry-after');
  return {
    status: res.status,
    totalTokens: body.usage?.total_tokens ?? 0,
    completionTokens: body.usage?.completion_tokens ?? 0,
    retryAfterS: retry === null ? null : Number(retry),
  };
}

interface TeamBooks {
  readonly requestsThisMinute: number;
  readonly tokensToday: number;
  readonly spentThisMonthMicroUsd: number;
}

/** The team's counters as the gateway's admin status shows them (settles are batched: polled until `want` holds). */
async function booksOf(gw: GatewayProcess, team: string, want?: (b: TeamBooks) => boolean): Promise<TeamBooks> {
  let books: TeamBooks | null = null;
  for (let i = 0; i < 50; i += 1) {
    const status = (await (await fetch(`${gw.adminUrl}/admin/status`)).json()) as {
      governance: {
        teams: Record<
          string,
          { requestsThisMinute: { used: number }; tokensToday: { used: number }; spendThisMonthMicroUsd: { used: number } }
        >;
      };
    };
    const t = status.governance.teams[team];
    assert.ok(t !== undefined, `team ${team} is in the status`);
    books = {
      requestsThisMinute: t.requestsThisMinute.used,
      tokensToday: t.tokensToday.used,
      spentThisMonthMicroUsd: t.spendThisMonthMicroUsd.used,
    };
    if (want === undefined || want(books)) return books;
    await new Promise((r) => setTimeout(r, 40));
  }
  return books as TeamBooks;
}

describe('invariant "time comes from one clock": wall-clock steps under faketime', {
  skip: LIBFAKETIME === undefined ? 'libfaketime is not installed (Debian package faketime)' : false,
}, () => {
  it('memory store: stepping forward and back across a minute, an hour, a day and a month neither resets nor drops a booking', async () => {
    const { gw, step } = await startSkewed(governedConfig({ store: 'memory' }));
    const day = utcDayStamp(Date.now());
    let tokens = 0;
    let spent = 0;
    for (const offset of [0, MINUTE + 1, HOUR, DAY, -DAY, 31 * DAY, -31 * DAY, 0]) {
      step(offset);
      const served = await ask(gw, 'books-key');
      assert.equal(served.status, 200, `served at ${offset} s`);
      tokens += served.totalTokens;
      spent += served.completionTokens;
      const books = await booksOf(gw, 'books', (b) => b.tokensToday === tokens && b.spentThisMonthMicroUsd === spent);
      if (utcDayStamp(Date.now()) !== day) return; // the real UTC day turned during the test: the sums below span two
      assert.deepEqual(
        [books.tokensToday, books.spentThisMonthMicroUsd],
        [tokens, spent],
        `at a wall clock ${offset} s off, today's tokens and this month's spend hold every request so far`,
      );
    }
  });

  it('memory store: a step forward does not free an rpm window, and a step back does not lock it for the length of the step', async () => {
    const { gw, step } = await startSkewed(governedConfig({ store: 'memory' }));
    assert.deepEqual([(await ask(gw, 'minute-key')).status, (await ask(gw, 'minute-key')).status], [200, 200]);
    step(MINUTE + 5);
    const ahead = await ask(gw, 'minute-key');
    assert.equal(ahead.status, 429, 'a minute of wall clock is not a minute of time: the window still holds two');
    step(-HOUR);
    const behind = await ask(gw, 'minute-key');
    assert.equal(behind.status, 429);
    assert.ok((behind.retryAfterS ?? 0) <= MINUTE, `retry-after ${behind.retryAfterS} s is within the window, not the step`);
  });

  it('redis store, two replicas, one of them a day and an hour ahead and then a month behind: one window, one day, one month', async () => {
    const governance = { store: 'redis', redis_url: 'redis://127.0.0.1:6379', key_prefix: `switchyard-test-clock-${randomUUID()}:` };
    const config = governedConfig(governance);
    const steady = await resources.startGw(config);
    const { gw: skewed, step } = await startSkewed(config);
    step(DAY + HOUR);
    const day = utcDayStamp(Date.now());
    let tokens = 0;
    let spent = 0;
    for (const [gw, offset] of [
      [steady, null],
      [skewed, DAY + HOUR],
      [steady, null],
      [skewed, -31 * DAY],
      [steady, null],
    ] as const) {
      if (offset !== null) step(offset);
      const served = await ask(gw, 'books-key');
      assert.equal(served.status, 200);
      tokens += served.totalTokens;
      spent += served.completionTokens;
    }
    for (const gw of [steady, skewed]) {
      const books = await booksOf(gw, 'books', (b) => b.tokensToday === tokens && b.spentThisMonthMicroUsd === spent);
      if (utcDayStamp(Date.now()) !== day) return;
      assert.deepEqual([books.tokensToday, books.spentThisMonthMicroUsd], [tokens, spent], 'both replicas see every booking');
    }
    // rpm 2 across both: the skewed replica's requests share the steady one's window, and
    // its refusal waits for that window, not for its own clock's hour.
    step(HOUR);
    assert.equal((await ask(skewed, 'minute-key')).status, 200);
    assert.equal((await ask(steady, 'minute-key')).status, 200);
    const third = await ask(steady, 'minute-key');
    assert.equal(third.status, 429);
    assert.ok((third.retryAfterS ?? 0) <= MINUTE, `retry-after ${third.retryAfterS} s, not the skew`);
    const fromSkewed = await ask(skewed, 'minute-key');
    assert.equal(fromSkewed.status, 429);
    assert.ok((fromSkewed.retryAfterS ?? 0) <= MINUTE, `retry-after ${fromSkewed.retryAfterS} s from the skewed replica`);
  });
});
