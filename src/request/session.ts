import type { IncomingMessage } from 'node:http';
import type { GatewayConfig } from '../config/index.js';
import { SwitchyardError } from '../errors.js';

const MAX_SESSION_KEY_BYTES = 256;

/** The request's session key from the configured header, or else the cookie; trimmed. */
export function sessionKeyOf(req: IncomingMessage, affinity: GatewayConfig['routing']['session_affinity']): string | undefined {
  if (affinity === undefined) return undefined;
  let key: string | undefined;
  const header = req.headers[affinity.header];
  if (typeof header === 'string') key = header.trim();
  if ((key === undefined || key === '') && affinity.cookie !== undefined) key = cookieValue(req.headers.cookie, affinity.cookie);
  if (key === undefined || key === '') return undefined;
  if (Buffer.byteLength(key) > MAX_SESSION_KEY_BYTES) {
    throw new SwitchyardError(
      'invalid_request',
      `session key (header ${affinity.header}${affinity.cookie ? ` or cookie ${affinity.cookie}` : ''}) must be at most ${MAX_SESSION_KEY_BYTES} bytes`,
    );
  }
  return key;
}

function cookieValue(cookie: string | undefined, name: string): string | undefined {
  if (cookie === undefined) return undefined;
  for (const part of cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return part.slice(eq + 1).trim();
      }
    }
  }
  return undefined;
}
