import { RE2JS, RE2Set } from 're2js';
import type { RegexGuardrailConfig } from '../config/index.js';
import { type Finding, resolveOverlaps } from './detectors/index.js';

// The `regex` guardrail: an operator's RE2 patterns, compiled once per generation. RE2 runs
// in time linear in the text whatever the pattern, so a pattern such as `(a+)+$` cannot
// stall the gateway on a crafted prompt the way a backtracking engine (JavaScript's own
// RegExp) would. The config schema has already refused what RE2 cannot compile.

/** A pattern's match, UTF-16 offsets (what String.prototype.slice takes): its category, or `pattern_<i>` (its index in `patterns`), as `entity`. */
export type PatternFinding = Finding;

export interface RegexGuardrail {
  /** Every match of every pattern in `text`, sorted by start, none overlapping another. */
  findAll(text: string): PatternFinding[];
  /**
   * How far back a stream must hold text so that a match split across chunks is still
   * seen: a pattern may match without bound (`a+`), so this is the operator's window_chars.
   */
  readonly reach: number;
}

interface CompiledPattern {
  readonly entity: string;
  readonly re: RE2JS;
}

export function compileRegexGuardrail(config: Pick<RegexGuardrailConfig, 'patterns' | 'categories' | 'window_chars'>): RegexGuardrail {
  const compiled: CompiledPattern[] = config.patterns.map((pattern, i) => ({
    entity: config.categories?.[i] ?? `pattern_${i}`,
    re: compileOne(pattern, i),
  }));
  // One pass over the text tells which patterns match at all (the usual answer: none), so
  // only those are walked for their positions.
  const set = new RE2Set();
  for (const pattern of config.patterns) set.add(pattern);
  set.compile();
  return {
    findAll(text: string): PatternFinding[] {
      if (text.length === 0) return [];
      const found: PatternFinding[] = [];
      // In pattern order, so that of two equal spans the earlier pattern's is kept.
      for (const id of set.match(text).sort((a, b) => a - b)) {
        const p = compiled[id];
        if (p !== undefined) collect(p, text, found);
      }
      // Of two patterns' overlapping matches the longer stays, as the built-in detectors resolve theirs.
      return resolveOverlaps(found);
    },
    reach: config.window_chars,
  };
}

function compileOne(pattern: string, index: number): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (error) {
    // The config schema compiles every pattern first; reaching here means it was bypassed.
    throw new Error(`patterns[${index}]: RE2 cannot compile it: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Every match of one pattern, leftmost first. An empty match (`x*` between two letters) marks
 * no text, so it is no finding. re2js reads a JavaScript string as UTF-16 and reports UTF-16
 * offsets, so they index `text` as they are.
 */
function collect(p: CompiledPattern, text: string, into: PatternFinding[]): void {
  const m = p.re.matcher(text);
  while (m.find()) {
    const start = m.start();
    const end = m.end();
    if (end > start) into.push({ entity: p.entity, start, end });
  }
}
