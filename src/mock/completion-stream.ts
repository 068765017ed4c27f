import type { Turn } from './conversation.js';
import type { Exchange } from './exchange.js';
import { drained, pause, sever } from './exchange.js';
import type { MockContext, StreamPieces } from './provider-context.js';
import { estimateTokens, splitReply, textPieces } from './provider-context.js';

/** The backend configuration OpenAI names on every chat answer: a string (OpenAI's schema has no null for it), fixed here. */
export const SYSTEM_FINGERPRINT = 'fp_mock';

/** What one streamed completion should look like, decided before the headers go out. */
export interface StreamPlan {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  /** The greeting, a final text after tool results, or a tool call whose arguments stream in pieces. */
  readonly turn: Turn;
  /** The text stopped at its output limit: finish_reason `length`. */
  readonly cut: boolean;
  /** Streamed as `delta.reasoning_content` chunks before the answer, when not null. */
  readonly reasoning: string | null;
  readonly promptTokens: number;
  readonly includeUsage: boolean;
  readonly chunks: number;
  readonly chunkDelayMs: number;
  /** Drop the connection after this many content chunks; -1 = never. */
  readonly cutAfter: number;
}

/**
 * Writes an OpenAI `chat.completion.chunk` event stream: a role chunk, the content chunks, a
 * chunk with finish_reason "stop", the usage chunk when asked for, then `[DONE]`. A tool
 * call streams instead a tool_calls chunk with its id and name, its arguments in `chunks`
 * pieces, and finish_reason "tool_calls". Reasoning, when asked for, streams in
 * `reasoning_content` chunks right after the role chunk. The chunks are
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
    `"model":${JSON.stringify(plan.model)},"system_fingerprint":"${SYSTEM_FINGERPRINT}","choices":[`;
  // OpenAI sends `"usage":null` on every chunk but the last when usage was requested.
  const tail = plan.includeUsage ? '],"usage":null}\n\n' : ']}\n\n';
  const turn = plan.turn;
  // Tool arguments stop at their length rather than repeat themselves, as exact texts do.
  const args = turn.kind === 'tool' ? JSON.stringify(turn.input) : '';
  const pieces: StreamPieces =
    turn.kind === 'tool' ? splitReply(args, Math.min(plan.chunks, args.length)) : textPieces(ctx, turn, plan.chunks);
  const { deltas } = pieces;
  const reasoning = plan.reasoning === null ? null : splitReply(plan.reasoning, Math.max(1, Math.min(plan.chunks, plan.reasoning.length)));
  const reasoningTokens = plan.reasoning === null ? 0 : estimateTokens(plan.reasoning.length);
  const completionTokens = pieces.completionTokens + reasoningTokens;
  // A content chunk is `open + piece + close`; for a tool call the pieces are its argument text.
  const open = turn.kind === 'tool' ? '{"tool_calls":[{"index":0,"function":{"arguments":' : '{"content":';
  const close = turn.kind === 'tool' ? '}}]}' : '}';
  const cutAt = plan.cutAfter < 0 ? -1 : Math.min(plan.cutAfter, deltas.length);
  const delayMs = plan.chunkDelayMs;

  let more = res.write(`${head}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}${tail}`);
  for (const piece of reasoning?.deltas ?? []) {
    more = res.write(`${head}{"index":0,"delta":{"reasoning_content":${piece}},"logprobs":null,"finish_reason":null}${tail}`);
  }
  if (turn.kind === 'tool') {
    const call = {
      index: 0,
      id: `call_${plan.id.slice('chatcmpl-'.length)}`,
      type: 'function',
      function: { name: turn.name, arguments: '' },
    };
    more = res.write(`${head}{"index":0,"delta":{"tool_calls":[${JSON.stringify(call)}]},"logprobs":null,"finish_reason":null}${tail}`);
  }
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
    more = res.write(`${head}{"index":0,"delta":${open}${deltas[i]}${close},"logprobs":null,"finish_reason":null}${tail}`);
  }

  const finish = turn.kind === 'tool' ? 'tool_calls' : plan.cut ? 'length' : 'stop';
  let rest = `${head}{"index":0,"delta":{},"logprobs":null,"finish_reason":"${finish}"}${tail}`;
  if (plan.includeUsage) {
    const p = plan.promptTokens;
    const details = plan.reasoning === null ? '' : `,"completion_tokens_details":{"reasoning_tokens":${reasoningTokens}}`;
    rest +=
      `${head}],"usage":{"prompt_tokens":${p},"completion_tokens":${completionTokens},` +
      `"total_tokens":${p + completionTokens}${details}}}\n\n`;
  }
  res.end(`${rest}data: [DONE]\n\n`);
}
