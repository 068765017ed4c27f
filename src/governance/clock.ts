// The time the governance counters run on in this process: the wall clock as it read when
// the process started, moved on by the monotonic clock since. A wall-clock step (an NTP
// correction, an operator's `date -s`, a VM restored from a snapshot) then neither drops
// bookings (an earlier day's tokens no longer counted) nor counts them twice (a window or a
// day started again): the memory store's windows, days and months move only as real time
// passes. The redis store decides by Redis's own clock instead (see lua/common.lua), so a
// fleet shares one; this clock only names the time a caller asked at.
//
// The cost: a process whose wall clock was wrong when it started keeps that error until it
// restarts. Days and months then turn over at the wrong hour for this process, but every
// booking still lands in exactly one day and one month.

/** A clock anchored to `wallNow()` once, then moved by `monoNow()`; whole milliseconds. */
export function anchoredClock(wallNow: () => number = Date.now, monoNow: () => number = () => performance.now()): () => number {
  const anchor = wallNow() - monoNow();
  // Whole milliseconds: the stores' windows merge the bookings of one millisecond.
  return () => Math.floor(anchor + monoNow());
}

/** The clock every governance call on the request path, the status views and the metrics use. */
export const governanceNow: () => number = anchoredClock();
