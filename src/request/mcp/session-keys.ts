import type { Principal } from '../../governance/index.js';
import type { Keyring, KeyringHolder } from '../../live/index.js';
import { policyOf } from '../policy.js';
import type { ClientSession, ClientSessions } from './sessions.js';

/** setTimeout holds at most 2^31-1 ms; a timer that fires early only checks again. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A session ends with its key. After every swap the sessions of a key the new keyring
 * no longer accepts (revoked or deleted: a reload, trigger `database` for a managed key, on
 * every replica) end, and their GET streams with them; a key that expires later is watched
 * by one timer, set to the earliest expires_at among the keys that hold sessions, so an open
 * stream ends when its key does rather than at its next request (a stream has none).
 */
export class SessionKeyWatch {
  readonly #sessions: ClientSessions;
  readonly #holder: KeyringHolder;
  readonly #end: (session: ClientSession) => void;
  #timer: NodeJS.Timeout | null = null;
  #atMs = Number.POSITIVE_INFINITY;
  #closed = false;

  constructor(sessions: ClientSessions, holder: KeyringHolder, end: (session: ClientSession) => void) {
    this.#sessions = sessions;
    this.#holder = holder;
    this.#end = end;
  }

  /** Ends the sessions whose key `keyring` does not accept now, and sets the timer to the next expiry. */
  check(keyring: Keyring): void {
    const keys = policyOf(keyring).keys;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const session of [...this.#sessions.values()]) {
      const keyId = session.principal.keyId;
      // A signed-in caller has no key to revoke: each request shows its token again.
      if (keyId === null || session.principal.grant !== undefined) continue;
      const record = keys.byId.get(keyId);
      const expiresAtMs = record?.expiresAtMs ?? null;
      if (record === undefined || (expiresAtMs !== null && expiresAtMs <= now)) {
        this.#end(session);
        continue;
      }
      if (expiresAtMs !== null) next = Math.min(next, expiresAtMs);
    }
    this.#arm(next, true);
  }

  /** A new session's key: the timer moves sooner if the key expires before it fires. */
  watch(principal: Principal): void {
    if (principal.keyId === null || principal.grant !== undefined || !this.#holder.ready) return;
    const expiresAtMs = policyOf(this.#holder.current()).keys.byId.get(principal.keyId)?.expiresAtMs ?? null;
    if (expiresAtMs !== null) this.#arm(expiresAtMs, false);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Sets the timer to `atMs`: always (`replace`), or only when that is sooner. */
  #arm(atMs: number, replace: boolean): void {
    if (this.#closed || (!replace && atMs >= this.#atMs)) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#atMs = atMs;
    if (atMs === Number.POSITIVE_INFINITY) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#atMs = Number.POSITIVE_INFINITY;
        if (this.#holder.ready) this.check(this.#holder.current());
      },
      Math.min(Math.max(0, atMs - Date.now()) + 1, MAX_TIMER_MS),
    );
    this.#timer.unref();
  }
}
