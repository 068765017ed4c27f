import { randomBytes } from 'node:crypto';

// Ids in OpenAI's shapes (`resp_…`, `conv_…`, `msg_…`): a prefix naming the kind, then 24
// random bytes in hex. Random, not sequential, so an id says nothing of another team's and
// cannot be guessed; the prefix lets a client (and the SDKs' type guards) tell kinds apart.

export type IdPrefix = 'resp' | 'conv' | 'msg' | 'fc' | 'fco' | 'rs' | 'mcp' | 'mcpl' | 'mcpr';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
