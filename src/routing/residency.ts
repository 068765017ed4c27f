// The residency filter: whether a candidate may receive a caller's request, by the zones its
// provider is labelled with. The caller's rule and each provider's zone set are built once
// (with the keyring, and with the generation); a request only looks its zones up, and only
// when its caller has a rule at all (ADR 0043).

/** A team's or a key's `residency`, compiled: the zones its requests may reach. */
export interface ResidencyRule {
  readonly allow: readonly string[];
  /** A provider without `zones` is outside (true) or inside (false). */
  readonly failClosed: boolean;
}

/** Whether a provider labelled `zones` (null = unlabelled) lies within `rule`. */
export function withinResidency(rule: ResidencyRule, zones: ReadonlySet<string> | null): boolean {
  if (zones === null) return !rule.failClosed;
  for (const zone of rule.allow) if (zones.has(zone)) return true;
  return false;
}
