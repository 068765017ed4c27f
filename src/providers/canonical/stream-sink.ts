import type { TokenUsage } from '../metering.js';
import type { StopReason } from './types.js';

/**
 * A streamed answer in canonical events: what a decoder reads from the upstream protocol
 * and an encoder writes in the client's. Tool calls are numbered in order of appearance
 * from 0 (OpenAI's `tool_calls[].index`); an encoder maps that number to its own.
 */
export interface StreamSink {
  start(id: string, model: string): void;
  text(text: string): void;
  /** A piece of the model's reasoning (Anthropic thinking, OpenAI-compatible `reasoning_content`). */
  thinking(text: string): void;
  /** Anthropic's signature of the thinking just streamed. */
  thinkingSignature(signature: string): void;
  toolStart(tool: number, id: string, name: string): void;
  /** A piece of the tool's JSON arguments, as text. */
  toolArguments(tool: number, json: string): void;
  finish(reason: StopReason | null, stopSequence: string | null): void;
  /** The usage so far, as a whole (not an increment). */
  usage(usage: TokenUsage): void;
  /** The upstream said the answer is complete. */
  done(): void;
  /** The upstream sent an error event; `status` is the HTTP status it stands for. */
  error(status: number, message: string): void;
}
