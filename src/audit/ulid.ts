import { randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * ULIDs (48-bit ms time + 80 random bits, Crockford base32): sortable by time, and
 * monotonic within one millisecond (the random part is incremented), so one writer's ids
 * sort in append order. A dozen lines instead of a dependency.
 */
export class UlidGenerator {
  readonly #clock: () => number;
  readonly #random: (bytes: Uint8Array) => void;
  #lastMs = -1;
  readonly #entropy = new Uint8Array(10);

  constructor(clock: () => number = Date.now, random: (bytes: Uint8Array) => void = (b) => void randomFillSync(b)) {
    this.#clock = clock;
    this.#random = random;
  }

  next(): string {
    let ms = this.#clock();
    // A clock that steps back keeps the last time, so ids never sort before earlier ones.
    if (ms <= this.#lastMs) {
      ms = this.#lastMs;
      if (!increment(this.#entropy)) {
        ms += 1;
        this.#random(this.#entropy);
      }
    } else {
      this.#random(this.#entropy);
    }
    this.#lastMs = ms;
    return encodeTime(ms) + encodeEntropy(this.#entropy);
  }
}

function increment(bytes: Uint8Array): boolean {
  for (let i = bytes.length - 1; i >= 0; i -= 1) {
    if ((bytes[i] as number) < 255) {
      bytes[i] = (bytes[i] as number) + 1;
      return true;
    }
    bytes[i] = 0;
  }
  return false;
}

function encodeTime(ms: number): string {
  let out = '';
  let t = ms;
  for (let i = 0; i < 10; i += 1) {
    out = (CROCKFORD[t % 32] as string) + out;
    t = Math.floor(t / 32);
  }
  return out;
}

function encodeEntropy(bytes: Uint8Array): string {
  // 80 bits = 16 base32 digits, taken 5 bits at a time from the big-endian bytes.
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const b of bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += CROCKFORD[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  return out;
}

export const ULID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/;
