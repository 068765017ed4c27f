import type { IncomingMessage } from 'node:http';
import { SwitchyardError } from '../errors.js';

/**
 * Reads a request body, bounded by maxBodyBytes. A declared Content-Length over the limit
 * is refused before reading a byte; a body that grows past it is refused as soon as it
 * does, without buffering the rest.
 */
export function readBody(req: IncomingMessage, maxBodyBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => readBodyThen(req, maxBodyBytes, resolve, reject));
}

/**
 * readBody with callbacks, for the request path (no promise): exactly one of `onBody` and
 * `onError` is called, never before this function has returned.
 */
export function readBodyThen(
  req: IncomingMessage,
  maxBodyBytes: number,
  onBody: (body: Buffer) => void,
  onError: (err: Error) => void,
): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBodyBytes) {
    const err = tooLarge(maxBodyBytes);
    process.nextTick(onError, err);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  // Set once either callback has been called: later events are ignored rather than the
  // listeners removed (removing them per request cost more than the checks, and the
  // listeners go with the request).
  let settled = false;
  const onData = (chunk: Buffer): void => {
    if (settled) return;
    size += chunk.length;
    if (size > maxBodyBytes) {
      settled = true;
      onError(tooLarge(maxBodyBytes));
      return;
    }
    chunks.push(chunk);
  };
  const onEnd = (): void => {
    if (settled) return;
    settled = true;
    onBody(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  };
  // A client that goes away mid-upload surfaces as an 'error' (ECONNRESET "aborted") or
  // just a 'close' before 'end': either way it is a client leaving, not a gateway fault.
  const onGone = (): void => {
    if (settled) return;
    settled = true;
    onError(new ClientGoneError());
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onGone);
  req.on('close', onGone);
}

/** The client closed its connection before its request body was complete. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection before sending the whole request body');
    this.name = 'ClientGoneError';
  }
}

function tooLarge(maxBodyBytes: number): SwitchyardError {
  return new SwitchyardError('body_too_large', `request body exceeds the limit of ${maxBodyBytes} bytes (server.max_body_bytes)`);
}
