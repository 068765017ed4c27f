// Rollback protection, where this project goes further than the original consumer: a
// control plane's source object only moves forward, so a revision rendered from an older
// generation of the same source (a stale replica, a restored backup) is refused.
import { quote } from './credential-value.js';
import type { ParsedOverlay, Rejection } from './types.js';
import { reject } from './types.js';

/**
 * May `next` replace `serving`? Refused only when both come from the same
 * `provenance.source_uid` and `next` has a lower `source_generation`. An equal generation is
 * accepted (a producer may re-render after an inventory change); a new source_uid means the
 * source object was recreated, and its generations start over.
 */
export function checkSuccession(serving: ParsedOverlay | undefined, next: ParsedOverlay): { ok: true } | Rejection<'rollback'> {
  const was = serving?.provenance;
  const now = next.provenance;
  if (!was || !now || was.source_uid !== now.source_uid) return { ok: true };
  if (now.source_generation >= was.source_generation) return { ok: true };
  return reject(
    'rollback',
    `provenance.source_generation: ${now.source_generation} is lower than the serving ${was.source_generation} ` +
      `from the same source_uid ${quote(now.source_uid)}; refusing to roll back`,
  );
}
