import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type BreakerOptions, BreakerRegistry, type BreakerTransition } from '../../src/resilience/index.js';

// Every transition is driven by an injected clock: the test moves time and counts, it never
// sleeps or measures durations.

const EAST = 'openai http://127.0.0.1:9001/v1';
const WEST = 'openai http://127.0.0.1:9002/v1';
const OPTIONS: BreakerOptions = { failureThreshold: 5, openBaseMs: 1000, openMaxMs: 30_000 };

function setup(options: BreakerOptions = OPTIONS): { registry: BreakerRegistry; now: () => number; set: (ms: number) => void } {
  let t = 0;
  const now = (): number => t;
  const registry = new BreakerRegistry(options, now);
  registry.retain([EAST, WEST]);
  return { registry, now, set: (ms) => (t = ms) };
}

function fail(registry: BreakerRegistry, identity: string, times: number): void {
  for (let i = 0; i < times; i++) registry.recordFailure(identity, false);
}

/** Opens the breaker and returns when (by the injected clock) its window ends. */
function openUntil(registry: BreakerRegistry, identity: string): number {
  const view = registry.view(identity);
  assert.ok(view !== undefined && view.openUntilMs !== null, `breaker of ${identity} is not open: ${JSON.stringify(view)}`);
  return view.openUntilMs;
}

describe('BreakerRegistry', () => {
  it('stays closed below the failure threshold and opens at it', () => {
    const { registry } = setup();
    fail(registry, EAST, 4);
    assert.equal(registry.stateOf(EAST), 'closed');
    assert.equal(registry.admit(EAST), 'allow');
    fail(registry, EAST, 1);
    assert.equal(registry.stateOf(EAST), 'open');
    assert.equal(registry.admit(EAST), 'deny');
    assert.equal(registry.stateOf(WEST), 'closed', 'breakers are per identity');
    assert.equal(registry.admit(WEST), 'allow');
  });

  it('a success resets the count of consecutive failures', () => {
    const { registry } = setup();
    fail(registry, EAST, 4);
    registry.recordSuccess(EAST);
    fail(registry, EAST, 4);
    assert.equal(registry.stateOf(EAST), 'closed');
    assert.equal(registry.view(EAST)?.consecutiveFailures, 4);
  });

  it('denies every request while open, until the base window has passed', () => {
    const { registry, set } = setup();
    set(5000);
    fail(registry, EAST, 5);
    assert.equal(openUntil(registry, EAST), 6000);
    for (const t of [5000, 5500, 5999]) {
      set(t);
      assert.equal(registry.admit(EAST), 'deny', `at ${t}`);
      assert.equal(registry.stateOf(EAST), 'open');
    }
    set(6000);
    assert.equal(registry.stateOf(EAST), 'half_open');
  });

  it('half-open lets exactly one probe through and denies the rest until it reports', () => {
    const { registry, set } = setup();
    fail(registry, EAST, 5);
    set(1000);
    const admissions = Array.from({ length: 10 }, () => registry.admit(EAST));
    assert.deepEqual(admissions, ['probe', ...Array<string>(9).fill('deny')]);
  });

  it('a successful probe closes the breaker', () => {
    const { registry, set } = setup();
    fail(registry, EAST, 5);
    set(1000);
    assert.equal(registry.admit(EAST), 'probe');
    registry.recordSuccess(EAST);
    assert.equal(registry.stateOf(EAST), 'closed');
    assert.equal(registry.admit(EAST), 'allow');
    assert.equal(registry.admit(EAST), 'allow');
    assert.deepEqual(registry.view(EAST), { identity: EAST, state: 'closed', consecutiveFailures: 0, opens: 0, openUntilMs: null });
  });

  it('after closing, the next opening starts again from the base window', () => {
    const { registry, set } = setup();
    fail(registry, EAST, 5);
    set(1000);
    registry.admit(EAST);
    registry.recordFailure(EAST, true); // window doubles to 2000
    set(3000);
    assert.equal(registry.admit(EAST), 'probe');
    registry.recordSuccess(EAST);
    fail(registry, EAST, 5);
    assert.equal(openUntil(registry, EAST), 3000 + 1000);
  });

  it('a failed probe re-opens with a doubled window, capped at openMaxMs', () => {
    const { registry, set } = setup();
    fail(registry, EAST, 5);
    const windows: number[] = [openUntil(registry, EAST)];
    let t = windows[0]!;
    for (let i = 0; i < 8; i++) {
      set(t - 1);
      assert.equal(registry.admit(EAST), 'deny', `still open just before the window ends (opening ${i + 1})`);
      set(t);
      assert.equal(registry.admit(EAST), 'probe');
      registry.recordFailure(EAST, true);
      const until = openUntil(registry, EAST);
      windows.push(until - t);
      t = until;
    }
    assert.deepEqual(windows, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000]);
  });

  it('a failure of a request let through while the breaker is open leaves its window as it is', () => {
    const { registry, set } = setup();
    fail(registry, EAST, 5);
    const until = openUntil(registry, EAST);
    set(500);
    registry.recordFailure(EAST, false);
    assert.equal(openUntil(registry, EAST), until);
    assert.equal(registry.view(EAST)?.opens, 1);
  });

  it('release() after a probe that ended without a verdict lets a new probe through', () => {
    const { registry, set } = setup();
    fail(registry, EAST, 5);
    set(1000);
    assert.equal(registry.admit(EAST), 'probe');
    assert.equal(registry.admit(EAST), 'deny');
    registry.release(EAST);
    assert.equal(registry.stateOf(EAST), 'half_open');
    assert.equal(registry.admit(EAST), 'probe');
    assert.equal(registry.admit(EAST), 'deny');
  });

  it('release() on a closed breaker changes nothing', () => {
    const { registry } = setup();
    registry.release(EAST);
    assert.equal(registry.stateOf(EAST), 'closed');
    assert.equal(registry.admit(EAST), 'allow');
  });

  it('retain() keeps the breakers of identities still present, with their state', () => {
    const { registry } = setup();
    fail(registry, EAST, 5);
    registry.retain([EAST, WEST, 'openai http://new.test/v1']);
    assert.equal(registry.stateOf(EAST), 'open');
    assert.equal(registry.size, 3);
    assert.equal(registry.stateOf('openai http://new.test/v1'), 'closed');
  });

  it('retain() prunes absent identities, and a result recorded for a pruned identity does not bring it back', () => {
    const { registry } = setup();
    fail(registry, EAST, 3);
    registry.retain([WEST]);
    assert.equal(registry.has(EAST), false);
    assert.equal(registry.size, 1);
    // An in-flight request that started before the swap reports late.
    fail(registry, EAST, 10);
    registry.recordFailure(EAST, true);
    registry.recordSuccess(EAST);
    registry.release(EAST);
    assert.equal(registry.has(EAST), false);
    assert.equal(registry.stateOf(EAST), undefined);
    assert.equal(registry.view(EAST), undefined);
    assert.equal(registry.size, 1);
    assert.equal(registry.admit(EAST), 'allow', 'an unknown identity is never blocked');
    assert.equal(registry.has(EAST), false, 'admit() does not create a breaker either');
  });

  it('an identity that is removed and then added back starts with a fresh breaker', () => {
    const { registry } = setup();
    fail(registry, EAST, 5);
    assert.equal(registry.stateOf(EAST), 'open');
    registry.retain([WEST]);
    registry.retain([EAST, WEST]);
    assert.deepEqual(registry.view(EAST), { identity: EAST, state: 'closed', consecutiveFailures: 0, opens: 0, openUntilMs: null });
    assert.equal(registry.admit(EAST), 'allow');
    fail(registry, EAST, 4);
    assert.equal(registry.stateOf(EAST), 'closed', 'the old failures do not count toward the new threshold');
  });

  it('configure() applies a new threshold to the next transition', () => {
    const { registry } = setup();
    registry.configure({ failureThreshold: 2, openBaseMs: 100, openMaxMs: 150 });
    fail(registry, EAST, 2);
    assert.equal(registry.stateOf(EAST), 'open');
    assert.equal(openUntil(registry, EAST), 100);
  });
});

describe("a provider's retry-after (an upstream 429)", () => {
  it('opens the breaker at once for that long, capped at open_max_ms, and never shortens an open window', () => {
    const { registry, set } = setup();
    set(1000);
    registry.recordFailure(EAST, false, 5000);
    assert.equal(registry.admit(EAST), 'deny', 'one 429 with retry-after is enough');
    assert.equal(openUntil(registry, EAST), 6000);
    registry.recordFailure(EAST, false, 1000);
    assert.equal(openUntil(registry, EAST), 6000, 'a shorter retry-after does not shorten the window');
    registry.recordFailure(WEST, false, 24 * 3600 * 1000);
    assert.equal(openUntil(registry, WEST), 1000 + OPTIONS.openMaxMs, 'a day is capped at open_max_ms');
    set(6000);
    assert.equal(registry.admit(EAST), 'probe', 'then half-open as usual');
  });
});

describe('transitions, for the log', () => {
  function observed(): { registry: BreakerRegistry; set: (ms: number) => void; seen: BreakerTransition[] } {
    const { registry, set } = setup();
    const seen: BreakerTransition[] = [];
    registry.observe((t) => seen.push(t));
    return { registry, set, seen };
  }

  it('reports opening, going half-open and closing, each once, with why', () => {
    const { registry, set, seen } = observed();
    set(1000);
    for (let i = 0; i < 5; i++) registry.recordFailure(EAST, false, undefined, 'status_5xx');
    registry.recordFailure(EAST, false, undefined, 'status_5xx');
    assert.deepEqual(seen, [
      {
        identity: EAST,
        from: 'closed',
        to: 'open',
        reason: 'failure_threshold',
        cause: 'status_5xx',
        consecutiveFailures: 5,
        openForMs: 1000,
      },
    ]);
    set(2000);
    assert.equal(registry.admit(EAST), 'probe');
    assert.equal(registry.admit(EAST), 'deny');
    assert.deepEqual(
      seen.slice(1).map((t) => [t.from, t.to, t.reason]),
      [['open', 'half_open', 'window_elapsed']],
      'half-open once, when the probe is let through',
    );
    registry.recordSuccess(EAST);
    registry.recordSuccess(EAST);
    assert.deepEqual(
      seen.slice(2).map((t) => [t.from, t.to, t.reason, t.consecutiveFailures, t.openForMs]),
      [['half_open', 'closed', 'probe_succeeded', 0, null]],
    );
    assert.deepEqual(
      seen.map((t) => t.identity),
      [EAST, EAST, EAST],
      'west never changed',
    );
  });

  it('a failed probe re-opens with the doubled window; a retry-after opens at once with its hold', () => {
    const { registry, set, seen } = observed();
    fail(registry, EAST, 5);
    set(1000);
    assert.equal(registry.admit(EAST), 'probe');
    registry.recordFailure(EAST, true, undefined, 'timeout');
    const reopened = seen.at(-1);
    assert.deepEqual(
      [reopened?.from, reopened?.to, reopened?.reason, reopened?.cause, reopened?.openForMs],
      ['half_open', 'open', 'probe_failed', 'timeout', 2000],
    );
    registry.recordFailure(WEST, false, 3000, 'status_429');
    const held = seen.at(-1);
    assert.deepEqual(
      [held?.identity, held?.from, held?.to, held?.reason, held?.cause, held?.openForMs],
      [WEST, 'closed', 'open', 'retry_after', 'status_429', 3000],
    );
    const count = seen.length;
    registry.recordFailure(WEST, false, 5000, 'status_429');
    assert.equal(seen.length, count, 'a longer hold on an open breaker is no change of state');
  });
});
