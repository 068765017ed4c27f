// canonical/: the one internal chat form that client and provider protocols translate
// through (OpenAI chat completions, Anthropic Messages), so adding a protocol adds two
// converters, not one per pair (and Gemini's and Bedrock's Converse, which only providers
// speak; and OpenAI's Responses API, which only clients speak here). Pure functions for requests, responses, usage and errors;
// one stateful class per translated stream. What becomes of each request field is one
// table (policy.ts): mapped, dropped and listed, or unable (refused by field path). Part of
// providers/ and, like it, imports nothing but errors.ts. ADR-0011, ADR-0029.

export { ANTHROPIC_ERROR_TYPES, type AnthropicErrorType, anthropicErrorTypeOfClass } from './anthropic-error-types.js';
export { anthropicRequestToCanonical } from './anthropic-request-reader.js';
export { type AnthropicRequestOptions, canonicalToAnthropicRequest, DEFAULT_MAX_TOKENS } from './anthropic-request-writer.js';
export { AnthropicEventDecoder, AnthropicEventEncoder } from './anthropic-stream.js';
export { AnthropicUsageReader } from './anthropic-usage-reader.js';
export { type BedrockRequestOptions, canonicalToBedrockRequest, isClaudeModel } from './bedrock-request-writer.js';
export { bedrockPart, bedrockResponseToCanonical } from './bedrock-response.js';
export { BedrockStreamDecoder, EventStreamFrames, holdsFailedFrame } from './bedrock-stream.js';
export {
  bedrockErrorMessage,
  bedrockErrorType,
  isBedrockContextMessage,
  isBedrockCredentialError,
  statusOfBedrockError,
  stopReasonFromBedrock,
} from './bedrock-wire.js';
export { canonicalToGeminiRequest, type GeminiRequestOptions } from './gemini-request-writer.js';
export { geminiResponseToCanonical } from './gemini-response.js';
export { GEMINI_KEY_REASONS, type GeminiErrorDetails, geminiErrorDetails, usageFromGemini } from './gemini-wire.js';
export { openaiRequestToCanonical, TOOL_ERROR_PREFIX } from './openai-request-reader.js';
export { canonicalToOpenaiRequest, type OpenaiRequestOptions } from './openai-request-writer.js';
export { OpenaiChunkDecoder, OpenaiChunkEncoder } from './openai-stream.js';
export {
  effortOfBudget,
  MIN_THINKING_BUDGET,
  ruleFor,
  THINKING_BUDGETS,
  TRANSLATION_POLICY,
  type TranslationOutcome,
  type TranslationRule,
  translationPolicyMarkdown,
} from './policy.js';
export {
  anthropicResponseToCanonical,
  canonicalToAnthropicResponse,
  canonicalToOpenaiResponse,
  openaiResponseToCanonical,
} from './responses.js';
export {
  canonicalToResponsesObject,
  type ResponseStatus,
  type ResponsesShape,
  responseObject,
  responsesEcho,
} from './responses-object.js';
export { responsesRequestToCanonical } from './responses-request-reader.js';
export { type DeltaPieces, ResponsesEventEncoder, ResponsesEventLog, replayResponse } from './responses-stream.js';
export { type SseListener, SseParser } from './sse-parser.js';
export {
  type AnthropicStopReason,
  type OpenaiFinishReason,
  stopReasonFromAnthropic,
  stopReasonFromOpenai,
  stopReasonToAnthropic,
  stopReasonToOpenai,
} from './stop-reason.js';
export type { StreamSink } from './stream-sink.js';
export { type StreamEncoder, StreamTranslator, type StreamTranslatorOptions } from './stream-translator.js';
export type {
  CacheControl,
  CanonicalMessage,
  CanonicalRequest,
  CanonicalResponse,
  CanonicalTool,
  ChatProtocol,
  ClientProtocol,
  ContentPart,
  FilePart,
  ImagePart,
  ImageSource,
  ProviderProtocol,
  Reasoning,
  ReasoningEffort,
  Refusal,
  ResponseFormat,
  Sampling,
  StopReason,
  TextPart,
  ThinkingPart,
  ToolCallPart,
  ToolChoice,
  ToolResultPart,
  Translation,
  WrittenRequest,
} from './types.js';
export {
  anthropicErrorBodyFor,
  anthropicErrorType,
  openaiErrorBodyFor,
  openaiErrorType,
  translateErrorResponse,
} from './upstream-error.js';
export {
  type AnthropicUsage,
  type OpenaiUsage,
  type ResponsesUsage,
  usageFromAnthropic,
  usageFromBedrock,
  usageFromOpenai,
  usageFromResponses,
  usageToAnthropic,
  usageToOpenai,
  usageToResponses,
} from './usage.js';
