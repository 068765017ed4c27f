// What ends an MCP call early: the caller leaving, a client's notifications/cancelled, the
// gateway draining, an upstream being stopped. An AbortController is an EventTarget and
// a signal per call; a call on the request path needs one flag and a few listeners, so it
// takes a `StopSignal`, which an AbortSignal also is (for timeouts and the like).

/** The part of an AbortSignal a call listens to; every listener runs once, at the stop. */
export interface StopSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A one-shot stop: `abort` marks it and runs its listeners, once. */
export class Stop implements StopSignal {
  #aborted = false;
  #reason: unknown;
  #listeners: Array<() => void> | null = null;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Why it stopped (the value given to `abort`), undefined before. */
  get reason(): unknown {
    return this.#reason;
  }

  /** Itself: the side the call is given, as an AbortController's signal would be. */
  get signal(): StopSignal {
    return this;
  }

  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = null;
    if (listeners === null) return;
    for (const listener of listeners) {
      try {
        listener();
      } catch {
        // One listener's failure must not keep the others from hearing of the stop.
      }
    }
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.#aborted) return;
    if (this.#listeners === null) this.#listeners = [listener];
    else this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.#listeners;
    if (listeners === null) return;
    const at = listeners.indexOf(listener);
    if (at !== -1) listeners.splice(at, 1);
  }
}
