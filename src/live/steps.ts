// A long computation written once, as a generator that yields wherever it may pause, and
// run either to the end at once or in slices that give the event loop back in between. A
// generation of tens of thousands of routes takes seconds to build and freeze; a reload
// builds it in slices so that requests keep being answered meanwhile (issue 12, ADR 0015),
// and both ways run the very same code, so they build the very same generation.

/**
 * The longest a reload's work holds the event loop at a time: a request that arrives
 * meanwhile waits about this long at most, on top of its own time.
 */
export const RELOAD_SLICE_MS = 4;

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
 * Runs the steps for at most about `sliceMs` of the event loop at a time, then lets it turn
 * (setImmediate: after the I/O that arrived meanwhile) before the next slice. The caller
 * must not let anything else touch what the steps are building until the promise settles.
 */
export async function runStepsInSlices<T>(steps: Steps<T>, sliceMs = RELOAD_SLICE_MS): Promise<T> {
  let sliceEnd = performance.now() + sliceMs;
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    if (performance.now() >= sliceEnd) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceEnd = performance.now() + sliceMs;
    }
  }
}
