import type { Fleet } from './fleet.js';

export interface ScenarioContext {
  /** Seconds; the unit each scenario scales its measured runs by (`--duration`). */
  readonly durationS: number;
  /** Seconds of unmeasured load before the first measurement. */
  readonly warmupS: number;
  /** The scenario's processes; the runner stops them all when the scenario ends, even on error. */
  readonly fleet: Fleet;
  /** When set, pass it to startGateway: gateways then run under `node --cpu-prof` and write their profiles here. */
  readonly cpuProfileDir: string | null;
  /** Progress on stderr, so stdout stays the report. */
  progress(message: string): void;
}

/** One target, judged: it never fails the run, it is reported. */
export interface TargetCheck {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly op: '>=' | '<=';
  readonly target: number;
  readonly verdict: 'PASS' | 'MISS';
}

export interface ScenarioReport {
  /** Everything measured, written to the results file as is. */
  readonly figures: Record<string, unknown>;
  readonly targets: readonly TargetCheck[];
  /** Pre-rendered tables for the console. */
  readonly tables: readonly string[];
  /** Something broke (failed requests, a rejected reload, a crash): the run exits 1. */
  readonly problems: readonly string[];
  /**
   * Under `--cpu-prof`, per profile (by file name without `.cpuprofile`): the measured slices
   * and the requests they served, so the summary counts only those slices' samples and gives
   * each function's self time per request, not the process's whole life (start-up included).
   */
  readonly profileWindows?: Readonly<Record<string, ProfileWindow>>;
}

/** Spans of the monotonic clock in µs (process.hrtime, the clock V8's profiles use) and the requests served in them. */
export interface ProfileWindow {
  readonly spansUs: ReadonlyArray<readonly [number, number]>;
  readonly requests: number;
}

/** The monotonic clock in µs, as V8's CPU profiles stamp their samples. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export interface Scenario {
  readonly name: string;
  readonly summary: string;
  /** Rough wall-clock seconds at a given --duration, for the help text. */
  estimateS(durationS: number): number;
  run(ctx: ScenarioContext): Promise<ScenarioReport>;
}

export function checkTarget(name: string, value: number, op: '>=' | '<=', target: number, unit: string): TargetCheck {
  const pass = Number.isFinite(value) && (op === '>=' ? value >= target : value <= target);
  return { name, value, unit, op, target, verdict: pass ? 'PASS' : 'MISS' };
}
