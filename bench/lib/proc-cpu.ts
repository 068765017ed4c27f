import { readFileSync } from 'node:fs';

// CPU time a process has used, from /proc (Linux). On a small, shared machine throughput
// swings with what the neighbours do; the CPU a gateway spends per request swings much less,
// and when the gateway is the bottleneck (c=32 here) their ratio is the throughput ratio.

const TICK_MS = 10; // USER_HZ is 100 on Linux builds that matter here

/** User + system CPU milliseconds used so far by `pid`, or null where /proc is not readable. */
export function cpuMsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after its closing ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return null;
  }
}

/** The machine's CPU ticks so far, all and idle (idle + iowait), from /proc/stat; null where unreadable. */
export function machineTicks(): { readonly total: number; readonly idle: number } | null {
  try {
    const first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const ticks = first.trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    return { total, idle: (ticks[3] ?? 0) + (ticks[4] ?? 0) };
  } catch {
    return null;
  }
}

/**
 * Runs `work` and measures the CPU milliseconds each of `pids` used meanwhile: null for a
 * pid that is null, gone, or not readable.
 */
export async function cpuUsedDuring<T>(
  pids: readonly (number | null)[],
  work: () => Promise<T>,
): Promise<{ readonly result: T; readonly cpuMs: readonly (number | null)[] }> {
  const before = pids.map((pid) => (pid === null ? null : cpuMsOf(pid)));
  const result = await work();
  const cpuMs = pids.map((pid, i) => {
    const b = before[i] ?? null;
    const a = pid === null ? null : cpuMsOf(pid);
    return a === null || b === null ? null : a - b;
  });
  return { result, cpuMs };
}
