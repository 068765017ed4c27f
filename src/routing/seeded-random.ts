/**
 * A seeded [0, 1) source for `random` and `weighted` selection (mulberry32: 32-bit state,
 * fast, well spread for this use; not for anything secret). The gateway uses it when
 * SWITCHYARD_RANDOM_SEED is set, so a test or benchmark can replay the same choices.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
