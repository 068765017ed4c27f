import type { Exchange } from './exchange.js';
import { drained, pause, sever } from './exchange.js';

/** One server-sent event stream: what comes before the content, the content events, and the end. */
export interface EventStreamPlan {
  readonly head: string;
  readonly content: readonly string[];
  readonly tail: string;
  readonly chunkDelayMs: number;
  /** Drop the connection after this many content events; -1 = never. */
  readonly cutAfter: number;
}

/**
 * Writes an SSE response (completions and responses; chat keeps its own tuned writer):
 * the head at once, each content event after `chunkDelayMs`, then the tail, honouring
 * back-pressure and stopping when the client leaves. Resolves true when the whole stream
 * was written, false when it was cut or abandoned.
 */
export async function writeEventStream(ex: Exchange, plan: EventStreamPlan): Promise<boolean> {
  const { res } = ex;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-mock-provider': ex.name });
  // Without this Node holds the headers back until the first write.
  res.flushHeaders();
  let more = plan.head === '' ? true : res.write(plan.head);
  const cutAt = plan.cutAfter < 0 ? -1 : Math.min(plan.cutAfter, plan.content.length);
  for (let i = 0; ; i++) {
    if (!more) await drained(ex);
    if (ex.closed) return false;
    if (i === cutAt) {
      sever(ex);
      return false;
    }
    if (plan.chunkDelayMs > 0) {
      await pause(ex, plan.chunkDelayMs);
      if (ex.closed) return false;
    }
    if (i === plan.content.length) break;
    more = res.write(plan.content[i] as string);
  }
  res.end(plan.tail);
  return true;
}
