import type { Principal } from '../governance/index.js';
import type { Generation, Keyring } from '../live/index.js';

// What a route's settings come to for one caller (its guardrails, its cache), resolved once
// per route, team and key for a generation and keyring pair: a request then pays a map
// lookup. Bounded, since the keys are callers; a new generation or keyring starts afresh.

const MAX_RESOLVED = 4096;

/** A memo of `resolve` per (generation, keyring, model, team, key). */
export function callerMemo<T>(resolve: (gen: Generation, keyring: Keyring, principal: Principal, model: string) => T) {
  const resolved = new WeakMap<Generation, WeakMap<Keyring, Map<string, T>>>();
  return (gen: Generation, keyring: Keyring, principal: Principal, model: string): T => {
    let byKeyring = resolved.get(gen);
    if (byKeyring === undefined) {
      byKeyring = new WeakMap();
      resolved.set(gen, byKeyring);
    }
    let byCaller = byKeyring.get(keyring);
    if (byCaller === undefined) {
      byCaller = new Map();
      byKeyring.set(keyring, byCaller);
    }
    const key = `${model}\u0000${principal.team ?? ''}\u0000${principal.keyId ?? ''}`;
    let found = byCaller.get(key);
    if (found === undefined) {
      found = resolve(gen, keyring, principal, model);
      if (byCaller.size >= MAX_RESOLVED) byCaller.clear();
      byCaller.set(key, found);
    }
    return found;
  };
}
