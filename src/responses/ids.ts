import { randomBytes } from 'node:crypto';

/** The kinds of object the gateway names, by the prefix OpenAI gives each. */
export type IdPrefix = 'resp' | 'conv' | 'msg' | 'fc' | 'fco' | 'rs' | 'mcp' | 'mcpl' | 'mcpr';

/**
 * A new id, shaped as OpenAI's (`resp_` and 48 hex digits): 24 random bytes, so that ids
 * made by any replica never meet, and a guessed id never names another team's response.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
