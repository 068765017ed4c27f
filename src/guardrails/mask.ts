// Masking replaces each finding by a typed placeholder (`<EMAIL_1>`, `<CREDIT_CARD_2>`) so
// the model still knows what stood there, and restoring puts the originals back wherever the
// model repeats a placeholder. A Mapping lives for one request: the numbering is per entity
// and per request, and the same value always gets the same placeholder, so the model can tell
// "the same card twice" from "two cards".

import type { Finding } from './detectors/index.js';

/** A placeholder's label is the entity upper-cased, at most this long; its number at most 7 digits. */
const LABEL_MAX_CHARS = 32;
/** The longest placeholder any mapping can issue: `<`, label, `_`, number, `>`. */
export const PLACEHOLDER_MAX_CHARS = 1 + LABEL_MAX_CHARS + 1 + 7 + 1;

// Bounded, so a `<` followed by a long run of capitals costs a bounded attempt.
const PLACEHOLDER = /<([A-Z][A-Z0-9_]{0,31})_([1-9][0-9]{0,6})>/g;

function labelOf(entity: string): string {
  const label = entity.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
  return (/^[A-Z]/.test(label) ? label : `X${label}`).slice(0, LABEL_MAX_CHARS);
}

/** The placeholders of one request, both ways. */
export class Mapping {
  readonly #byValue = new Map<string, string>();
  readonly #byPlaceholder = new Map<string, string>();
  readonly #lastNumber = new Map<string, number>();
  /** Placeholder-shaped text the caller wrote: never issued, so restoring cannot rewrite it. */
  readonly #reserved = new Set<string>();
  /** The placeholders an answer may have put back (issued by a guardrail with `restore: true`). */
  readonly #restorable = new Set<string>();
  #longest = 0;

  /**
   * Sets aside every placeholder-shaped string in `text`. Call it on all of a request's
   * texts before masking any: a caller who writes `<EMAIL_1>` literally in one message must
   * not have it restored to an address masked in another.
   */
  reserve(text: string): void {
    for (const m of text.matchAll(PLACEHOLDER)) {
      if (!this.#byPlaceholder.has(m[0])) this.#reserved.add(m[0]);
    }
  }

  /**
   * The placeholder for `original` as an `entity`: the one issued before, or the entity's
   * next number. `restore`: the answer may have it put back (a guardrail with `restore: true`).
   */
  placeholderFor(entity: string, original: string, restore = true): string {
    const key = `${entity}\u0000${original}`;
    const known = this.#byValue.get(key);
    if (known !== undefined) {
      if (restore) this.#restorable.add(known);
      return known;
    }
    const label = labelOf(entity);
    let n = this.#lastNumber.get(label) ?? 0;
    let placeholder: string;
    do placeholder = `<${label}_${++n}>`;
    while (this.#reserved.has(placeholder));
    this.#lastNumber.set(label, n);
    this.#byValue.set(key, placeholder);
    this.#byPlaceholder.set(placeholder, original);
    if (restore) {
      this.#restorable.add(placeholder);
      this.#longest = Math.max(this.#longest, placeholder.length);
    }
    return placeholder;
  }

  /** The original a placeholder stands for, if this mapping issued it to be restored. */
  originalOf(placeholder: string): string | undefined {
    return this.#restorable.has(placeholder) ? this.#byPlaceholder.get(placeholder) : undefined;
  }

  /** Sets aside every placeholder `other` issued: a second mapping of the same request (the answer's) never issues one of them. */
  reserveIssued(other: Mapping): void {
    for (const p of other.#byPlaceholder.keys()) this.#reserved.add(p);
  }

  /** How many placeholders were issued to be restored. */
  get size(): number {
    return this.#restorable.size;
  }

  /** The length of the longest placeholder issued to be restored (0 before any): what a streaming restorer holds back. */
  get longestPlaceholder(): number {
    return this.#longest;
  }
}

/**
 * `text` with each finding replaced by its placeholder in `mapping`. Findings must be sorted
 * and not overlap (as the detectors return them); one that overlaps its predecessor is skipped.
 */
export function maskText(text: string, findings: readonly Finding[], mapping: Mapping, restore = true): string {
  mapping.reserve(text);
  let out = '';
  let at = 0;
  for (const f of findings) {
    if (f.start < at || f.end <= f.start || f.end > text.length) continue;
    out += text.slice(at, f.start) + mapping.placeholderFor(f.entity, text.slice(f.start, f.end), restore);
    at = f.end;
  }
  return at === 0 ? text : out + text.slice(at);
}

/**
 * `text` with every placeholder `mapping` issued replaced by its original, as often as it
 * appears; placeholders it did not issue (made up by the model, or written by the caller)
 * stay as they are.
 */
export function restoreText(text: string, mapping: Mapping): string {
  if (mapping.size === 0) return text;
  return text.replace(PLACEHOLDER, (p) => mapping.originalOf(p) ?? p);
}

/** restoreText inside a JSON string's text (a tool call's arguments): each original is written JSON-escaped. */
export function restoreJsonText(text: string, mapping: Mapping): string {
  if (mapping.size === 0) return text;
  return text.replace(PLACEHOLDER, (p) => {
    const original = mapping.originalOf(p);
    return original === undefined ? p : JSON.stringify(original).slice(1, -1);
  });
}
