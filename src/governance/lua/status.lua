-- A status read of n scopes. Sent after common.lua and read-scope.lua; redis-encoding.ts
-- builds its KEYS and ARGV and reads its reply.
--
-- KEYS: per scope, log, counters, resv (as for reserve.lua, one triple per scope asked for).
-- ARGV: now (-1 = Redis's clock, TIME), W, n.
-- Purges the window and every expired reservation, then returns per scope requests, tokens,
-- day tokens, spent, reserved.

local now = tonumber(ARGV[1])
if now < 0 then now = redisNowMs() end
local day, month = utcStamps(now)
local W = tonumber(ARGV[2]); local n = tonumber(ARGV[3])
local K = 3
local out = {}
for i = 1, n do
  local k = (i - 1) * K
  local s = readScope(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], now, W, month, day, true)
  if redis.call('EXISTS', KEYS[k + 2]) == 1 then
    redis.call('HSET', KEYS[k + 2], 'rsum', s.reqs, 'tsum', s.tsum, 'r:' .. month, s.reserved)
  end
  out[#out + 1] = s.reqs
  out[#out + 1] = s.tsum
  out[#out + 1] = s.day
  out[#out + 1] = s.spent
  out[#out + 1] = s.reserved
end
return out
