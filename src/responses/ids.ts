import { randomFillSync } from 'node:crypto';

/** The kinds of object the gateway names, by the prefix OpenAI gives each. */
export type IdPrefix = 'resp' | 'conv' | 'msg' | 'fc' | 'fco' | 'rs' | 'mcp' | 'mcpl' | 'mcpr';

const ID_BYTES = 24;
/** Ids' worth of random bytes drawn at once: one call into the CSPRNG costs as much as drawing many (it was a tenth of a Responses request's CPU, a call per id). */
const POOL_IDS = 256;
const pool = Buffer.alloc(ID_BYTES * POOL_IDS);
let next = POOL_IDS;

/**
 * A new id, shaped as OpenAI's (`resp_` and 48 hex digits): 24 random bytes, so that ids
 * made by any replica never meet, and a guessed id never names another team's response.
 * The bytes come from the CSPRNG in batches; each is used once.
 */
export function newId(prefix: IdPrefix): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    next = 0;
  }
  const at = next * ID_BYTES;
  next += 1;
  return `${prefix}_${pool.toString('hex', at, at + ID_BYTES)}`;
}
