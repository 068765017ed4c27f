import type { TokenUsage } from '../metering.js';
import { stopReasonFromGemini, toolCallId, turnTag, usageFromGemini } from './gemini-wire.js';
import type { CanonicalResponse, TextPart, ThinkingPart, ToolCallPart, Translation } from './types.js';
import { attempt, isRecord, refuse } from './types.js';

// A whole Gemini `GenerateContentResponse` in the canonical form. The request never asks
// for more than one candidate, so the first is the answer. A prompt Gemini blocked has no
// candidate at all: an empty answer, stopped by the content filter.

const NO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0 };

/** The canonical parts of one Gemini content's parts: text, thoughts, function calls (ids from `turn`). */
export function geminiParts(parts: unknown, turn: string, firstTool: number): (TextPart | ToolCallPart | ThinkingPart)[] {
  const out: (TextPart | ToolCallPart | ThinkingPart)[] = [];
  if (!Array.isArray(parts)) return out;
  let tool = firstTool;
  for (const p of parts) {
    if (!isRecord(p)) continue;
    if (isRecord(p.functionCall)) {
      const call = p.functionCall;
      if (typeof call.name !== 'string') continue;
      out.push({ type: 'tool_call', id: toolCallId(turn, tool++, p.thoughtSignature), name: call.name, input: call.args ?? {} });
    } else if (typeof p.text === 'string' && p.text !== '') {
      // A thought's signature is Gemini's own, not one an Anthropic client could send back.
      out.push(p.thought === true ? { type: 'thinking', text: p.text, signature: '' } : { type: 'text', text: p.text });
    }
  }
  return out;
}

/** A Gemini generateContent answer (parsed JSON) in the canonical form; `invalid` when it is malformed. */
export function geminiResponseToCanonical(body: unknown): Translation<CanonicalResponse> {
  return attempt(() => {
    if (!isRecord(body)) return refuse('invalid', 'candidates', 'the response is not an object');
    const candidate = Array.isArray(body.candidates) ? body.candidates[0] : undefined;
    const blocked = isRecord(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string';
    if (!isRecord(candidate) && !blocked) return refuse('invalid', 'candidates', 'the response has no candidates');
    const c = isRecord(candidate) ? candidate : {};
    const content = geminiParts(isRecord(c.content) ? c.content.parts : undefined, turnTag(body.responseId), 0);
    const calledTool = content.some((p) => p.type === 'tool_call');
    return {
      id: typeof body.responseId === 'string' ? body.responseId : '',
      model: typeof body.modelVersion === 'string' ? body.modelVersion : '',
      content,
      stopReason: blocked && !isRecord(candidate) ? 'content_filter' : stopReasonFromGemini(c.finishReason, calledTool),
      usage: usageFromGemini(body.usageMetadata) ?? NO_USAGE,
    };
  });
}
