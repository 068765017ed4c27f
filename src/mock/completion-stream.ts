import type { Exchange } from './exchange.js';
import { drained, pause, sever } from './exchange.js';
import type { MockContext } from './provider-context.js';

/** What one streamed completion should look like, decided before the headers go out. */
export interface StreamPlan {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly promptTokens: number;
  readonly includeUsage: boolean;
  readonly chunks: number;
  readonly chunkDelayMs: number;
  /** Drop the connection after this many content chunks; -1 = never. */
  readonly cutAfter: number;
}

/**
 * Writes an OpenAI `chat.completion.chunk` event stream: a role chunk, the content chunks, a
 * chunk with finish_reason "stop", the usage chunk when asked for, then `[DONE]`. The chunks are
 * assembled from one per-stream prefix rather than JSON.stringify'd, since the benchmark counts
 * this work as its "direct" baseline.
 */
export async function streamCompletion(ctx: MockContext, ex: Exchange, plan: StreamPlan): Promise<void> {
  const { res } = ex;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-mock-provider': ex.name,
  });
  // Without this Node holds the headers back until the first write, and a client waiting on
  // the response would not see the stream start during a long first delay.
  res.flushHeaders();

  const head =
    `data: {"id":"${plan.id}","object":"chat.completion.chunk","created":${plan.created},` +
    `"model":${JSON.stringify(plan.model)},"system_fingerprint":null,"choices":[`;
  // OpenAI sends `"usage":null` on every chunk but the last when usage was requested.
  const tail = plan.includeUsage ? '],"usage":null}\n\n' : ']}\n\n';
  const { deltas, completionTokens } = ctx.piecesFor(plan.chunks);
  const cutAt = plan.cutAfter < 0 ? -1 : Math.min(plan.cutAfter, deltas.length);
  const delayMs = plan.chunkDelayMs;

  let more = res.write(`${head}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}${tail}`);
  // Iteration i writes content chunk i; the extra last iteration only waits before the finish.
  for (let i = 0; ; i++) {
    if (!more) await drained(ex);
    if (ex.closed) return;
    if (i === cutAt) return sever(ex);
    if (delayMs > 0) {
      await pause(ex, delayMs);
      if (ex.closed) return;
    }
    if (i === deltas.length) break;
    more = res.write(`${head}{"index":0,"delta":{"content":${deltas[i]}},"logprobs":null,"finish_reason":null}${tail}`);
  }

  let rest = `${head}{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}${tail}`;
  if (plan.includeUsage) {
    const p = plan.promptTokens;
    rest +=
      `${head}],"usage":{"prompt_tokens":${p},"completion_tokens":${completionTokens},` + `"total_tokens":${p + completionTokens}}}\n\n`;
  }
  res.end(`${rest}data: [DONE]\n\n`);
}
