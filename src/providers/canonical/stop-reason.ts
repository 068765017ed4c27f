import type { StopReason } from './types.js';

// Finish reasons. OpenAI's `stop` does not say whether a stop sequence matched, so it reads
// as `end_turn`, and both `end_turn` and `stop_sequence` write as `stop`. Anthropic's
// `refusal` is OpenAI's `content_filter`; `pause_turn` (a server tool paused) ends the turn,
// and `model_context_window_exceeded` is a length stop.

export type OpenaiFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';
export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export function stopReasonFromOpenai(reason: unknown): StopReason | null {
  switch (reason) {
    case null:
    case undefined:
      return null;
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'end_turn';
  }
}

export function stopReasonToOpenai(reason: StopReason): OpenaiFinishReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'content_filter':
      return 'content_filter';
  }
}

export function stopReasonFromAnthropic(reason: unknown): StopReason | null {
  switch (reason) {
    case null:
    case undefined:
      return null;
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'stop_sequence':
      return 'stop_sequence';
    case 'tool_use':
      return 'tool_use';
    case 'refusal':
      return 'content_filter';
    default:
      return 'end_turn';
  }
}

export function stopReasonToAnthropic(reason: StopReason): AnthropicStopReason {
  return reason === 'content_filter' ? 'refusal' : reason;
}
