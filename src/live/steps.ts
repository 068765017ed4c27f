// A long computation written once, as a generator that yields wherever it may pause, and
// run either to the end at once or in slices that give the event loop back in between. A
// generation of tens of thousands of routes takes a second or more to build and freeze; a reload
// builds it in slices so that requests keep being answered meanwhile (ADR 0015),
// and both ways run the very same code, so they build the very same generation.

/**
 * The longest a reload's work holds the event loop at a time (garbage collection aside). A
 * request takes several turns of the loop (its body, the upstream's answer, …), and may
 * wait for a slice at each: measured with the large-config-reload bench, 1 ms slices gave
 * a lower traffic p99 during the reload than 4 ms ones, for about 1 s more of reload.
 */
export const RELOAD_SLICE_MS = 1;

/** A computation that yields (nothing) at each point where it may pause, and returns a T. */
export type Steps<T> = Generator<void, T, void>;

/** Runs every step now, without pausing. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/**
 * A turn of the event loop that took longer than this between two slices had traffic to
 * serve: the next slice then waits a little more (TRAFFIC_PAUSE_MS).
 */
const BUSY_TURN_MS = 0.2;
/**
 * While requests are being served, at least this long passes between two slices: a reload
 * of the largest config then takes a third of the loop at most, and the requests in
 * flight see a slice at few of their turns (the traffic p99 during a reload, ADR 0021). An idle
 * gateway builds at full speed.
 */
const TRAFFIC_PAUSE_MS = 1;

/**
 * Runs the steps for at most about `sliceMs` of the event loop at a time, then lets it turn
 * (setImmediate: after the I/O that arrived meanwhile) before the next slice, and when that
 * turn had requests to serve, pauses a little longer. The caller must not let anything else
 * touch what the steps are building until the promise settles.
 */
export async function runStepsInSlices<T>(steps: Steps<T>, sliceMs = RELOAD_SLICE_MS): Promise<T> {
  let sliceEnd = performance.now() + sliceMs;
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    if (performance.now() >= sliceEnd) {
      const yielded = performance.now();
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (sliceMs > 0 && performance.now() - yielded > BUSY_TURN_MS)
        await new Promise<void>((resolve) => setTimeout(resolve, TRAFFIC_PAUSE_MS));
      sliceEnd = performance.now() + sliceMs;
    }
  }
}
