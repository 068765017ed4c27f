// The Redis cache store's scripts, each run atomically. Times come from Redis (TIME), the
// clock its key expiry follows, so the byte count forgets an entry when Redis does, whatever
// a replica's clock says. A number handed to redis.call prints with 14 significant digits
// at most: the microsecond insertion times are built as strings.
//
// Layout under the cache's prefix P (`<key_prefix>cache:`):
//   P e:<key>     hash  route, team, bytes, data (the entry's JSON), ctx (its vector's context); PEXPIREAT its expiry
//   P v:<ctx>     hash  key -> vector (little-endian float32 bytes)
//   P vz:<ctx>    zset  key by insertion time (µs): which vectors are the oldest
//   P exp         zset  key by expiry (ms) \  what the byte count knows: an entry's size
//   P size        hash  key -> bytes       /  stays here until Redis has expired it
//   P bytes       the sum of `size`

/** `sweep(exp, size, bytes, limit)`: forgets up to `limit` entries Redis has expired; answers how many. */
const SWEEP_FUNCTION = `
local function sweep(exp, size, bytes, limit)
  local t = redis.call('TIME')
  local now = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
  local gone = redis.call('ZRANGEBYSCORE', exp, '-inf', '(' .. now, 'LIMIT', 0, limit)
  local freed = 0
  for _, key in ipairs(gone) do
    freed = freed + tonumber(redis.call('HGET', size, key) or '0')
    redis.call('HDEL', size, key)
    redis.call('ZREM', exp, key)
  end
  if freed > 0 then redis.call('DECRBY', bytes, freed) end
  return #gone
end
`;

/**
 * Stores an entry, replacing the one under its key (whose `ctx` stays: the key's vector is
 * still the key's), and counts its bytes; first forgets a few expired entries, so the index
 * stays bounded even when nobody reads the byte count. An entry already expired is not stored.
 * KEYS: entry, exp, size, bytes. ARGV: key, route, team, bytes, data, expiresAtMs.
 */
export const PUT = `${SWEEP_FUNCTION}
sweep(KEYS[2], KEYS[3], KEYS[4], 16)
local t = redis.call('TIME')
if tonumber(ARGV[6]) <= tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then return 0 end
local old = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
redis.call('HSET', KEYS[1], 'route', ARGV[2], 'team', ARGV[3], 'bytes', ARGV[4], 'data', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
redis.call('INCRBY', KEYS[4], tonumber(ARGV[4]) - old)
return 1
`;

/**
 * Adds a vector to its context, drops the oldest past the bound, keeps the context's keys
 * alive as long as its newest vector, and notes the context in the entry (when it is
 * already stored) so that `drop` finds the vector.
 * KEYS: v, vz, entry. ARGV: key, vector, ttlMs, maxEntries, context.
 */
export const ADD_VECTOR = `
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])), ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
while over > 0 do
  -- In chunks: unpack() of a long list overflows Lua's stack.
  local n = math.min(over, 1000)
  local oldest = redis.call('ZRANGE', KEYS[2], 0, n - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - 1)
  redis.call('HDEL', KEYS[1], unpack(oldest))
  over = over - n
end
local ttl = tonumber(ARGV[3])
for i = 1, 2 do
  if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('HSET', KEYS[3], 'ctx', ARGV[5]) end
return 1
`;

/**
 * Removes the named entries that match the filter, with their vectors, and uncounts their
 * bytes; answers how many it removed. An entry already gone is left to the sweep.
 * The entry and vector keys are named inside (from P), so this needs one Redis, not a
 * cluster: the cache runs on the governance store's Redis, as the response store does.
 * KEYS: exp, size, bytes. ARGV: P, route filter ('' none), route, team filter ('' none), team, then the keys.
 */
export const DROP = `
local dropped, freed = 0, 0
for i = 6, #ARGV do
  local key = ARGV[i]
  local entry = ARGV[1] .. 'e:' .. key
  local f = redis.call('HMGET', entry, 'route', 'team', 'ctx')
  if f[1] and (ARGV[2] == '' or f[1] == ARGV[3]) and (ARGV[4] == '' or f[2] == ARGV[5]) then
    redis.call('DEL', entry)
    if f[3] then
      redis.call('HDEL', ARGV[1] .. 'v:' .. f[3], key)
      redis.call('ZREM', ARGV[1] .. 'vz:' .. f[3], key)
    end
    freed = freed + tonumber(redis.call('HGET', KEYS[2], key) or '0')
    redis.call('HDEL', KEYS[2], key)
    redis.call('ZREM', KEYS[1], key)
    dropped = dropped + 1
  end
end
if freed > 0 then redis.call('DECRBY', KEYS[3], freed) end
return dropped
`;

/**
 * Forgets up to ARGV[1] expired entries, then answers the byte count and how many it forgot.
 * KEYS: exp, size, bytes.
 */
export const BYTES = `${SWEEP_FUNCTION}
local forgot = sweep(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]))
return {tonumber(redis.call('GET', KEYS[3]) or '0'), forgot}
`;
