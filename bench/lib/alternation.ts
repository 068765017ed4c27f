/**
 * Runs `measure` for every target in A-B-C then C-B-A order, `rounds` times over (2 by
 * default: A-B-C-C-B-A), so a slow drift of the machine (thermal, page cache, a neighbour)
 * weighs on every target alike. More rounds of shorter runs also spread a burst of CPU
 * steal, which on a shared 2-vCPU machine lasts a second or two, over every target rather
 * than one. Returns each target's runs in the order they happened.
 */
export async function alternate<K extends string, R>(
  keys: readonly K[],
  measure: (key: K, round: number) => Promise<R>,
  rounds = 2,
): Promise<Record<K, R[]>> {
  const out = Object.fromEntries(keys.map((k) => [k, [] as R[]])) as Record<K, R[]>;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? keys : [...keys].reverse();
    for (const key of order) out[key].push(await measure(key, round));
  }
  return out;
}

/** How many rounds a load of `durationS` per target is cut into: slices of about a second, 2 to 8 of them. */
export function roundsFor(durationS: number): number {
  return Math.max(2, Math.min(8, Math.floor(durationS)));
}
