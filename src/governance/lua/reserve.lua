-- Reserves a batch of requests of one team, in order, each all-or-nothing, as if each were
-- its own script run back to back (RedisGovernanceStore sends the reserves of one turn of
-- the event loop together: one round trip, and each scope's counters read and written
-- once per batch, however many of its requests the batch holds). Sent after common.lua
-- and read-scope.lua; redis-encoding.ts builds its KEYS and ARGV and reads its reply.
--
-- KEYS: per distinct scope of the batch, log, counters, resv.
-- ARGV: now (-1 = Redis's clock, TIME), deadline (Redis time in ms after which the batch
-- must not take effect, because the gateway has given up waiting for it; -1 = none), W,
-- countersTtlMs, reservationTtlMs, then the count of distinct limit sets and each one's rpm,
-- tpm, tokensPerDay, budget (-1 = none), warn (1 = on_exceeded warn), then m, then per
-- reservation: id, tokens, cost, n, then per scope (team first) the scope's number in KEYS
-- and its limit set's number (both 1-based). A reservation expires reservationTtlMs after now.
-- Returns {0, redisNow} when the deadline has passed (nothing is written), else {1, now,
-- redisNow, day, month}, then per reservation {1, warnMask, 0, 0} or {0, scopePosition,
-- limit, retryMs}, then for each of its scopes requests, oldestRequestAt, tokens,
-- oldestTokensAt (-1 = none).
--
-- The deadline is why a reserve that waited in Redis past the gateway's command timeout (a
-- paused or overloaded Redis runs queued scripts later) leaves nothing behind: the gateway
-- has already answered that request 503, or served it unenforced, and a reservation made
-- now would hold a budget's room, an rpm slot and the day's tokens for nobody.

local real = redisNowMs()
local deadline = tonumber(ARGV[2])
if deadline >= 0 and real > deadline then return {0, real} end
local now = tonumber(ARGV[1])
if now < 0 then now = real end
local day, month = utcStamps(now)
local W = tonumber(ARGV[3]); local ttl = tonumber(ARGV[4]); local resTtl = tonumber(ARGV[5])
local exp = now + resTtl
local K = 3
local a = 6
local limits = {}
for l = 1, tonumber(ARGV[a]) do
  limits[l] = {
    rpm = tonumber(ARGV[a + 1]), tpm = tonumber(ARGV[a + 2]), tpd = tonumber(ARGV[a + 3]),
    bud = tonumber(ARGV[a + 4]), warn = ARGV[a + 5] == '1',
  }
  a = a + 5
end
a = a + 1
local m = tonumber(ARGV[a])
local st, order = {}, {}
-- A distinct scope's state, read once per batch: its counters after the window's purge,
-- and the oldest log entry before this batch adds any (entries it adds are at now).
local function state(u)
  local s = st[u]
  if s then return s end
  local k = (u - 1) * K
  s = readScope(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], now, W, month, day, false)
  s.k = k
  local e = redis.call('ZRANGE', KEYS[k + 1], 0, 0, 'WITHSCORES')
  if #e == 0 then s.oldest = -1 else s.oldest = tonumber(e[2]) end
  s.added = false
  st[u] = s
  order[#order + 1] = u
  return s
end
local function oldestOf(s)
  if s.oldest >= 0 then return s.oldest end
  if s.added then return now end
  return -1
end
-- When the window frees enough: walking the log oldest first, the first time at which
-- what leaves brings the count under the limit. What this batch admitted is not in the log
-- yet; it is at now, and leaves a whole window from now.
local function retryRpm(s, lrpm)
  if lrpm <= 0 then return W end
  -- The (reqs - rpm + 1)-th oldest request frees the slot; corrections are not requests.
  local entries = redis.call('ZRANGE', KEYS[s.k + 1], 0, -1, 'WITHSCORES')
  local need, seen = s.reqs - lrpm + 1, 0
  for j = 1, #entries, 2 do
    seen = seen + entryOf(entries[j])
    if seen >= need then return tonumber(entries[j + 1]) + W - now end
  end
  return W
end
local function retryTpm(s, ltpm, tokens)
  if tokens > ltpm then return W end
  local entries = redis.call('ZRANGE', KEYS[s.k + 1], 0, -1, 'WITHSCORES')
  local left = s.tsum + tokens
  for j = 1, #entries, 2 do
    local _, t = entryOf(entries[j])
    left = left - t
    if left <= ltpm then return tonumber(entries[j + 1]) + W - now end
  end
  return W
end
local out = {1, now, real, day, month}
for r = 1, m do
  local id = ARGV[a + 1]; local tokens = tonumber(ARGV[a + 2])
  local costArg = ARGV[a + 3]; local cost = tonumber(costArg)
  local n = tonumber(ARGV[a + 4])
  a = a + 4
  local ss, cs = {}, {}
  for i = 1, n do
    ss[i] = state(tonumber(ARGV[a + 1]))
    cs[i] = limits[tonumber(ARGV[a + 2])]
    a = a + 2
  end
  local refusal = nil
  local warn = 0
  for i = 1, n do
    local c = cs[i]; local s = ss[i]
    if c.rpm >= 0 and s.reqs + 1 > c.rpm then refusal = {0, i, 'rpm', retryRpm(s, c.rpm)}; break end
    if c.tpm >= 0 and s.tsum + tokens > c.tpm then refusal = {0, i, 'tpm', retryTpm(s, c.tpm, tokens)}; break end
    if c.tpd >= 0 and s.day + tokens > c.tpd then refusal = {0, i, 'tokens_per_day', 0}; break end
    if c.bud >= 0 and s.spent + s.reserved + cost > c.bud and not s.renew and not s.looked then
      -- Reservations a crashed replica left may have expired: look before refusing.
      s.reserved = s.reserved - purgeReservations(KEYS[s.k + 2], KEYS[s.k + 3], now, month)
      -- A resv key gone (expired while idle, or emptied by settles) takes its sum with it; this batch's own
      -- reservations are not written yet (see the end), and still count.
      if redis.call('EXISTS', KEYS[s.k + 3]) == 0 then s.reserved = s.batchReserved or 0 end
      s.dirty = true
      s.looked = true
    end
    if c.bud >= 0 and s.spent + s.reserved + cost > c.bud then
      -- A budget refusal's last field is what was left (micro-USD), for its message.
      if c.warn then warn = warn + 2 ^ (i - 1) else refusal = {0, i, 'budget', c.bud - s.spent - s.reserved}; break end
    end
  end
  if refusal == nil then
    for i = 1, n do
      local c = cs[i]; local s = ss[i]
      -- The batch's one log member per scope (written at the end) is named after its first request.
      if not s.added then s.firstId = id; s.batchReqs = 0; s.batchTokens = 0 end
      s.batchReqs = s.batchReqs + 1; s.batchTokens = s.batchTokens + tokens
      s.reqs = s.reqs + 1; s.tsum = s.tsum + tokens; s.day = s.day + tokens
      s.admitted = true; s.added = true
      if c.bud >= 0 then
        -- Written at the end, in one ZADD per scope: a call per reservation was a fifth of the script.
        local pending = s.pending
        if not pending then pending = {}; s.pending = pending end
        pending[#pending + 1] = exp; pending[#pending + 1] = month .. ':' .. id .. ':' .. costArg
        s.batchReserved = (s.batchReserved or 0) + cost
        s.reserved = s.reserved + cost; s.budget = true
      end
    end
    out[#out + 1] = 1; out[#out + 1] = warn; out[#out + 1] = 0; out[#out + 1] = 0
  else
    for _, v in ipairs(refusal) do out[#out + 1] = v end
  end
  for i = 1, n do
    local c = cs[i]; local s = ss[i]
    local o = -1
    -- Only a scope with rpm or tpm shows in the x-ratelimit-* headers.
    if c.rpm >= 0 or c.tpm >= 0 then o = oldestOf(s) end
    out[#out + 1] = s.reqs; out[#out + 1] = o; out[#out + 1] = s.tsum; out[#out + 1] = o
  end
end
local y = math.floor(tonumber(month) / 100); local mo = tonumber(month) % 100
if mo == 1 then y = y - 1; mo = 12 else mo = mo - 1 end
local lastMonth = string.format('%04d%02d', y, mo)
for _, u in ipairs(order) do
  local s = st[u]
  local counters = KEYS[s.k + 2]
  -- Before any PEXPIRE below: the time to live of a key that does not exist yet is not set.
  if s.pending then redis.call('ZADD', KEYS[s.k + 3], unpack(s.pending)) end
  if s.admitted then
    redis.call('ZADD', KEYS[s.k + 1], now, s.firstId .. ':' .. s.batchTokens .. ':' .. s.batchReqs)
    if s.newDay then
      -- The first booking of a UTC day: earlier days, and months before the last, are history.
      for _, f in ipairs(redis.call('HKEYS', counters)) do
        local kind, stamp = string.match(f, '^(%a):(%d+)$')
        if (kind == 'd' and stamp ~= day) or ((kind == 's' or kind == 'r') and stamp < lastMonth) then
          redis.call('HDEL', counters, f)
        end
      end
    end
    local fields = {'rsum', s.reqs, 'tsum', s.tsum, 'd:' .. day, s.day}
    if s.budget or s.dirty then fields[#fields + 1] = 'r:' .. month; fields[#fields + 1] = s.reserved end
    if s.renew then
      -- Renewed once per window: every entry added before the next renewal outlives its use.
      fields[#fields + 1] = 'x'; fields[#fields + 1] = now + W
      redis.call('PEXPIRE', KEYS[s.k + 1], 2 * W)
      redis.call('PEXPIRE', counters, ttl)
      redis.call('PEXPIRE', KEYS[s.k + 3], resTtl + 2 * W)
    end
    redis.call('HSET', counters, unpack(fields))
  elseif s.dirty then
    redis.call('HSET', counters, 'rsum', s.reqs, 'tsum', s.tsum, 'r:' .. month, s.reserved)
  end
end
return out
