import type { TokenUsage } from './metering.js';
import { usageFromJson, usageFromSseTail } from './openai-body.js';

// An OpenAI-compatible body reports its usage at its end, in both kinds of body (the JSON's
// `usage`, a stream's last event before `[DONE]`). A body relayed as it goes is read there:
// only a bounded tail of its chunks is kept, not the body.

/** The tail kept to read usage from. */
const USAGE_TAIL_BYTES = 16 * 1024;

/**
 * Adds `chunk` to `kept` (which holds `bytes`) and drops the chunks at its front that the
 * last USAGE_TAIL_BYTES no longer reach; returns the bytes `kept` then holds.
 */
export function keepTail(kept: Buffer[], bytes: number, chunk: Buffer): number {
  kept.push(chunk);
  let held = bytes + chunk.length;
  while (held - (kept[0] as Buffer).length >= USAGE_TAIL_BYTES) held -= (kept.shift() as Buffer).length;
  return held;
}

/** The usage a kept tail of `bytes` reports, read as a stream's events (`sse`) or a JSON body's end. */
export function usageOfTail(kept: readonly Buffer[], bytes: number, sse: boolean): TokenUsage | null {
  if (bytes === 0) return null;
  const tail = kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept, bytes);
  return sse ? usageFromSseTail(tail.toString('utf8')) : usageFromJson(tail);
}
