import { randomUUID } from 'node:crypto';
import type { Exchange } from './exchange.js';
import { replyJson } from './exchange.js';

// Bedrock's errors: a JSON `{"message"}` whose type travels in `x-amzn-errortype` (the AWS
// SDKs read the name before the colon), with the request id every AWS answer carries.

/** The exception Bedrock Runtime answers each status with (a fault's status picks its type here). */
const TYPES: Readonly<Record<number, string>> = Object.freeze({
  400: 'ValidationException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
});

/** The exceptions a Converse stream may carry as an event, by their event names. */
export const STREAM_EXCEPTIONS: Readonly<Record<string, string>> = Object.freeze({
  internalServerException: 'InternalServerException',
  modelStreamErrorException: 'ModelStreamErrorException',
  validationException: 'ValidationException',
  throttlingException: 'ThrottlingException',
  serviceUnavailableException: 'ServiceUnavailableException',
});

/** The HTTP status of each stream exception, for a non-streamed request that meets the same fault. */
export const STREAM_EXCEPTION_STATUS: Readonly<Record<string, number>> = Object.freeze({
  internalServerException: 500,
  modelStreamErrorException: 424,
  validationException: 400,
  throttlingException: 429,
  serviceUnavailableException: 503,
});

export function bedrockErrorType(status: number): string {
  return TYPES[status] ?? (status < 500 ? 'ValidationException' : 'InternalServerException');
}

/** `x-amzn-errortype` and `x-amzn-requestid` for an error of that type. */
export function bedrockErrorHeaders(type: string): Record<string, string> {
  return { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': randomUUID() };
}

export function bedrockErrorBody(message: string): string {
  return JSON.stringify({ message });
}

export function replyBedrockError(ex: Exchange, status: number, message: string, type: string = bedrockErrorType(status)): void {
  replyJson(ex, status, bedrockErrorBody(message), bedrockErrorHeaders(type));
}
