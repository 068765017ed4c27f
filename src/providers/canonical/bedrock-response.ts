import { randomBytes } from 'node:crypto';
import type { TokenUsage } from '../metering.js';
import { stopReasonFromBedrock } from './bedrock-wire.js';
import type { CanonicalResponse, TextPart, ThinkingPart, ToolCallPart, Translation } from './types.js';
import { attempt, isRecord, refuse } from './types.js';
import { usageFromBedrock } from './usage.js';

// A whole Bedrock Converse answer in the canonical form: `output.message.content` holds
// text, tool uses and reasoning blocks. Converse gives the answer no id, so the gateway
// makes one, and does not name the model, which the caller knows (relay-transform's
// `model`); '' here.

const NO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0 };

/** This process's random half of every id, drawn once: a draw per answer showed in the profile. */
const ID_PREFIX = randomBytes(8).toString('hex');
let idSeq = 0;

/** An id for an answer Converse gave none, unique across processes and answers: clients of both protocols expect one. */
export function answerId(): string {
  idSeq = (idSeq + 1) % 0x1_0000_0000;
  return `bdrk_${ID_PREFIX}${idSeq.toString(16).padStart(8, '0')}`;
}

/** A Converse content block as a canonical part; null for one the client is not given (redacted reasoning, citations, images). */
export function bedrockPart(block: unknown): TextPart | ToolCallPart | ThinkingPart | null {
  if (!isRecord(block)) return null;
  if (typeof block.text === 'string') return block.text === '' ? null : { type: 'text', text: block.text };
  if (isRecord(block.toolUse)) {
    const use = block.toolUse;
    if (typeof use.toolUseId !== 'string' || typeof use.name !== 'string') return null;
    return { type: 'tool_call', id: use.toolUseId, name: use.name, input: use.input ?? {} };
  }
  if (isRecord(block.reasoningContent) && isRecord(block.reasoningContent.reasoningText)) {
    const r = block.reasoningContent.reasoningText;
    if (typeof r.text !== 'string') return null;
    // Claude's signature on Bedrock is Anthropic's: an Anthropic client may send it back.
    return { type: 'thinking', text: r.text, signature: typeof r.signature === 'string' ? r.signature : '' };
  }
  return null;
}

/** A Bedrock Converse answer (parsed JSON) in the canonical form; `invalid` when it is malformed. */
export function bedrockResponseToCanonical(body: unknown): Translation<CanonicalResponse> {
  return attempt(() => {
    if (!isRecord(body)) return refuse('invalid', 'output', 'the response is not an object');
    const message = isRecord(body.output) ? body.output.message : undefined;
    if (!isRecord(message) || !Array.isArray(message.content)) return refuse('invalid', 'output', 'the response has no output message');
    const content: (TextPart | ToolCallPart | ThinkingPart)[] = [];
    for (const block of message.content) {
      const part = bedrockPart(block);
      if (part !== null) content.push(part);
    }
    return {
      id: answerId(),
      model: '',
      content,
      stopReason: stopReasonFromBedrock(body.stopReason),
      usage: usageFromBedrock(body.usage) ?? NO_USAGE,
    };
  });
}
