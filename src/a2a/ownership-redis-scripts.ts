import { createHash } from 'node:crypto';

// The Redis ownership store's scripts, each run atomically. Times come from Redis (TIME),
// the clock its key expiry follows, so the tracked count forgets an id when Redis does,
// whatever a replica's clock says. Scores are written with %.0f: a Lua number handed to
// redis.call prints with 14 significant digits at most.
//
// Layout under the store's prefix P (`<keyPrefix>a2a:`):
//   P <agent>:<kind>:<id digest>   hash  team, candidate, terminal ('1' | '0'); PEXPIRE its ttl
//   P tracked                      zset  the hash keys' suffixes by expiry (ms); PEXPIRE its longest member

export interface OwnershipScript {
  readonly text: string;
  /** What EVALSHA names it by: SHA-1 of the text, as Redis computes it on SCRIPT LOAD. */
  readonly sha: string;
}

function script(text: string): OwnershipScript {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

/** `now_and_trim(tracked, limit)`: Redis's time in ms, after forgetting up to `limit` expired members. */
const NOW_AND_TRIM = `
local function now_and_trim(tracked, limit)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local gone = redis.call('ZRANGEBYSCORE', tracked, '-inf', string.format('%.0f', now), 'LIMIT', 0, limit)
  if #gone > 0 then redis.call('ZREM', tracked, unpack(gone)) end
  return now
end
`;

/**
 * Records ids for one owner: each absent id is set, each of this owner's refreshed, each of
 * another owner's (team or candidate) left alone. A task marked terminal stays so: a
 * non-terminal record of it changes nothing (late events arrive out of order; terminal wins).
 * KEYS: tracked, then one hash per id. ARGV: team, candidate, then per id: its member in
 * tracked, ttl ms, terminal ('1' | '0').
 * Answers one of 'recorded' | 'kept' | 'foreign' per id, in order.
 */
export const RECORD = script(`${NOW_AND_TRIM}
local now = now_and_trim(KEYS[1], 64)
local out = {}
local longest = 0
for i = 2, #KEYS do
  local at = 3 + (i - 2) * 3
  local member, ttl, terminal = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2]
  local f = redis.call('HMGET', KEYS[i], 'team', 'candidate', 'terminal')
  local outcome = 'kept'
  if not f[1] then
    outcome = 'recorded'
  elseif f[1] ~= ARGV[1] or f[2] ~= ARGV[2] then
    outcome = 'foreign'
    ttl = nil
  elseif f[3] == '1' and terminal ~= '1' then
    ttl = nil
  end
  if ttl then
    redis.call('HSET', KEYS[i], 'team', ARGV[1], 'candidate', ARGV[2], 'terminal', terminal)
    redis.call('PEXPIRE', KEYS[i], ttl)
    redis.call('ZADD', KEYS[1], string.format('%.0f', now + ttl), member)
    if ttl > longest then longest = ttl end
  end
  out[#out + 1] = outcome
end
if longest > 0 and redis.call('PTTL', KEYS[1]) < longest then redis.call('PEXPIRE', KEYS[1], longest) end
return out
`);

/**
 * Forgets up to ARGV[1] expired members, then counts those whose expiry is still ahead.
 * KEYS: tracked.
 */
export const TRACKED = script(`${NOW_AND_TRIM}
local now = now_and_trim(KEYS[1], tonumber(ARGV[1]))
return redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.0f', now), '+inf')
`);
