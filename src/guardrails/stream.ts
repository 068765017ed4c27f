import type { Finding } from './detectors/index.js';

// Masking and restoring inside a stream. An answer arrives in chunks, and a value to mask (a
// card number, an email) or a placeholder to restore (`<EMAIL_1>`) may be split across two of
// them. Each transform below releases text as soon as no match can still begin in it, and
// holds back only the tail that could: at most the detectors' reach (the longest match they
// can make), so the client still receives a stream of small pieces, not one final burst.

/** What a stream masker needs of its detectors. */
export interface StreamDetectors {
  /** Every finding in `text`, sorted, not overlapping. */
  detect(text: string): readonly Finding[];
  /**
   * The most characters a match can span, plus the context a detector reads around it (a
   * word boundary): a finding that starts this far before the end of the text seen is final.
   */
  readonly reach: number;
  /**
   * How many characters at the end of `text` could still be part of a match, when the
   * detectors can tell it is fewer than the reach (an email has no whitespace in it, so it
   * is no longer than the text's last unbroken run); absent: the reach.
   */
  hold?(text: string): number;
  /** How far before a match the detectors read (a context word, a label); absent: the reach. */
  readonly context?: number;
}

/** The least text a push releases: below it the text waits for more (each release runs the detectors over the window). */
const MIN_RELEASE = 32;

/**
 * Masks a stream incrementally. `push` returns the text that may be released now, masked;
 * `end` returns the rest. The text released, joined, equals masking the whole text at once,
 * given detectors whose findings in a text do not depend on what follows it by more than
 * their reach.
 */
export class StreamMasker {
  readonly #detectors: StreamDetectors;
  readonly #mask: (text: string, findings: readonly Finding[]) => string;
  #held = '';
  readonly #context: number;
  /** The last `context` characters released, unmasked: the left context of what is held. */
  #before = '';

  constructor(detectors: StreamDetectors, mask: (text: string, findings: readonly Finding[]) => string) {
    this.#detectors = detectors;
    this.#mask = mask;
    this.#context = detectors.context ?? detectors.reach;
  }

  /** The text held back now (not yet released): at most about the reach, unless a match is still open. */
  get held(): number {
    return this.#held.length;
  }

  push(chunk: string): string {
    const text = this.#held + chunk;
    const detectors = this.#detectors;
    const reach = detectors.reach;
    const keep = detectors.hold === undefined ? reach : Math.min(reach, detectors.hold(text));
    let release = text.length - keep;
    // Detection reads the whole held window: run it once some text can go, not on every token.
    if (release < MIN_RELEASE) {
      this.#held = text;
      return '';
    }
    // The detectors see the released text's last `context` characters too (a boundary, a
    // context word), as they would in the whole text; findings there were released already.
    const before = this.#before.length;
    const kept: Finding[] = [];
    for (const f of this.#detectors.detect(this.#before + text)) {
      const start = f.start - before;
      if (start < 0) continue;
      if (start >= release) break;
      // A finding that straddles the release point is final (it began more than the reach
      // before the end), so it goes out whole; one that begins after the point waits.
      if (f.end - before > release) release = f.end - before;
      kept.push({ entity: f.entity, start, end: f.end - before });
    }
    const out = text.slice(0, release);
    this.#held = text.slice(release);
    this.#before = (this.#before + out).slice(-this.#context);
    return this.#mask(out, kept);
  }

  end(): string {
    const text = this.#held;
    this.#held = '';
    if (text === '') return '';
    const before = this.#before.length;
    const kept: Finding[] = [];
    for (const f of this.#detectors.detect(this.#before + text)) {
      if (f.start >= before) kept.push({ entity: f.entity, start: f.start - before, end: f.end - before });
    }
    return this.#mask(text, kept);
  }
}

/**
 * Restores placeholders in a stream: text is released up to the last `<` that could still
 * open a placeholder (no `>` after it, within the longest placeholder's length), so a
 * placeholder split across chunks is restored whole.
 */
export class StreamRestorer {
  readonly #restore: (text: string) => string;
  readonly #longest: number;
  #held = '';

  /** `longest`: the length of the longest placeholder the request's mapping holds. */
  constructor(restore: (text: string) => string, longest: number) {
    this.#restore = restore;
    this.#longest = longest;
  }

  push(chunk: string): string {
    const text = this.#held + chunk;
    const open = text.lastIndexOf('<');
    const hold = open !== -1 && text.length - open < this.#longest && text.indexOf('>', open) === -1;
    const release = hold ? open : text.length;
    this.#held = text.slice(release);
    return this.#restore(text.slice(0, release));
  }

  end(): string {
    const text = this.#held;
    this.#held = '';
    return this.#restore(text);
  }
}
