import type { TokenUsage } from '../metering.js';
import { stopReasonFromAnthropic, stopReasonFromOpenai, stopReasonToAnthropic, stopReasonToOpenai } from './stop-reason.js';
import type { CanonicalResponse, TextPart, ThinkingPart, ToolCallPart, Translation } from './types.js';
import { attempt, isRecord, parseToolArguments, refuse } from './types.js';
import { usageFromAnthropic, usageFromOpenai, usageToAnthropic, usageToOpenai } from './usage.js';

// Whole (non-streamed) responses between both protocols and the canonical form. The
// request side refused `n > 1`, so an OpenAI response's first choice is the answer.
// Reasoning travels as Anthropic thinking blocks and as the `reasoning_content` that
// OpenAI-compatible servers (vLLM, DeepSeek) put beside the content; redacted thinking,
// unreadable by design, is not passed on.

const NO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0 };

function str(value: unknown, path: string): string {
  if (typeof value !== 'string') refuse('invalid', path, `${path} must be a string`);
  return value;
}

/** An OpenAI chat completion (parsed JSON) in the canonical form; `invalid` when it is malformed. */
export function openaiResponseToCanonical(body: unknown): Translation<CanonicalResponse> {
  return attempt(() => {
    if (!isRecord(body) || !Array.isArray(body.choices)) return refuse('invalid', 'choices', 'the response has no choices');
    const choice = body.choices[0];
    if (!isRecord(choice) || !isRecord(choice.message)) return refuse('invalid', 'choices[0].message', 'the response has no message');
    const message = choice.message;
    const content: (TextPart | ToolCallPart | ThinkingPart)[] = [];
    const reasoning = reasoningOf(message);
    if (reasoning !== '') content.push({ type: 'thinking', text: reasoning, signature: '' });
    if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content });
    if (typeof message.refusal === 'string' && message.refusal !== '') content.push({ type: 'text', text: message.refusal });
    if (Array.isArray(message.tool_calls)) {
      for (const [j, call] of message.tool_calls.entries()) {
        const at = `choices[0].message.tool_calls[${j}]`;
        if (!isRecord(call) || !isRecord(call.function)) return refuse('invalid', at, `${at} must be a function call`);
        const input = parseToolArguments(str(call.function.arguments, `${at}.function.arguments`), `${at}.function.arguments`);
        content.push({ type: 'tool_call', id: str(call.id, `${at}.id`), name: str(call.function.name, `${at}.function.name`), input });
      }
    }
    return {
      id: typeof body.id === 'string' ? body.id : '',
      model: typeof body.model === 'string' ? body.model : '',
      content,
      stopReason: stopReasonFromOpenai(choice.finish_reason),
      usage: usageFromOpenai(body.usage) ?? NO_USAGE,
    };
  });
}

/** An OpenAI-compatible message's reasoning: vLLM and DeepSeek's `reasoning_content`, or the `reasoning` some servers use. */
export function reasoningOf(message: Record<string, unknown>): string {
  if (typeof message.reasoning_content === 'string') return message.reasoning_content;
  return typeof message.reasoning === 'string' ? message.reasoning : '';
}

/** The canonical response as an OpenAI chat completion body. `created` in Unix seconds. */
export function canonicalToOpenaiResponse(res: CanonicalResponse, created = Math.floor(Date.now() / 1000)): Record<string, unknown> {
  let text: string | null = null;
  let reasoning: string | null = null;
  const calls: unknown[] = [];
  for (const part of res.content) {
    if (part.type === 'text') text = text === null ? part.text : text + part.text;
    else if (part.type === 'thinking') reasoning = reasoning === null ? part.text : reasoning + part.text;
    else calls.push({ id: part.id, type: 'function', function: { name: part.name, arguments: JSON.stringify(part.input) } });
  }
  const message: Record<string, unknown> = { role: 'assistant', content: text, refusal: null };
  if (reasoning !== null) message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return {
    id: res.id,
    object: 'chat.completion',
    created,
    model: res.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: res.stopReason === null ? null : stopReasonToOpenai(res.stopReason) }],
    usage: usageToOpenai(res.usage),
  };
}

/** An Anthropic message (parsed JSON) in the canonical form; `invalid` when it is malformed. */
export function anthropicResponseToCanonical(body: unknown): Translation<CanonicalResponse> {
  return attempt(() => {
    if (!isRecord(body) || !Array.isArray(body.content)) return refuse('invalid', 'content', 'the response has no content');
    const content: (TextPart | ToolCallPart | ThinkingPart)[] = [];
    body.content.forEach((block: unknown, j) => {
      if (!isRecord(block)) return;
      if (block.type === 'thinking') {
        const signature = typeof block.signature === 'string' ? block.signature : '';
        content.push({ type: 'thinking', text: str(block.thinking, `content[${j}].thinking`), signature });
      } else if (block.type === 'text') content.push({ type: 'text', text: str(block.text, `content[${j}].text`) });
      else if (block.type === 'tool_use') {
        content.push({
          type: 'tool_call',
          id: str(block.id, `content[${j}].id`),
          name: str(block.name, `content[${j}].name`),
          input: block.input ?? {},
        });
      }
    });
    const out: CanonicalResponse = {
      id: typeof body.id === 'string' ? body.id : '',
      model: typeof body.model === 'string' ? body.model : '',
      content,
      stopReason: stopReasonFromAnthropic(body.stop_reason),
      usage: usageFromAnthropic(body.usage) ?? NO_USAGE,
    };
    return typeof body.stop_sequence === 'string' ? { ...out, stopSequence: body.stop_sequence } : out;
  });
}

/** The canonical response as an Anthropic message body. */
export function canonicalToAnthropicResponse(res: CanonicalResponse): Record<string, unknown> {
  return {
    id: res.id,
    type: 'message',
    role: 'assistant',
    model: res.model,
    content: res.content.map((part) => {
      if (part.type === 'text') return { type: 'text', text: part.text };
      if (part.type === 'thinking') return { type: 'thinking', thinking: part.text, signature: part.signature };
      return { type: 'tool_use', id: part.id, name: part.name, input: part.input };
    }),
    stop_reason: res.stopReason === null ? null : stopReasonToAnthropic(res.stopReason),
    stop_sequence: res.stopSequence ?? null,
    usage: usageToAnthropic(res.usage),
  };
}
