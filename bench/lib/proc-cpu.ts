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
