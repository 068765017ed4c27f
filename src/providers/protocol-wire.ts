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
  switch (protocol) {
    case 'anthropic':
      return canonicalToAnthropicRequest(request, { defaultMaxTokens: options.defaultMaxTokens(), client: options.client });
    case 'gemini':
      return canonicalToGeminiRequest(request, { client: options.client });
    case 'bedrock':
      return canonicalToBedrockRequest(request, { client: options.client });
    default:
      return canonicalToOpenaiRequest(request);
  }
}

const PLAIN: AnswerReaders = Object.freeze({});
const GEMINI: AnswerReaders = Object.freeze({ readAnswer: readGeminiAnswer });
const BEDROCK: AnswerReaders = Object.freeze({ readAnswer: readBedrockAnswer, statusOfAnswer: bedrockAnswerStatus });

/** How a protocol's answers are read: Gemini's failures inside a 200, Bedrock's status in a header. */
export function answerReadersOf(protocol: ProviderProtocol): AnswerReaders {
  return protocol === 'gemini' ? GEMINI : protocol === 'bedrock' ? BEDROCK : PLAIN;
}
