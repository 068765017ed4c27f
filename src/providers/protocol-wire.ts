import type { AnswerReaders, WriteOptions } from './adapter.js';
import {
  type CanonicalRequest,
  canonicalToAnthropicRequest,
  canonicalToBedrockRequest,
  canonicalToGeminiRequest,
  canonicalToOpenaiRequest,
  type ProviderProtocol,
  type Translation,
  type WrittenRequest,
} from './canonical/index.js';
import { bedrockAnswerStatus, readBedrockAnswer, readGeminiAnswer } from './upstream-failure.js';

// What depends on a candidate's protocol rather than its provider's type: the canonical
// writer for it and the reader of its answers. Adapters hand these out by protocol, since
// one type may host several (vertex: Gemini's and Anthropic's).

/** A canonical request written in the protocol. */
export function writeCanonical(request: CanonicalRequest, protocol: ProviderProtocol, options: WriteOptions): Translation<WrittenRequest> {
  return WRITERS[protocol](request, options);
}

const WRITERS: Readonly<Record<ProviderProtocol, (request: CanonicalRequest, options: WriteOptions) => Translation<WrittenRequest>>> = {
  openai: (request) => canonicalToOpenaiRequest(request),
  anthropic: (request, options) =>
    canonicalToAnthropicRequest(request, { defaultMaxTokens: options.defaultMaxTokens(), client: options.client }),
  gemini: (request, options) => canonicalToGeminiRequest(request, { client: options.client }),
  bedrock: (request, options) => canonicalToBedrockRequest(request, { client: options.client }),
};

const PLAIN: AnswerReaders = Object.freeze({});

/** How each protocol's answers are read: Gemini's failures inside a 200, Bedrock's status in a header. */
const ANSWER_READERS: Readonly<Record<ProviderProtocol, AnswerReaders>> = {
  openai: PLAIN,
  anthropic: PLAIN,
  gemini: Object.freeze({ readAnswer: readGeminiAnswer }),
  bedrock: Object.freeze({ readAnswer: readBedrockAnswer, statusOfAnswer: bedrockAnswerStatus }),
};

export function answerReadersOf(protocol: ProviderProtocol): AnswerReaders {
  return ANSWER_READERS[protocol];
}
