import { bedrockErrorHeaders, bedrockErrorType } from './bedrock-errors.js';
import type { Exchange } from './exchange.js';
import { drop, pause, replyJson } from './exchange.js';
import type { ActiveFault } from './fault-queue.js';
import type { MockContext } from './provider-context.js';

/**
 * Answers a request once its fault (if any) allows: `cutAfter` is the number of content
 * chunks to send before dropping the connection (a `cut_stream` fault), -1 for never.
 * `fault` is the one taken, for an endpoint that answers a `stream_exception` its own way.
 */
export type ModelAnswer = (ctx: MockContext, ex: Exchange, cutAfter: number, fault: ActiveFault | undefined) => void;

export type ModelProtocol = 'openai' | 'anthropic' | 'gemini' | 'bedrock';

function faultBody(fault: ActiveFault, protocol: ModelProtocol): string {
  if (protocol === 'anthropic') return fault.anthropicBodyText;
  if (protocol === 'gemini') return fault.geminiBodyText;
  if (protocol === 'bedrock') return fault.bedrockBodyText;
  return fault.bodyText;
}

/**
 * Every model endpoint (chat completions, messages, count_tokens, embeddings) meets the
 * fault queue the same way. The fault is taken on arrival, so queued faults meet requests
 * in arrival order even when latency then delays the answer. A status fault without a
 * custom body answers in the endpoint's own protocol.
 */
export function serveModelRequest(ctx: MockContext, ex: Exchange, protocol: ModelProtocol, answer: ModelAnswer): void {
  const fault = ctx.faults.take();
  const respond = (): void => {
    if (fault?.mode === 'status') {
      // Bedrock names its error in a header, which the fault's own headers may still override.
      const headers = protocol === 'bedrock' ? { ...bedrockErrorHeaders(bedrockErrorType(fault.status)), ...fault.headers } : fault.headers;
      return replyJson(ex, fault.status, faultBody(fault, protocol), headers);
    }
    if (fault?.mode === 'close') return drop(ex);
    if (fault?.mode === 'hang') return;
    const cuts = fault?.mode === 'cut_stream' || fault?.mode === 'stream_exception';
    answer(ctx, ex, cuts ? fault.afterChunks : -1, fault);
  };
  const delayMs = fault?.mode === 'latency' ? ctx.latencyMs + fault.latencyMs : ctx.latencyMs;
  if (delayMs <= 0) return respond();
  void pause(ex, delayMs).then(() => {
    if (!ex.closed) respond();
  });
}
