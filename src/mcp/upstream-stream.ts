import type { Exchange } from './upstream-exchange.js';
import { exchange } from './upstream-exchange.js';
import { get, type RpcRoute } from './upstream-rpc.js';

// The standalone GET stream of one upstream session: where the server sends what no
// request asked for (tools/list_changed above all). It has no silence bound, since an
// idle server sends nothing; only its headers are timed. When it ends it is reopened with
// Last-Event-ID, so the server can replay what was sent while it was down.

/** The longest wait before reopening the stream. */
const MAX_REOPEN_DELAY_MS = 30_000;

export interface StandingStreamHooks {
  /** The session's route, or null when there is no session any more (the stream stays closed). */
  route(): RpcRoute | null;
  onMessage(message: Record<string, unknown>): void;
  onOpenChange(open: boolean): void;
  /** A 404: the server no longer knows the session. */
  onExpired(): void;
  /** An answer that is neither a stream, a 404 nor a 405; the stream is retried. */
  onFailure(message: string): void;
}

/** A reopening delay: `base`, jittered by up to a fifth either way. */
export function jittered(baseMs: number): number {
  return Math.round(baseMs * (0.8 + Math.random() * 0.4));
}

export class StandingStream {
  readonly #hooks: StandingStreamHooks;
  #current: Exchange | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #open = false;
  #lastEventId: string | null = null;
  #retryMs: number | null = null;
  #failures = 0;

  constructor(hooks: StandingStreamHooks) {
    this.#hooks = hooks;
  }

  get open(): boolean {
    return this.#open;
  }

  start(): void {
    void this.#connect();
  }

  /** Ends the stream for good: no further hooks are called. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#current?.cancel();
    this.#current = null;
    this.#setOpen(false);
  }

  async #connect(): Promise<void> {
    this.#timer = null;
    const route = this.#hooks.route();
    if (this.#closed || route === null) return;
    const base = get(route);
    const headers = this.#lastEventId === null ? base.headers : { ...base.headers, 'last-event-id': this.#lastEventId };
    const current = exchange({
      pool: route.pool,
      call: { ...base, headers, timeoutMs: 0 },
      headersTimeoutMs: route.timeoutMs,
      signal: route.signal,
      onHead: (head) => {
        if (!head.eventStream || this.#closed) return;
        this.#failures = 0;
        this.#setOpen(true);
      },
      onEvent: (event) => {
        if (this.#closed) return;
        if (event.id !== undefined && event.id !== '') this.#lastEventId = event.id;
        if (event.data === '' || (event.event !== undefined && event.event !== 'message')) return;
        let message: unknown;
        try {
          message = JSON.parse(event.data);
        } catch {
          return;
        }
        if (typeof message === 'object' && message !== null && !Array.isArray(message)) {
          this.#hooks.onMessage(message as Record<string, unknown>);
        }
      },
      onRetry: (ms) => {
        this.#retryMs = ms;
      },
    });
    this.#current = current;
    const end = await current.done;
    if (this.#closed || this.#current !== current) return;
    this.#current = null;
    this.#setOpen(false);
    const status = end.head?.status ?? 0;
    if (end.head !== null && !end.head.eventStream) {
      if (status === 405) return; // the server offers no standalone stream: the recheck timer covers it
      if (status === 404) return this.#hooks.onExpired();
      this.#hooks.onFailure(`the event stream answered HTTP ${status}`);
    } else if (end.kind === 'failed' && end.reason !== 'dropped' && end.reason !== 'timeout') {
      this.#hooks.onFailure(`the event stream: ${end.detail}`);
    }
    this.#schedule();
  }

  #schedule(): void {
    const backoff = Math.min(MAX_REOPEN_DELAY_MS, 1000 * 2 ** Math.min(this.#failures, 5));
    this.#failures += 1;
    const delay = Math.min(MAX_REOPEN_DELAY_MS, jittered(this.#retryMs ?? backoff));
    this.#timer = setTimeout(() => void this.#connect(), delay);
    this.#timer.unref();
  }

  #setOpen(open: boolean): void {
    if (this.#open === open) return;
    this.#open = open;
    if (!this.#closed || !open) this.#hooks.onOpenChange(open);
  }
}
