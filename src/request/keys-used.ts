/**
 * When each key was last used, noted at most once a minute per key so that the request
 * path pays a map lookup: the composition root takes what is pending and writes it to the
 * database off the request path (managed keys show `last_used_at`).
 */
export class KeysUsed {
  static readonly EVERY_MS = 60_000;
  readonly #noted = new Map<string, number>();
  #pending = new Map<string, number>();

  seen(keyId: string, nowMs: number): void {
    const last = this.#noted.get(keyId);
    if (last !== undefined && nowMs - last < KeysUsed.EVERY_MS) return;
    this.#noted.set(keyId, nowMs);
    this.#pending.set(keyId, nowMs);
  }

  /**
   * When this process last noted the key in use (to the minute), as an RFC 3339 time; null
   * when it has not. The keys of the config file have no row to write it to: this is their
   * last_used_at, per process.
   */
  lastUsed(keyId: string): string | null {
    const ms = this.#noted.get(keyId);
    return ms === undefined ? null : new Date(ms).toISOString();
  }

  /** The uses noted since the last take, as RFC 3339 times by key id. */
  take(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [id, ms] of this.#pending) out.set(id, new Date(ms).toISOString());
    this.#pending = new Map();
    return out;
  }

  /** Put back what could not be written, unless a newer use replaced it. */
  restore(uses: ReadonlyMap<string, string>): void {
    for (const [id, at] of uses) if (!this.#pending.has(id)) this.#pending.set(id, Date.parse(at));
  }
}
