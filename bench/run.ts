// `npm run bench`: measures and reports; never fails on a slow figure. It exits 1 only when
// something broke: a failed or non-2xx request, a rejected reload, a process that died.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type ProfileSummary, summarizeProfiles } from './lib/cpu-profile.js';
import { Fleet, usePinning, usePortBase } from './lib/fleet.js';
import type { Scenario, ScenarioReport, TargetCheck } from './lib/scenario.js';
import { renderTable, targetTable } from './lib/table.js';
import { scenarios } from './scenarios/index.js';

const RESULTS_DIR = resolve(import.meta.dirname, 'results');
const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const DEFAULT_DURATION_S = 5;
// Warm-up is for the JIT and the connection pools, so it does not shrink with --duration.
const WARMUP_S = 1.5;

function usage(): string {
  const lines = scenarios.map((s) => `  ${s.name.padEnd(20)} ${s.summary} (~${Math.round(s.estimateS(DEFAULT_DURATION_S))} s)`);
  return `npm run bench -- [--only NAME[,NAME]] [--duration SECONDS] [--port-base N] [--pin] [--cpu-prof]

Scenarios:
${lines.join('\n')}

  --only       run only these scenarios
  --duration   seconds per measured run (default ${DEFAULT_DURATION_S}); the reload scenario runs 2x this with and without reloads
  --port-base  listen on ports N, N+1, … (mocks, proxies, gateways) instead of ports the OS picks
  --pin        the load generator and mocks on CPU 0, each process under test on CPU 1 (taskset):
               steadier ratios on a 2-core machine, where placement otherwise decides a run
  --cpu-prof   run the measured gateway under node --cpu-prof and summarise its self time (figures are then not comparable)

Writes bench/results/<timestamp>.json and bench/results/latest.json.`;
}

interface ScenarioOutcome {
  readonly name: string;
  readonly elapsed_s: number;
  readonly report: ScenarioReport | null;
  readonly error: string | null;
  readonly profiles?: ProfileSummary[];
  readonly profile_dir?: string;
}

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function runScenario(s: Scenario, durationS: number, cpuProf: boolean): Promise<ScenarioOutcome> {
  const started = performance.now();
  const fleet = new Fleet(s.name);
  const cpuProfileDir = cpuProf ? mkdtempSync(join(tmpdir(), `switchyard-bench-profile-${s.name}-`)) : null;
  let report: ScenarioReport | null = null;
  let error: string | null = null;
  progress(`${s.name}: ${s.summary}`);
  try {
    report = await s.run({ durationS, warmupS: WARMUP_S, fleet, cpuProfileDir, progress: (m) => progress(`${s.name}: ${m}`) });
    const casualties = fleet.casualties();
    if (casualties.length > 0) report = { ...report, problems: [...report.problems, ...casualties] };
  } catch (err) {
    error = [(err as Error).stack ?? String(err), ...fleet.casualties()].join('\n');
  } finally {
    await fleet.stop();
    fleet.removeDir();
  }
  const outcome: ScenarioOutcome = { name: s.name, elapsed_s: Math.round((performance.now() - started) / 100) / 10, report, error };
  if (cpuProfileDir === null) return outcome;
  return { ...outcome, profile_dir: cpuProfileDir, profiles: summarizeProfiles(cpuProfileDir, 15, report?.profileWindows) };
}

function gitDescription(): { commit: string | null; dirty: boolean | null } {
  try {
    const opts = {
      cwd: resolve(import.meta.dirname, '..'),
      encoding: 'utf8' as const,
      stdio: ['ignore', 'pipe', 'ignore'] as ['ignore', 'pipe', 'ignore'],
    };
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], opts).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], opts).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: null, dirty: null };
  }
}

function printProfiles(outcome: ScenarioOutcome): void {
  for (const p of outcome.profiles ?? []) {
    const busy = p.total_ms - p.idle_ms;
    const perRequest =
      p.requests === undefined ? '' : `, in the measured slices only: ${p.requests} requests, ${p.busy_us_per_request} µs busy per request`;
    process.stdout.write(`\ncpu profile ${p.file}\n  busy ${busy.toFixed(0)} ms of ${p.total_ms.toFixed(0)} ms${perRequest}\n\n`);
    process.stdout.write(
      `${renderTable(
        'top self time',
        ['function', 'location', 'self ms', '% busy', 'µs/request'],
        p.top_functions.map((f) => [f.function, f.location, f.self_ms, f.busy_pct, f.self_us_per_request ?? '-']),
      )}\n\n`,
    );
    process.stdout.write(
      `${renderTable(
        'self time by area',
        ['area', 'self ms', '% busy', 'µs/request'],
        p.by_area.slice(0, 15).map((a) => [a.area, a.self_ms, a.busy_pct, a.self_us_per_request ?? '-']),
      )}\n`,
    );
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      duration: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      'port-base': { type: 'string' },
      pin: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  const durationS = values.duration === undefined ? DEFAULT_DURATION_S : Number(values.duration);
  if (!Number.isFinite(durationS) || durationS <= 0 || durationS > 600)
    throw new UsageError(`--duration must be a number of seconds in (0, 600], got "${values.duration}"`);
  if (values['port-base'] !== undefined) {
    const base = Number(values['port-base']);
    if (!Number.isInteger(base) || base < 1024 || base > 65000)
      throw new UsageError(`--port-base must be a whole number in [1024, 65000], got "${values['port-base']}"`);
    usePortBase(base);
  }
  if (values.pin === true) usePinning();
  const only = values.only
    ?.split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  const unknown = (only ?? []).filter((n) => !scenarios.some((s) => s.name === n));
  if (unknown.length > 0) throw new UsageError(`unknown scenario(s): ${unknown.join(', ')}`);
  const selected = only === undefined ? scenarios : scenarios.filter((s) => only.includes(s.name));
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm run bench does)`);

  const startedAt = new Date();
  const loadBefore = loadavg().map((l) => Math.round(l * 100) / 100);
  // Two cores hold the load generator, a gateway and a mock: any other busy process skews the figures.
  if ((loadBefore[0] ?? 0) > 0.5)
    progress(`warning: 1-minute load average is ${loadBefore[0]} before the bench starts; figures will be noisy`);
  progress(
    `${selected.map((s) => s.name).join(', ')} at --duration ${durationS} (~${Math.round(selected.reduce((t, s) => t + s.estimateS(durationS), 0))} s)`,
  );
  const outcomes: ScenarioOutcome[] = [];
  for (const s of selected) outcomes.push(await runScenario(s, durationS, values['cpu-prof'] === true));

  const finishedAt = new Date();
  const targets: Array<TargetCheck & { scenario: string }> = outcomes.flatMap((o) =>
    (o.report?.targets ?? []).map((t) => ({ scenario: o.name, ...t })),
  );
  const problems = outcomes.flatMap((o) => [
    ...(o.error === null ? [] : [`${o.name}: crashed: ${o.error}`]),
    ...(o.report?.problems ?? []).map((p) => `${o.name}: ${p}`),
  ]);
  const cpu = cpus();
  const results = {
    started_at: startedAt.toISOString(),
    finished_at: finishedAt.toISOString(),
    elapsed_s: Math.round((finishedAt.getTime() - startedAt.getTime()) / 100) / 10,
    options: {
      duration_s: durationS,
      only: only ?? null,
      cpu_prof: values['cpu-prof'] === true,
      port_base: values['port-base'] ?? null,
      pinned: values.pin === true,
    },
    machine: {
      cpus: cpu.length,
      cpu_model: cpu[0]?.model ?? null,
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      loadavg_before: loadBefore,
      loadavg_after: loadavg().map((l) => Math.round(l * 100) / 100),
    },
    git: gitDescription(),
    targets,
    problems,
    scenarios: Object.fromEntries(
      outcomes.map((o) => [
        o.name,
        {
          elapsed_s: o.elapsed_s,
          error: o.error,
          ...(o.report?.figures ?? {}),
          ...(o.profiles === undefined ? {} : { cpu_profiles: o.profiles }),
        },
      ]),
    ),
  };

  for (const o of outcomes) {
    process.stdout.write(`\n=== ${o.name} (${o.elapsed_s} s) ===\n`);
    for (const table of o.report?.tables ?? []) process.stdout.write(`\n${table}\n`);
    if (o.report !== null && o.report.targets.length > 0) process.stdout.write(`\n${targetTable('targets', o.report.targets)}\n`);
    printProfiles(o);
  }
  if (problems.length > 0) {
    process.stdout.write(`\n!!! ${problems.length} PROBLEM(S): something broke, the figures above are not trustworthy !!!\n`);
    for (const p of problems) process.stdout.write(`  - ${p}\n`);
  }

  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${startedAt.toISOString().replace(/:/g, '-')}.json`);
  const json = `${JSON.stringify(results, null, 2)}\n`;
  writeFileSync(file, json);
  writeFileSync(join(RESULTS_DIR, 'latest.json'), json);
  process.stdout.write(`\nresults: ${file} (and bench/results/latest.json), ${results.elapsed_s} s\n`);
  return problems.length > 0 ? 1 : 0;
}

class UsageError extends Error {}

let exiting = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (exiting) return;
    exiting = true;
    // The 'exit' hook in fleet.ts kills every child process.
    process.stderr.write(`\nbench: ${signal}, stopping\n`);
    process.exit(130);
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true) {
      process.stderr.write(`bench: ${(err as Error).message}\n\n${usage()}\n`);
      process.exit(2);
    }
    process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
