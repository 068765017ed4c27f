// The response cache's lookups since the gateway started, for /admin/status and the status
// page: per route and team, counts by result and the money hits saved. Fixed memory per
// pair: routes come from config (any other is counted as `none`) and teams from the
// keyring, so the pairs are few.

/** What a lookup came to: as the request record's CacheOutcome has it. */
export type CacheResult = 'hit' | 'miss' | 'refresh' | 'bypass' | 'error';

const RESULTS: readonly CacheResult[] = ['hit', 'miss', 'refresh', 'bypass', 'error'];

export interface CacheStatsRow {
  readonly route: string;
  /** `none` for an anonymous caller. */
  readonly team: string;
  /** Requests by what the cache made of them; every result is present. */
  readonly lookups: Readonly<Record<CacheResult, number>>;
  /**
   * hits / (hits + misses + refreshes + errors): of the requests the cache could have
   * answered, the share it did (a bypass asked it not to); null before any such request.
   */
  readonly hitRate: number | null;
  /** What the hits' entries cost when they were made, in micro-USD. */
  readonly savedMicroUsd: number;
  /** Answers kept as entries (after a miss, a refresh or an error; not one too large, a fallback's or a tool call's). */
  readonly stored: number;
}

class CacheCounts {
  readonly lookups: Record<CacheResult, number> = { hit: 0, miss: 0, refresh: 0, bypass: 0, error: 0 };
  savedMicroUsd = 0;
  stored = 0;
}

export class CacheStats {
  /** route -> team -> counts. */
  readonly #byRoute = new Map<string, Map<string, CacheCounts>>();

  record(route: string, team: string, result: CacheResult, savedMicroUsd: number, stored = false): void {
    // A result this class does not know is not counted rather than minting a key.
    if (!RESULTS.includes(result)) return;
    let byTeam = this.#byRoute.get(route);
    if (byTeam === undefined) this.#byRoute.set(route, (byTeam = new Map()));
    let counts = byTeam.get(team);
    if (counts === undefined) byTeam.set(team, (counts = new CacheCounts()));
    counts.lookups[result] += 1;
    counts.savedMicroUsd += savedMicroUsd;
    if (stored) counts.stored += 1;
  }

  /** Every route and team with a lookup since start, by route then team. */
  view(): CacheStatsRow[] {
    const rows: CacheStatsRow[] = [];
    for (const route of [...this.#byRoute.keys()].sort()) {
      const byTeam = this.#byRoute.get(route) as Map<string, CacheCounts>;
      for (const team of [...byTeam.keys()].sort()) {
        const c = byTeam.get(team) as CacheCounts;
        const l = c.lookups;
        const servable = l.hit + l.miss + l.refresh + l.error;
        rows.push({
          route,
          team,
          lookups: { ...l },
          hitRate: servable === 0 ? null : l.hit / servable,
          savedMicroUsd: c.savedMicroUsd,
          stored: c.stored,
        });
      }
    }
    return rows;
  }
}
