// What every detector returns, and the one rule that makes their results combinable: a text's
// findings are sorted and never overlap, so masking can splice them left to right.

/** A match in a text: UTF-16 offsets, `end` exclusive. */
export interface Finding {
  readonly entity: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Sorts findings by start and drops overlaps: of two that overlap the longer stays, and of
 * two as long the earlier. Longest first, because a card number inside a longer IBAN or a
 * key inside a PEM block is part of the bigger thing, and masking the part would leave the rest.
 */
export function resolveOverlaps(findings: readonly Finding[]): Finding[] {
  const byStart = [...findings].sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: Finding[] = [];
  // One sweep: a finding that overlaps the last one kept replaces it only if longer. The
  // replacement starts at or after the last one's start, so it cannot reach back into the
  // one before (which ends at or before that start).
  for (const f of byStart) {
    const last = kept[kept.length - 1];
    if (last === undefined || f.start >= last.end) kept.push(f);
    else if (f.end - f.start > last.end - last.start) kept[kept.length - 1] = f;
  }
  return kept;
}

/**
 * Runs `accept` on each match of a global `pattern` in `text`. A rejected candidate does not
 * consume its text: the scan resumes one character after its start, so a loose candidate that
 * ran across two numbers ("+1 415 555 2671 4111…") does not hide the second. Every pattern
 * used here bounds its quantifiers, so each start costs at most the pattern's reach.
 */
export function scanCandidates(text: string, pattern: RegExp, accept: (m: RegExpExecArray) => boolean): void {
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    if (!accept(m)) pattern.lastIndex = m.index + 1;
    else if (m[0].length === 0) pattern.lastIndex++;
  }
}
