import { createHash, randomUUID } from 'node:crypto';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { replyBedrockError, STREAM_EXCEPTION_STATUS, STREAM_EXCEPTIONS } from './bedrock-errors.js';
import type { ConverseUsage } from './bedrock-prompt.js';
import { converseProblem, converseTail, converseUsage, MAX_INPUT_TOKENS } from './bedrock-prompt.js';
import type { Turn } from './conversation.js';
import { decideTurn, isRecord, reasoningText } from './conversation.js';
import type { Exchange } from './exchange.js';
import { drained, pause, replyJson, replyTruncated, sever } from './exchange.js';
import type { ActiveFault } from './fault-queue.js';
import { serveModelRequest } from './model-request.js';
import { cutText, outputLimitOf } from './output-limit.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens, splitReply, textPieces } from './provider-context.js';
import { checkSignature } from './sigv4-check.js';

// The Bedrock Runtime Converse API, served alone with `--protocol bedrock`:
// `POST /model/{modelId}/converse` (JSON) and `/converse-stream` (AWS event-stream binary
// framing), with the same turns as the other endpoints. Every request must carry a SigV4
// signature by the mock's one key pair, checked before anything else, as AWS checks it.

/** The model id is one path segment, percent-encoded by the SDKs (`...-v1%3A0`). */
const CONVERSE_PATH = /^\/model\/([^/]+)\/(converse|converse-stream)$/;

/** A model id or ARN as Bedrock takes it, once decoded: printable ASCII, bounded. */
const MODEL_ID = /^[\x21-\x7e]{1,2048}$/;

const maxChunks = 100_000;
const maxChunkDelayMs = 60_000;

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

// Bedrock pads every stream event with a `p` field of varying length so sizes do not leak
// the text; clients must ignore it, so the mock sends one too.
const PADDING = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

interface ConversePlan {
  readonly turn: Turn;
  /** Claude's extended thinking (`additionalModelRequestFields.thinking`), a reasoning block before the answer. */
  readonly thinking: { readonly text: string; readonly signature: string } | null;
  /** The text as answered: cut at a stop sequence or at maxTokens. */
  readonly text: string;
  readonly stopReason: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence';
  readonly usage: ConverseUsage;
  readonly outputTokens: number;
  readonly toolUseId: string;
  readonly chunks: number;
  readonly chunkDelayMs: number;
  readonly startedAt: number;
}

let toolSeq = 0;

function headerNumber(value: string | string[] | undefined, fallback: number, max: number): number | undefined {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return n <= max ? n : undefined;
}

/**
 * The turn's text cut where the model would stop: before the first stop sequence, or at
 * maxTokens or the model's own limit (`x-mock-max-tokens`), 4 characters a token.
 */
function stopText(turn: Turn, config: Record<string, unknown>, limit: number | null): Pick<ConversePlan, 'text' | 'stopReason'> {
  if (turn.kind === 'tool') return { text: JSON.stringify(turn.input), stopReason: 'tool_use' };
  let text = turn.text;
  let stopReason: ConversePlan['stopReason'] = 'end_turn';
  const stops = Array.isArray(config.stopSequences)
    ? config.stopSequences.filter((s): s is string => typeof s === 'string' && s !== '')
    : [];
  const at = Math.min(...stops.map((s) => text.indexOf(s)).filter((i) => i >= 0));
  if (Number.isFinite(at)) {
    text = text.slice(0, at);
    stopReason = 'stop_sequence';
  }
  const max = Math.min(
    typeof config.maxTokens === 'number' ? config.maxTokens : Number.POSITIVE_INFINITY,
    limit ?? Number.POSITIVE_INFINITY,
  );
  if (estimateTokens(text.length) > max) {
    text = text.slice(0, max * 4);
    stopReason = 'max_tokens';
  }
  return { text, stopReason };
}

function plan(ctx: MockContext, ex: Exchange, startedAt: number): ConversePlan | string {
  let payload: unknown;
  try {
    payload = JSON.parse(ex.body);
  } catch {
    return 'Malformed input request: the request body is not valid JSON, please reformat your input and try again.';
  }
  const problem = converseProblem(payload);
  if (problem !== null) return problem;
  const body = payload as Record<string, unknown>;
  const headers = ex.req.headers;
  const chunks = headerNumber(headers['x-mock-chunks'], ctx.streamChunks, maxChunks);
  if (chunks === undefined) return `x-mock-chunks must be a whole number from 0 to ${maxChunks}.`;
  const chunkDelayMs = headerNumber(headers['x-mock-chunk-delay-ms'], ctx.streamChunkDelayMs, maxChunkDelayMs);
  if (chunkDelayMs === undefined) return `x-mock-chunk-delay-ms must be a whole number from 0 to ${maxChunkDelayMs}.`;
  const usage = converseUsage(body, ctx.promptCache);
  if (usage.totalTokens > MAX_INPUT_TOKENS) return 'Input is too long for requested model.';
  const limit = outputLimitOf(ex);
  if (typeof limit === 'string') return limit;
  const turn = decideTurn(ctx.reply, converseTail(body));
  const { text, stopReason } = stopText(turn, isRecord(body.inferenceConfig) ? body.inferenceConfig : {}, limit);
  const thinking = thinkingFor(ctx, body);
  const outputChars = text.length + (turn.kind === 'tool' ? turn.name.length : 0) + (thinking?.text.length ?? 0);
  return {
    turn,
    thinking,
    text,
    stopReason,
    usage,
    outputTokens: text === '' && turn.kind === 'text' ? 0 : estimateTokens(outputChars),
    toolUseId: `tooluse_mock${(++toolSeq).toString(36).padStart(14, '0')}`,
    chunks,
    chunkDelayMs,
    startedAt,
  };
}

/** Claude on Bedrock thinks when `additionalModelRequestFields.thinking` is `enabled` or `adaptive`, as through Anthropic's API. */
function thinkingFor(ctx: MockContext, body: Record<string, unknown>): ConversePlan['thinking'] {
  const extra = isRecord(body.additionalModelRequestFields) ? body.additionalModelRequestFields : {};
  const thinking = extra.thinking;
  if (!isRecord(thinking) || (thinking.type !== 'enabled' && thinking.type !== 'adaptive')) return null;
  return { text: reasoningText, signature: createHash('sha256').update(`${ctx.name}\0${reasoningText}`).digest('base64') };
}

function usageBody(p: ConversePlan): Record<string, number> {
  const { inputTokens, cacheReadTokens, cacheWriteTokens } = p.usage;
  const usage: Record<string, number> = {
    inputTokens,
    outputTokens: p.outputTokens,
    totalTokens: inputTokens + p.outputTokens + cacheReadTokens + cacheWriteTokens,
  };
  if (cacheReadTokens > 0 || cacheWriteTokens > 0) {
    usage.cacheReadInputTokens = cacheReadTokens;
    usage.cacheWriteInputTokens = cacheWriteTokens;
  }
  return usage;
}

function metrics(p: ConversePlan): { latencyMs: number } {
  return { latencyMs: Date.now() - p.startedAt };
}

/** The answer's blocks: the reasoning block when thinking, then the text or the tool use. */
function contentOf(p: ConversePlan): Record<string, unknown>[] {
  const answer = answerBlock(p);
  if (p.thinking === null) return [answer];
  return [{ reasoningContent: { reasoningText: { text: p.thinking.text, signature: p.thinking.signature } } }, answer];
}

function answerBlock(p: ConversePlan): Record<string, unknown> {
  if (p.turn.kind === 'tool') return { toolUse: { toolUseId: p.toolUseId, name: p.turn.name, input: p.turn.input } };
  return { text: p.text };
}

function eventMessage(type: string, payload: Record<string, unknown>, n: number): Uint8Array {
  const body = JSON.stringify({ ...payload, p: PADDING.slice(0, 1 + ((n * 7) % PADDING.length)) });
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: Buffer.from(body, 'utf8'),
  });
}

function exceptionMessage(name: string): Uint8Array {
  return codec.encode({
    headers: {
      ':exception-type': { type: 'string', value: name },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    body: Buffer.from(JSON.stringify({ message: `Mock fault: ${STREAM_EXCEPTIONS[name]} in the stream.` }), 'utf8'),
  });
}

/** The content deltas: the text in `chunks` pieces (JSON and tool input stop at their length rather than repeat). */
function deltasOf(ctx: MockContext, p: ConversePlan, index: number): Record<string, unknown>[] {
  // A stop sequence or a limit only ever shortens the text, so the answered text is the turn's cut.
  const pieces =
    p.turn.kind === 'tool'
      ? splitReply(p.text, Math.min(p.chunks, p.text.length)).deltas
      : textPieces(ctx, cutText(p.turn, p.text.length), p.chunks).deltas;
  return pieces.map((piece) => {
    const value = JSON.parse(piece) as string;
    return { delta: p.turn.kind === 'tool' ? { toolUse: { input: value } } : { text: value }, contentBlockIndex: index };
  });
}

/**
 * messageStart, the reasoning block when thinking (its text, then its signature, at index 0),
 * contentBlockStart (tool use only, as Bedrock sends it), the deltas, contentBlockStop,
 * messageStop, metadata. `cutAfter` deltas, then the stream is cut, or carries the fault's
 * exception event and ends.
 */
async function stream(ctx: MockContext, ex: Exchange, p: ConversePlan, cutAfter: number, exception: string): Promise<void> {
  const { res } = ex;
  res.writeHead(200, {
    'content-type': 'application/vnd.amazon.eventstream',
    'x-amzn-requestid': randomUUID(),
    'x-mock-provider': ex.name,
  });
  res.flushHeaders();
  let n = 0;
  let more = res.write(eventMessage('messageStart', { role: 'assistant' }, n++));
  if (p.thinking !== null) {
    const { text, signature } = p.thinking;
    res.write(eventMessage('contentBlockDelta', { delta: { reasoningContent: { text } }, contentBlockIndex: 0 }, n++));
    res.write(eventMessage('contentBlockDelta', { delta: { reasoningContent: { signature } }, contentBlockIndex: 0 }, n++));
    more = res.write(eventMessage('contentBlockStop', { contentBlockIndex: 0 }, n++));
  }
  const index = p.thinking === null ? 0 : 1;
  if (p.turn.kind === 'tool') {
    const start = { start: { toolUse: { toolUseId: p.toolUseId, name: p.turn.name } }, contentBlockIndex: index };
    more = res.write(eventMessage('contentBlockStart', start, n++));
  }
  const deltas = deltasOf(ctx, p, index);
  const cutAt = cutAfter < 0 ? -1 : Math.min(cutAfter, deltas.length);
  for (let i = 0; ; i++) {
    if (!more) await drained(ex);
    if (ex.closed) return;
    if (i === cutAt) return exception === '' ? sever(ex) : void res.end(exceptionMessage(exception));
    if (p.chunkDelayMs > 0) {
      await pause(ex, p.chunkDelayMs);
      if (ex.closed) return;
    }
    if (i === deltas.length) break;
    more = res.write(eventMessage('contentBlockDelta', deltas[i] as Record<string, unknown>, n++));
  }
  res.write(eventMessage('contentBlockStop', { contentBlockIndex: index }, n++));
  res.write(eventMessage('messageStop', { stopReason: p.stopReason }, n++));
  res.end(eventMessage('metadata', { usage: usageBody(p), metrics: metrics(p) }, n++));
}

function answer(
  ctx: MockContext,
  ex: Exchange,
  cutAfter: number,
  fault: ActiveFault | undefined,
  streamed: boolean,
  startedAt: number,
): void {
  const exception = fault?.mode === 'stream_exception' ? fault.streamException : '';
  if (exception !== '' && !streamed) {
    const status = STREAM_EXCEPTION_STATUS[exception] ?? 500;
    return replyBedrockError(ex, status, `Mock fault: ${STREAM_EXCEPTIONS[exception]}.`, STREAM_EXCEPTIONS[exception]);
  }
  const p = plan(ctx, ex, startedAt);
  if (typeof p === 'string') return replyBedrockError(ex, 400, p);
  if (streamed) {
    stream(ctx, ex, p, cutAfter, exception).catch(() => ex.res.destroy());
    return;
  }
  const body = JSON.stringify({
    output: { message: { role: 'assistant', content: contentOf(p) } },
    stopReason: p.stopReason,
    usage: usageBody(p),
    metrics: metrics(p),
  });
  if (cutAfter < 0) return replyJson(ex, 200, body, { 'x-amzn-requestid': randomUUID() });
  replyTruncated(ex, body);
}

/** Every request under `--protocol bedrock` that is not a control call. */
export function routeBedrock(ctx: MockContext, ex: Exchange): void {
  const startedAt = Date.now();
  const creds = ctx.awsCredentials;
  if (creds === null) return replyBedrockError(ex, 500, 'The mock has no AWS credentials to check signatures with.');
  const signed = {
    method: ex.req.method ?? 'GET',
    path: ex.path,
    query: ex.query,
    headers: ex.req.headers,
    body: ex.raw ?? Buffer.from(ex.body),
  };
  checkSignature(signed, creds, 'bedrock').then(
    (problem) => {
      if (ex.closed) return;
      if (problem !== null)
        return replyBedrockError(ex, problem.type === 'IncompleteSignatureException' ? 400 : 403, problem.message, problem.type);
      serveConverse(ctx, ex, startedAt);
    },
    () => replyBedrockError(ex, 500, 'The signature could not be checked.', 'InternalServerException'),
  );
}

function serveConverse(ctx: MockContext, ex: Exchange, startedAt: number): void {
  const match = CONVERSE_PATH.exec(ex.path);
  let model = '';
  try {
    model = match === null ? '' : decodeURIComponent(match[1] as string);
  } catch {
    model = '';
  }
  if (match === null || model === '')
    return replyBedrockError(
      ex,
      404,
      `No operation at ${ex.path}. Use /model/{modelId}/converse or /model/{modelId}/converse-stream.`,
      'UnknownOperationException',
    );
  if (ex.req.method !== 'POST') {
    ex.res.setHeader('allow', 'POST');
    return replyBedrockError(
      ex,
      405,
      `Method ${ex.req.method ?? 'GET'} is not allowed on ${ex.path}; use POST.`,
      'UnknownOperationException',
    );
  }
  if (!MODEL_ID.test(model)) return replyBedrockError(ex, 400, 'The provided model identifier is invalid.');
  // Bedrock's answer does not name the model; the mock echoes the decoded id for tests to check.
  ex.res.setHeader('x-mock-model', model);
  const streamed = match[2] === 'converse-stream';
  serveModelRequest(ctx, ex, 'bedrock', (c, e, cutAfter, fault) => answer(c, e, cutAfter, fault, streamed, startedAt));
}
