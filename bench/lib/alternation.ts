/**
 * Runs `measure` for every target in A-B-C then C-B-A order, so a slow drift of the
 * machine (thermal, page cache, a neighbour) weighs on every target alike. Returns each
 * target's runs in the order they happened.
 */
export async function alternate<K extends string, R>(
  keys: readonly K[],
  measure: (key: K, round: number) => Promise<R>,
): Promise<Record<K, R[]>> {
  const out = Object.fromEntries(keys.map((k) => [k, [] as R[]])) as Record<K, R[]>;
  const order = [...keys, ...[...keys].reverse()];
  for (const [i, key] of order.entries()) {
    out[key].push(await measure(key, i < keys.length ? 0 : 1));
  }
  return out;
}
