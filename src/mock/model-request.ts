import type { Exchange } from './exchange.js';
import { drop, pause, replyJson } from './exchange.js';
import type { MockContext } from './provider-context.js';

/**
 * Answers a request once its fault (if any) allows: `cutAfter` is the number of content
 * chunks to send before dropping the connection (a `cut_stream` fault), -1 for never.
 */
export type ModelAnswer = (ctx: MockContext, ex: Exchange, cutAfter: number) => void;

/**
 * Every model endpoint (chat completions, messages, count_tokens, embeddings) meets the
 * fault queue the same way. The fault is taken on arrival, so queued faults meet requests
 * in arrival order even when latency then delays the answer. A status fault without a
 * custom body answers in the endpoint's own protocol.
 */
export function serveModelRequest(ctx: MockContext, ex: Exchange, protocol: 'openai' | 'anthropic' | 'gemini', answer: ModelAnswer): void {
  const fault = ctx.faults.take();
  const respond = (): void => {
    if (fault?.mode === 'status') {
      const body = protocol === 'anthropic' ? fault.anthropicBodyText : protocol === 'gemini' ? fault.geminiBodyText : fault.bodyText;
      return replyJson(ex, fault.status, body, fault.headers);
    }
    if (fault?.mode === 'close') return drop(ex);
    if (fault?.mode === 'hang') return;
    answer(ctx, ex, fault?.mode === 'cut_stream' ? fault.afterChunks : -1);
  };
  const delayMs = fault?.mode === 'latency' ? ctx.latencyMs + fault.latencyMs : ctx.latencyMs;
  if (delayMs <= 0) return respond();
  void pause(ex, delayMs).then(() => {
    if (!ex.closed) respond();
  });
}
