import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { ReloadCoordinator, type ReloadTrigger } from '../../src/live/index.js';

// The real ReloadCoordinator around a real async reload function that is as slow as the
// test wants: each run awaits a gate the test opens. Ordering is observed by counting runs
// at points the test controls, never by timing.

interface Gate {
  readonly promise: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

interface RunRecord {
  readonly trigger: ReloadTrigger;
  readonly gate: Gate;
  finished: boolean;
}

/** A reload function whose every run waits for its own gate; run N answers `run-N`. */
function slowReload(options: { failOn?: ReadonlySet<number> } = {}) {
  const runs: RunRecord[] = [];
  const run = async (trigger: ReloadTrigger): Promise<string> => {
    const record: RunRecord = { trigger, gate: gate(), finished: false };
    runs.push(record);
    const n = runs.length;
    await record.gate.promise;
    record.finished = true;
    if (options.failOn?.has(n) === true) throw new Error(`run-${n} failed`);
    return `run-${n}`;
  };
  /** Lets the event loop run until nothing more can happen without a gate opening. */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await tick();
  };
  return { runs, run, settle };
}

const stormTriggers: readonly ReloadTrigger[] = [
  'sighup',
  'admin',
  'config_watch',
  'overlay_watch',
  'overlay_recheck',
  'sighup',
  'admin',
  'config_watch',
  'overlay_watch',
  'admin',
];

describe('ReloadCoordinator', () => {
  it('10 triggers during one slow reload lead to exactly one more reload, and every caller gets a result', async () => {
    const { runs, run, settle } = slowReload();
    const coordinator = new ReloadCoordinator(run);

    const first = coordinator.request('startup');
    await settle();
    assert.equal(runs.length, 1);
    assert.equal(runs[0]!.finished, false, 'the first reload is still running');

    const storm = stormTriggers.map((t) => coordinator.request(t));
    await settle();
    assert.equal(runs.length, 1, 'no second reload starts while the first one runs');

    runs[0]!.gate.open();
    assert.equal(await first, 'run-1', 'the first caller gets the result of the reload it started');
    await settle();
    assert.equal(runs.length, 2, 'the storm coalesced into exactly one more reload, started after the first ended');
    assert.equal(runs[0]!.finished, true);
    assert.ok(stormTriggers.includes(runs[1]!.trigger), 'the follow-up reload runs for one of the triggers that arrived during the first');

    runs[1]!.gate.open();
    const results = await Promise.all(storm);
    assert.deepEqual(
      results,
      stormTriggers.map(() => 'run-2'),
      'all 10 callers get the result of the follow-up reload',
    );
    await settle();
    assert.equal(runs.length, 2, 'nothing else runs afterwards');
    assert.ok(
      runs.every((r) => r.finished),
      'no reload is left running',
    );
  });

  it('a trigger after a reload has completed starts a new reload', async () => {
    const { runs, run, settle } = slowReload();
    const coordinator = new ReloadCoordinator(run);

    const first = coordinator.request('sighup');
    await settle();
    runs[0]!.gate.open();
    assert.equal(await first, 'run-1');
    assert.ok(
      runs.every((r) => r.finished),
      'no reload is left running',
    );

    const second = coordinator.request('admin');
    await settle();
    assert.equal(runs.length, 2, 'a trigger on an idle coordinator runs at once');
    assert.equal(runs[1]!.trigger, 'admin');
    runs[1]!.gate.open();
    assert.equal(await second, 'run-2', 'it gets a fresh result, not the previous one');
  });

  it("a config event coalescing with a queued config re-check runs under the event's name, and a re-check never renames an event", async () => {
    const { runs, run, settle } = slowReload();
    const coordinator = new ReloadCoordinator(run);
    const first = coordinator.request('sighup');
    await settle();
    const queued = [
      coordinator.request('config_recheck'),
      coordinator.request('config_watch'),
      coordinator.request('config_recheck'),
      coordinator.request('overlay_watch'),
    ];
    runs[0]!.gate.open();
    await first;
    await settle();
    assert.equal(runs[1]!.trigger, 'config_watch', 'a file event is never reported as a routine re-check');
    runs[1]!.gate.open();
    await Promise.all(queued);

    const again = coordinator.request('sighup');
    await settle();
    const recheck = coordinator.request('config_recheck');
    const overlay = coordinator.request('overlay_watch');
    runs[2]!.gate.open();
    await again;
    await settle();
    assert.equal(runs[3]!.trigger, 'config_recheck', 'the re-check re-reads the config, so it keeps its wider scope over an overlay event');
    runs[3]!.gate.open();
    await Promise.all([recheck, overlay]);
  });

  it('a reload that throws is not fatal: its caller sees the error and the next trigger still runs', async () => {
    const { runs, run, settle } = slowReload({ failOn: new Set([1]) });
    const coordinator = new ReloadCoordinator(run);

    const failing = coordinator.request('sighup');
    await settle();
    // A trigger queued behind the failing reload still gets its own reload.
    const queued = coordinator.request('admin');
    runs[0]!.gate.open();
    await assert.rejects(failing, /run-1 failed/);
    await settle();
    assert.equal(runs.length, 2, 'the queued trigger ran after the failure');
    runs[1]!.gate.open();
    assert.equal(await queued, 'run-2');

    const later = coordinator.request('config_watch');
    await settle();
    runs[2]!.gate.open();
    assert.equal(await later, 'run-3', 'the coordinator keeps working after a failed reload');
  });

  it('stop() waits for the reload in flight, then refuses new triggers', async () => {
    const { runs, run, settle } = slowReload();
    const coordinator = new ReloadCoordinator(run);

    const inFlight = coordinator.request('sighup');
    const queued = coordinator.request('admin');
    await settle();
    let stopped = false;
    const stopping = coordinator.stop().then(() => {
      stopped = true;
    });
    await settle();
    assert.equal(stopped, false, 'stop() does not resolve while a reload is running');
    await assert.rejects(coordinator.request('config_watch'), /stopped/, 'a trigger after stop() is refused');

    runs[0]!.gate.open();
    assert.equal(await inFlight, 'run-1', 'the reload in flight completes normally');
    // The queued follow-up either runs to completion before stop() resolves, or is refused;
    // it must settle either way, never hang.
    const queuedOutcome = queued.then(
      (r) => r,
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    for (let i = 0; i < 10 && !stopped; i++) {
      await settle();
      for (const r of runs) r.gate.open();
    }
    await stopping;
    assert.equal(stopped, true);
    const outcome = await queuedOutcome;
    assert.ok(outcome === 'run-2' || /stopped/.test(outcome), `the queued trigger settled (${outcome})`);

    const runsAtStop = runs.length;
    await assert.rejects(coordinator.request('sighup'), /stopped/);
    await settle();
    assert.equal(runs.length, runsAtStop, 'no reload starts after stop()');
    assert.ok(
      runs.every((r) => r.finished),
      'no reload is left running',
    );
  });
});
