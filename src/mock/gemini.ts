import { createHash } from 'node:crypto';
import type { ConversationTail, MockTool, MockToolChoice, OutputFormat, Turn } from './conversation.js';
import { decideTurn, isRecord, reasoningText } from './conversation.js';
import type { Exchange } from './exchange.js';
import { drained, geminiError, pause, replyJson, replyTruncated, sever } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import { outputLimitOf, stopAtLimit } from './output-limit.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens, MOCK_MODELS, textPieces } from './provider-context.js';

// The Gemini API: `POST /v1beta/models/{model}:generateContent` and
// `:streamGenerateContent` (server-sent events with `alt=sse`, else one JSON array), with
// the same turns as the other endpoints. The key is checked as Google checks it: a
// missing or wrong one is a 400 whose ErrorInfo reason is API_KEY_INVALID. With
// `thinkingConfig.includeThoughts`, a thought part comes first and a function call carries
// a thoughtSignature, as from a thinking Gemini model.

/** `/v1beta/models/{model}:{method}` (also `/v1/...`); the model may not hold a slash. */
export const GEMINI_PATH = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/** What Gemini bills an inline image at, whatever its size (up to 384 px a side; close enough for a mock). */
const IMAGE_TOKENS = 258;

interface GeminiPlan {
  readonly id: string;
  readonly model: string;
  readonly turn: Turn;
  /** The text stopped at the output limit (`x-mock-max-tokens`): finishReason `MAX_TOKENS`. */
  readonly cut: boolean;
  readonly thinking: boolean;
  readonly promptTokens: number;
  readonly chunks: number;
  readonly chunkDelayMs: number;
}

let responseSeq = 0;

function texts(parts: unknown): string[] {
  if (!Array.isArray(parts)) return [];
  return parts.filter((p) => isRecord(p) && typeof p.text === 'string' && p.thought !== true).map((p) => (p as { text: string }).text);
}

/** Every prompt token Gemini would count: text, function calls and answers as JSON, and a flat rate per image. */
function promptTokens(payload: Record<string, unknown>): number {
  let chars = 0;
  let images = 0;
  const system = isRecord(payload.systemInstruction) ? payload.systemInstruction.parts : undefined;
  const contents = Array.isArray(payload.contents) ? payload.contents : [];
  for (const parts of [system, ...contents.map((c) => (isRecord(c) ? c.parts : undefined))]) {
    if (!Array.isArray(parts)) continue;
    for (const p of parts) {
      if (!isRecord(p)) continue;
      if (typeof p.text === 'string') chars += p.text.length;
      else if (isRecord(p.inlineData)) images += 1;
      else if (p.functionCall !== undefined) chars += JSON.stringify(p.functionCall).length;
      else if (p.functionResponse !== undefined) chars += JSON.stringify(p.functionResponse).length;
    }
  }
  if (Array.isArray(payload.tools)) chars += JSON.stringify(payload.tools).length;
  return estimateTokens(chars) + images * IMAGE_TOKENS;
}

/** Gemini's OpenAPI-subset schemas spell types in capitals (`OBJECT`); the placeholder reads JSON Schema's. */
function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (!isRecord(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'type' && typeof v === 'string' ? v.toLowerCase() : jsonSchemaOf(v);
  return out;
}

function tailOf(payload: Record<string, unknown>): ConversationTail {
  const tools: MockTool[] = [];
  for (const t of Array.isArray(payload.tools) ? payload.tools : []) {
    if (!isRecord(t) || !Array.isArray(t.functionDeclarations)) continue;
    for (const f of t.functionDeclarations) {
      if (isRecord(f) && typeof f.name === 'string')
        tools.push({ name: f.name, schema: jsonSchemaOf(f.parametersJsonSchema ?? f.parameters) });
    }
  }
  const fcc =
    isRecord(payload.toolConfig) && isRecord(payload.toolConfig.functionCallingConfig) ? payload.toolConfig.functionCallingConfig : {};
  const allowed = Array.isArray(fcc.allowedFunctionNames) ? fcc.allowedFunctionNames : [];
  let toolChoice: MockToolChoice = 'auto';
  if (fcc.mode === 'NONE') toolChoice = 'none';
  else if (fcc.mode === 'ANY') toolChoice = allowed.length === 1 && typeof allowed[0] === 'string' ? { name: allowed[0] } : 'any';
  const contents = payload.contents as unknown[];
  const last = contents[contents.length - 1];
  const lastParts = isRecord(last) && last.role !== 'model' && Array.isArray(last.parts) ? last.parts : [];
  const toolResults = lastParts
    .filter((p) => isRecord(p) && isRecord(p.functionResponse))
    .map((p) => {
      const response = (p as { functionResponse: Record<string, unknown> }).functionResponse.response;
      const value = isRecord(response) ? (response.result ?? response.output ?? response.error ?? response) : response;
      return typeof value === 'string' ? value : JSON.stringify(value);
    });
  const said = texts(lastParts).join('\n');
  const config = isRecord(payload.generationConfig) ? payload.generationConfig : {};
  const schema = config.responseJsonSchema ?? (config.responseSchema === undefined ? undefined : jsonSchemaOf(config.responseSchema));
  let format: OutputFormat | null = null;
  if (schema !== undefined) format = { kind: 'json_schema', schema };
  else if (config.responseMimeType === 'application/json') format = { kind: 'json_object' };
  return { tools, toolChoice, lastUserText: lastParts.length > 0 && toolResults.length === 0 ? said : null, toolResults, format };
}

function headerNumber(value: string | string[] | undefined, fallback: number, max: number): number | undefined {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return n <= max ? n : undefined;
}

function plan(ctx: MockContext, ex: Exchange, model: string): GeminiPlan | string {
  let payload: unknown;
  try {
    payload = JSON.parse(ex.body);
  } catch {
    return 'Invalid JSON payload received.';
  }
  if (!isRecord(payload)) return 'Invalid JSON payload received: the body must be an object.';
  if (!Array.isArray(payload.contents) || payload.contents.length === 0)
    return '* GenerateContentRequest.contents: contents is not specified';
  for (const [i, c] of payload.contents.entries()) {
    if (!isRecord(c) || !Array.isArray(c.parts) || c.parts.length === 0)
      return `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`;
    if (c.role !== undefined && c.role !== 'user' && c.role !== 'model')
      return `* GenerateContentRequest.contents[${i}].role: Please use a valid role: user, model.`;
  }
  const headers = ex.req.headers;
  const chunks = headerNumber(headers['x-mock-chunks'], ctx.streamChunks, 100_000);
  if (chunks === undefined) return 'x-mock-chunks must be a whole number from 0 to 100000.';
  const chunkDelayMs = headerNumber(headers['x-mock-chunk-delay-ms'], ctx.streamChunkDelayMs, 60_000);
  if (chunkDelayMs === undefined) return 'x-mock-chunk-delay-ms must be a whole number from 0 to 60000.';
  const config = isRecord(payload.generationConfig) ? payload.generationConfig : {};
  const thinking = isRecord(config.thinkingConfig) && config.thinkingConfig.includeThoughts === true;
  const limit = outputLimitOf(ex);
  if (typeof limit === 'string') return limit;
  return {
    id: `gm${(++responseSeq).toString(36)}${ctx.name.replace(/[^A-Za-z0-9]/g, '').slice(0, 8)}`,
    model,
    ...stopAtLimit(decideTurn(ctx.reply, tailOf(payload)), limit),
    thinking,
    promptTokens: promptTokens(payload),
    chunks,
    chunkDelayMs,
  };
}

/** A thinking model signs a function call so the next turn can hand its reasoning back. */
function signatureFor(ctx: MockContext, name: string): string {
  return createHash('sha256').update(`${ctx.name}\0${name}`).digest('base64');
}

function usageMetadata(p: GeminiPlan, outputChars: number): Record<string, unknown> {
  const candidates = estimateTokens(outputChars);
  const usage: Record<string, unknown> = { promptTokenCount: p.promptTokens, candidatesTokenCount: candidates };
  const thoughts = p.thinking ? estimateTokens(reasoningText.length) : 0;
  usage.totalTokenCount = p.promptTokens + candidates + thoughts;
  if (thoughts > 0) usage.thoughtsTokenCount = thoughts;
  usage.promptTokensDetails = [{ modality: 'TEXT', tokenCount: p.promptTokens }];
  return usage;
}

function toolPart(ctx: MockContext, p: GeminiPlan, turn: Extract<Turn, { kind: 'tool' }>): Record<string, unknown> {
  const part: Record<string, unknown> = { functionCall: { name: turn.name, args: turn.input } };
  if (p.thinking) part.thoughtSignature = signatureFor(ctx, turn.name);
  return part;
}

function outputChars(p: GeminiPlan): number {
  return p.turn.kind === 'text' ? p.turn.text.length : p.turn.name.length + JSON.stringify(p.turn.input).length;
}

function chunkBody(
  p: GeminiPlan,
  parts: Record<string, unknown>[],
  last: boolean,
  usage: Record<string, unknown>,
): Record<string, unknown> {
  const candidate: Record<string, unknown> = { content: { parts, role: 'model' }, index: 0 };
  if (last) candidate.finishReason = p.cut ? 'MAX_TOKENS' : 'STOP';
  return { candidates: [candidate], usageMetadata: usage, modelVersion: p.model, responseId: p.id };
}

/** The answer's chunks: the thought, the text in `chunks` pieces (JSON and tool calls never repeat), the finish with the whole usage. */
function chunksOf(ctx: MockContext, p: GeminiPlan): Record<string, unknown>[] {
  const prompt = { promptTokenCount: p.promptTokens, totalTokenCount: p.promptTokens };
  const out: Record<string, unknown>[] = [];
  if (p.thinking) out.push(chunkBody(p, [{ text: reasoningText, thought: true }], false, prompt));
  const usage = usageMetadata(p, outputChars(p));
  if (p.turn.kind === 'tool') {
    out.push(chunkBody(p, [toolPart(ctx, p, p.turn)], true, usage));
    return out;
  }
  const pieces = textPieces(ctx, p.turn, p.chunks).deltas;
  if (pieces.length === 0) out.push(chunkBody(p, [{ text: '' }], true, usage));
  pieces.forEach((piece, i) => {
    const last = i === pieces.length - 1;
    out.push(chunkBody(p, [{ text: JSON.parse(piece) as string }], last, last ? usage : prompt));
  });
  return out;
}

async function stream(ctx: MockContext, ex: Exchange, p: GeminiPlan, cutAfter: number): Promise<void> {
  const { res } = ex;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-mock-provider': ex.name });
  res.flushHeaders();
  const chunks = chunksOf(ctx, p);
  const cutAt = cutAfter < 0 ? -1 : Math.min(cutAfter, chunks.length);
  let more = true;
  for (let i = 0; i < chunks.length; i++) {
    if (!more) await drained(ex);
    if (ex.closed) return;
    if (i === cutAt) return sever(ex);
    if (p.chunkDelayMs > 0 && i > 0) {
      await pause(ex, p.chunkDelayMs);
      if (ex.closed) return;
    }
    more = res.write(`data: ${JSON.stringify(chunks[i])}\r\n\r\n`);
  }
  res.end();
}

function answer(ctx: MockContext, ex: Exchange, cutAfter: number, model: string, streamed: boolean, sse: boolean): void {
  const p = plan(ctx, ex, model);
  if (typeof p === 'string') return replyJson(ex, 400, geminiError(400, p));
  if (streamed && sse) {
    stream(ctx, ex, p, cutAfter).catch(() => ex.res.destroy());
    return;
  }
  let body: string;
  if (streamed) body = JSON.stringify(chunksOf(ctx, p));
  else {
    const parts: Record<string, unknown>[] = p.thinking ? [{ text: reasoningText, thought: true }] : [];
    parts.push(p.turn.kind === 'tool' ? toolPart(ctx, p, p.turn) : { text: p.turn.text });
    body = JSON.stringify(chunkBody(p, parts, true, usageMetadata(p, outputChars(p))));
  }
  if (cutAfter < 0) return replyJson(ex, 200, body);
  replyTruncated(ex, body);
}

const KEY_INVALID = geminiError(400, 'API key not valid. Please pass a valid API key.', [
  {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: 'API_KEY_INVALID',
    domain: 'googleapis.com',
    metadata: { service: 'generativelanguage.googleapis.com' },
  },
]);

/** The Gemini API's model list (`GET /v1beta/models`), behind the same key check as a call. */
export function handleGeminiModels(ctx: MockContext, ex: Exchange): void {
  if (ctx.apiKey !== null && (ex.req.headers['x-goog-api-key'] ?? new URLSearchParams(ex.query).get('key')) !== ctx.apiKey)
    return replyJson(ex, 400, KEY_INVALID);
  replyJson(ex, 200, JSON.stringify({ models: MOCK_MODELS.map((id) => ({ name: `models/${id}`, displayName: id })) }));
}

/** A Gemini API model call; `query` is the URL's query string. The key is checked before any fault is taken. */
export function handleGemini(ctx: MockContext, ex: Exchange, model: string, method: string, query: string): void {
  const params = new URLSearchParams(query);
  if (ctx.apiKey !== null) {
    const sent = ex.req.headers['x-goog-api-key'] ?? params.get('key') ?? undefined;
    if (sent !== ctx.apiKey) return replyJson(ex, 400, KEY_INVALID);
  }
  serveGenerateContent(ctx, ex, model, method, params);
}

/**
 * generateContent or streamGenerateContent once the caller has checked its credential: the
 * Gemini API's key, or Vertex AI's bearer token. The body and answers are the same on both.
 */
export function serveGenerateContent(ctx: MockContext, ex: Exchange, model: string, method: string, params: URLSearchParams): void {
  const streamed = method === 'streamGenerateContent';
  serveModelRequest(ctx, ex, 'gemini', (c, e, cutAfter) => answer(c, e, cutAfter, model, streamed, params.get('alt') === 'sse'));
}
