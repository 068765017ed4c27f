import type { IncomingMessage } from 'node:http';
import { SwitchyardError } from '../errors.js';

/**
 * Reads a request body, bounded by maxBodyBytes. A declared Content-Length over the limit
 * is refused before reading a byte; a body that grows past it is refused as soon as it
 * does, without buffering the rest.
 */
export function readBody(req: IncomingMessage, maxBodyBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBodyBytes) {
    return Promise.reject(tooLarge(maxBodyBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        cleanup();
        reject(tooLarge(maxBodyBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    // A client that goes away mid-upload surfaces as an 'error' (ECONNRESET "aborted") or
    // just a 'close' before 'end': either way it is a client leaving, not a gateway fault.
    const onGone = (): void => {
      cleanup();
      reject(new ClientGoneError());
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onGone);
  });
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
