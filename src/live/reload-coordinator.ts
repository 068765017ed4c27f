// Every reload trigger (SIGHUP, the admin API, a config or overlay watcher) goes through
// one coordinator per process. It runs one reload at a time; triggers that arrive while
// one runs coalesce into exactly one more, which starts after it and reads the newest
// inputs. So a storm of N triggers costs at most two reloads, and no two builds race to
// swap.

export type ReloadTrigger =
  | 'startup'
  | 'sighup'
  | 'admin'
  | 'config_watch'
  | 'config_recheck'
  | 'overlay_watch'
  | 'overlay_recheck'
  /** A write to the database's teams and keys: here, or on another replica (NOTIFY, or the version check). */
  | 'database';

/**
 * How much a trigger asks the reload to do. The coalesced reload does the most that any
 * of its triggers asked: an explicit reload re-reads everything and rebuilds; a config
 * event re-reads the config and the overlay; an overlay event only the overlay.
 */
const SCOPE: Record<ReloadTrigger, number> = {
  startup: 3,
  sighup: 3,
  admin: 3,
  config_watch: 2,
  config_recheck: 2,
  overlay_watch: 1,
  // The database is read by every reload; this one re-reads the overlay too, not the config file.
  database: 1,
  overlay_recheck: 0,
};

/**
 * At equal scope a file event names the coalesced reload rather than a timer's re-check:
 * a re-check that finds nothing new is routine (kept out of history), an event is not.
 */
function supersedes(trigger: ReloadTrigger, queued: ReloadTrigger): boolean {
  return SCOPE[trigger] > SCOPE[queued] || (SCOPE[trigger] === SCOPE[queued] && queued === 'config_recheck' && trigger === 'config_watch');
}

export class ReloadCoordinator<R> {
  readonly #run: (trigger: ReloadTrigger) => Promise<R>;
  #running: Promise<R> | null = null;
  #queued: { trigger: ReloadTrigger; promise: Promise<R>; resolve: (r: R) => void; reject: (e: unknown) => void } | null = null;
  #stopped = false;

  constructor(run: (trigger: ReloadTrigger) => Promise<R>) {
    this.#run = run;
  }

  /** Resolves with the result of the reload that covers this trigger. */
  request(trigger: ReloadTrigger): Promise<R> {
    if (this.#stopped) return Promise.reject(new Error('the reload coordinator is stopped'));
    if (this.#running === null) return this.#start(trigger);
    if (this.#queued === null) {
      let resolve!: (r: R) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<R>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.#queued = { trigger, promise, resolve, reject };
    } else if (supersedes(trigger, this.#queued.trigger)) {
      this.#queued.trigger = trigger;
    }
    return this.#queued.promise;
  }

  /** Refuses new triggers and waits for the reload in progress (and a queued one) to end. */
  async stop(): Promise<void> {
    this.#stopped = true;
    while (this.#running !== null) await this.#running.catch(() => undefined);
  }

  #start(trigger: ReloadTrigger): Promise<R> {
    const running = this.#run(trigger);
    this.#running = running;
    const next = (): void => {
      this.#running = null;
      const queued = this.#queued;
      this.#queued = null;
      if (queued === null) return;
      if (this.#stopped) {
        queued.reject(new Error('the reload coordinator is stopped'));
        return;
      }
      this.#start(queued.trigger).then(queued.resolve, queued.reject);
    };
    running.then(next, next);
    return running;
  }
}
