import { z } from 'zod';

// Data residency in the config: where a provider processes data (`region`, `zones` on every
// provider type) and where a team's or a key's requests may go (`residency`). The request
// path reads the compiled form (routing/residency.ts); this file only parses and relates them.

/** A zone label (`eu`, `gdpr`, `us-gov`): short, lower-case, compared exactly. */
export const zoneLabel = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'must be a short zone label: 1-32 of a-z 0-9 _ - (such as eu or gdpr)');

/** `providers.<name>.zones`: the zones the provider processes data in. */
export const zonesSchema = z
  .array(zoneLabel)
  .max(32)
  .refine((zones) => new Set(zones).size === zones.length, 'must not repeat a zone');

/** `providers.<name>.region`: where it runs, as free text (`eu-west-1`, `Frankfurt`); shown, never matched. */
export const providerRegion = z.string().min(1, 'must be a non-empty region name').max(128);

/** `teams.<id>.residency` and `keys[].residency`: the only zones the caller's requests may reach. */
export const residencySchema = z.strictObject({
  allow: zonesSchema.refine((zones) => zones.length > 0, 'must name at least one zone'),
  /** A provider with no `zones` counts as outside (true), or as inside (false). */
  fail_closed: z.boolean().default(true),
});
export type ResidencyConfig = z.infer<typeof residencySchema>;

/**
 * Where a key's residency is wider than its team's, as paths under the key's `residency`
 * (`allow[1]`, `fail_closed`) with the reason: a key may narrow its team's residency, never
 * widen it. A team without residency has no limit; a key without one has its team's.
 */
export function widerResidency(
  key: ResidencyConfig | undefined,
  team: ResidencyConfig | undefined,
  teamId: string,
): Array<{ readonly path: readonly (string | number)[]; readonly message: string }> {
  if (key === undefined || team === undefined) return [];
  const within = new Set(team.allow);
  const wider: Array<{ path: readonly (string | number)[]; message: string }> = [];
  key.allow.forEach((zone, i) => {
    if (!within.has(zone))
      wider.push({
        path: ['allow', i],
        message: `zone "${zone}" is outside team "${teamId}"'s residency (${team.allow.join(', ')}): a key may narrow its team's zones, never widen them`,
      });
  });
  if (team.fail_closed && !key.fail_closed)
    wider.push({
      path: ['fail_closed'],
      message: `must stay true: team "${teamId}" counts a provider without zones as outside, and a key may not count it as inside`,
    });
  return wider;
}
