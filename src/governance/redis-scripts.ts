// The Lua scripts of the redis store. Each runs atomically in Redis, so one reserve is
// one check-and-commit across every replica. The decision is the memory store's, in the
// same order; the shared suite in test/governance/ pins that both agree.
//
// Per scope, the keys are (all hash-tagged by team, so a team's keys share a Cluster slot):
//   rpm   ZSET  member = reservation id, score = ms           (sliding request log)
//   tpm   ZSET  member = "<id>:<tokens>", score = ms          (sliding token log)
//   tsum  STRING the sum of the tokens in tpm                 (so a check is O(1) amortised)
//   day   STRING tokens booked to this UTC day
//   month HASH  spent, reserved, "r:<id>" = reserved cost     (this UTC month)
//   resv  ZSET  member = "<month>:<id>", score = expiry ms    (reservations a crash left open)

export const RESERVE_KEYS_PER_SCOPE = 6;
export const SETTLE_KEYS_PER_SCOPE = 5;

/** Drops what left the 60 s window, and reservations whose owner never settled them. */
const PURGE = `
local function purge(rpm, tpm, tsum, mon, resv, now, W, month)
  redis.call('ZREMRANGEBYSCORE', rpm, '-inf', now - W)
  local old = redis.call('ZRANGEBYSCORE', tpm, '-inf', now - W)
  if #old > 0 then
    local freed = 0
    for _, m in ipairs(old) do freed = freed + tonumber(string.match(m, ':(%d+)$')) end
    redis.call('ZREMRANGEBYSCORE', tpm, '-inf', now - W)
    redis.call('DECRBY', tsum, freed)
  end
  local expired = redis.call('ZRANGEBYSCORE', resv, '-inf', now)
  if #expired > 0 then
    for _, m in ipairs(expired) do
      local mm, rid = string.match(m, '^(%d+):(.+)$')
      if mm == month then
        local c = redis.call('HGET', mon, 'r:' .. rid)
        if c then
          redis.call('HDEL', mon, 'r:' .. rid)
          redis.call('HINCRBY', mon, 'reserved', -tonumber(c))
        end
      end
    end
    redis.call('ZREMRANGEBYSCORE', resv, '-inf', now)
  end
end
local function oldest(key)
  local e = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #e == 0 then return -1 end
  return tonumber(e[2])
end
`;

/**
 * ARGV: now, W, id, tokens, cost, expiresAt, dayTtlS, monthTtlS, month, n, then per scope
 * rpm, tpm, tokensPerDay, budget (-1 = none), warn (1 = on_exceeded warn).
 * Returns {0, scopeIndex, limit, retryMs, windows...} or {1, warnMask, windows...}, where
 * windows is, per scope, requests, oldestRequestAt, tokens, oldestTokensAt (-1 = none).
 */
export const RESERVE_SCRIPT = `${PURGE}
local now = tonumber(ARGV[1]); local W = tonumber(ARGV[2]); local id = ARGV[3]
local tokens = tonumber(ARGV[4]); local cost = tonumber(ARGV[5]); local exp = tonumber(ARGV[6])
local dayTtl = tonumber(ARGV[7]); local monthTtl = tonumber(ARGV[8]); local month = ARGV[9]
local n = tonumber(ARGV[10])
local K = ${RESERVE_KEYS_PER_SCOPE}
for i = 1, n do
  local k = (i - 1) * K
  purge(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 5], KEYS[k + 6], now, W, month)
end
local function windows(out)
  for i = 1, n do
    local k = (i - 1) * K
    out[#out + 1] = redis.call('ZCARD', KEYS[k + 1])
    out[#out + 1] = oldest(KEYS[k + 1])
    out[#out + 1] = tonumber(redis.call('GET', KEYS[k + 3]) or '0')
    out[#out + 1] = oldest(KEYS[k + 2])
  end
  return out
end
local warn = 0
for i = 1, n do
  local k = (i - 1) * K
  local a = 10 + (i - 1) * 5
  local lrpm = tonumber(ARGV[a + 1]); local ltpm = tonumber(ARGV[a + 2])
  local ltpd = tonumber(ARGV[a + 3]); local lbud = tonumber(ARGV[a + 4])
  if lrpm >= 0 then
    local c = redis.call('ZCARD', KEYS[k + 1])
    if c + 1 > lrpm then
      local retry = W
      if lrpm > 0 then
        local e = redis.call('ZRANGE', KEYS[k + 1], c - lrpm, c - lrpm, 'WITHSCORES')
        retry = tonumber(e[2]) + W - now
      end
      return windows({0, i, 'rpm', retry})
    end
  end
  if ltpm >= 0 then
    local s = tonumber(redis.call('GET', KEYS[k + 3]) or '0')
    if s + tokens > ltpm then
      local retry = W
      if tokens <= ltpm then
        local entries = redis.call('ZRANGE', KEYS[k + 2], 0, -1, 'WITHSCORES')
        local freed = 0
        for j = 1, #entries, 2 do
          freed = freed + tonumber(string.match(entries[j], ':(%d+)$'))
          if s - freed + tokens <= ltpm then
            retry = tonumber(entries[j + 1]) + W - now
            break
          end
        end
      end
      return windows({0, i, 'tpm', retry})
    end
  end
  if ltpd >= 0 then
    local d = tonumber(redis.call('GET', KEYS[k + 4]) or '0')
    if d + tokens > ltpd then return windows({0, i, 'tokens_per_day', 0}) end
  end
  if lbud >= 0 then
    local spent = tonumber(redis.call('HGET', KEYS[k + 5], 'spent') or '0')
    local reserved = tonumber(redis.call('HGET', KEYS[k + 5], 'reserved') or '0')
    if spent + reserved + cost > lbud then
      if ARGV[a + 5] == '1' then warn = warn + 2 ^ (i - 1) else return windows({0, i, 'budget', 0}) end
    end
  end
end
for i = 1, n do
  local k = (i - 1) * K
  redis.call('ZADD', KEYS[k + 1], now, id)
  redis.call('PEXPIRE', KEYS[k + 1], W)
  redis.call('ZADD', KEYS[k + 2], now, id .. ':' .. tokens)
  redis.call('PEXPIRE', KEYS[k + 2], W)
  redis.call('INCRBY', KEYS[k + 3], tokens)
  redis.call('PEXPIRE', KEYS[k + 3], W)
  redis.call('INCRBY', KEYS[k + 4], tokens)
  redis.call('EXPIRE', KEYS[k + 4], dayTtl)
  redis.call('HINCRBY', KEYS[k + 5], 'reserved', cost)
  redis.call('HSET', KEYS[k + 5], 'r:' .. id, cost)
  redis.call('EXPIRE', KEYS[k + 5], monthTtl)
  redis.call('ZADD', KEYS[k + 6], exp, month .. ':' .. id)
  redis.call('PEXPIRE', KEYS[k + 6], exp - now + W)
end
return windows({1, warn})
`;

/**
 * ARGV: id, reservedTokens, actualTokens, actualCost, month, monthTtlS, n.
 * Trues up the token log and the day, turns the reservation into spend. Idempotent for the
 * reservation (a second call finds no "r:<id>"), not for the spend: call it once.
 */
export const SETTLE_SCRIPT = `
local id = ARGV[1]; local est = tonumber(ARGV[2]); local actual = tonumber(ARGV[3])
local cost = tonumber(ARGV[4]); local month = ARGV[5]; local monthTtl = tonumber(ARGV[6])
local n = tonumber(ARGV[7])
local K = ${SETTLE_KEYS_PER_SCOPE}
for i = 1, n do
  local k = (i - 1) * K
  local member = id .. ':' .. est
  local score = redis.call('ZSCORE', KEYS[k + 1], member)
  if score then
    redis.call('ZREM', KEYS[k + 1], member)
    redis.call('ZADD', KEYS[k + 1], score, id .. ':' .. actual)
    redis.call('INCRBY', KEYS[k + 2], actual - est)
  end
  if redis.call('EXISTS', KEYS[k + 3]) == 1 then
    local d = tonumber(redis.call('GET', KEYS[k + 3]))
    local delta = actual - est
    if d + delta < 0 then delta = -d end
    redis.call('INCRBY', KEYS[k + 3], delta)
  end
  local c = redis.call('HGET', KEYS[k + 4], 'r:' .. id)
  if c then
    redis.call('HDEL', KEYS[k + 4], 'r:' .. id)
    redis.call('HINCRBY', KEYS[k + 4], 'reserved', -tonumber(c))
    redis.call('ZREM', KEYS[k + 5], month .. ':' .. id)
  end
  redis.call('HINCRBY', KEYS[k + 4], 'spent', cost)
  redis.call('EXPIRE', KEYS[k + 4], monthTtl)
end
return 1
`;

/**
 * Same keys as RESERVE, ARGV: now, W, month, n. Purges, then returns per scope
 * requests, tokens, day tokens, spent, reserved.
 */
export const STATUS_SCRIPT = `${PURGE}
local now = tonumber(ARGV[1]); local W = tonumber(ARGV[2]); local month = ARGV[3]; local n = tonumber(ARGV[4])
local K = ${RESERVE_KEYS_PER_SCOPE}
local out = {}
for i = 1, n do
  local k = (i - 1) * K
  purge(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 5], KEYS[k + 6], now, W, month)
  out[#out + 1] = redis.call('ZCARD', KEYS[k + 1])
  out[#out + 1] = tonumber(redis.call('GET', KEYS[k + 3]) or '0')
  out[#out + 1] = tonumber(redis.call('GET', KEYS[k + 4]) or '0')
  out[#out + 1] = tonumber(redis.call('HGET', KEYS[k + 5], 'spent') or '0')
  out[#out + 1] = tonumber(redis.call('HGET', KEYS[k + 5], 'reserved') or '0')
end
return out
`;
