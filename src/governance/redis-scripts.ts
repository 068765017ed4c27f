// The Lua scripts of the redis store. Each runs atomically in Redis, so one reserve is
// one check-and-commit across every replica. The decision is the memory store's, in the
// same order; the shared suite in test/governance/ pins that both agree.
//
// Per scope, three keys (all hash-tagged by team, so a team's keys share a Cluster slot):
//   log       ZSET  member = "<id>:<tokens>:<requests>", score = ms: the sliding log. One
//                   member holds the requests one batch admitted at one millisecond and their
//                   tokens, which leave the window with it (times are whole milliseconds, so
//                   the log stays exact). Settle's true-up adds a correction "<id>~<delta>"
//                   at the reservations' score, one per log and millisecond of a settle batch,
//                   so the log's sum stays exact without rewriting a member. A member written
//                   before batches, "<id>:<tokens>", is one request.
//   counters  HASH  rsum, tsum = requests and tokens in the log; d:<day> = tokens booked to
//                   that UTC day; s:<month>, r:<month> = spent and reserved micro-USD;
//                   x = when the keys' time to live is next renewed (ms).
//   resv      ZSET  member = "<month>:<id>:<cost>", score = expiry ms: reservations not yet
//                   settled, so that a crashed replica's are given back by themselves. Only a
//                   scope with a budget reserves (r:<month> and resv): nothing else reads them.
//
// Redis spends its time per command a script calls, and on a small machine Redis competes
// with the gateway for CPU (issue 9's benchmark). So the hot path calls few commands: the
// counters are read with one HMGET and written with one HSET of values the script computed;
// the keys' time to live is renewed once per window, not per request; and expired
// reservations are looked for only when they could change a decision (a budget that would
// refuse) or when the time to live is renewed, and always by status.
export const KEYS_PER_SCOPE = 3;

/** Shared by the scripts: the sliding log's purge, expired reservations, renewal. */
const COMMON = `
local function num(v)
  if v then return tonumber(v) end
  return 0
end
-- A log member's requests and tokens (see the key layout above).
local function entryOf(m)
  local t, r = string.match(m, ':(-?%d+):(%d+)$')
  if t then return tonumber(r), tonumber(t) end
  local sep, tokens = string.match(m, '([:~])(-?%d+)$')
  if sep == ':' then return 1, tonumber(tokens) end
  return 0, tonumber(tokens)
end
-- Drops what left the window; returns how many requests and tokens left with it.
local function purgeLog(log, now, W)
  local old = redis.call('ZRANGEBYSCORE', log, '-inf', now - W)
  if #old == 0 then return 0, 0 end
  local gone, freed = 0, 0
  for _, m in ipairs(old) do
    local r, t = entryOf(m)
    gone = gone + r
    freed = freed + t
  end
  redis.call('ZREMRANGEBYSCORE', log, '-inf', now - W)
  return gone, freed
end
-- Gives back reservations past their expiry; returns what it gave back this month.
local function purgeReservations(counters, resv, now, month)
  local expired = redis.call('ZRANGEBYSCORE', resv, '-inf', now)
  if #expired == 0 then return 0 end
  local here = 0
  for _, m in ipairs(expired) do
    local mm, c = string.match(m, '^(%d+):.+:(%d+)$')
    if mm == month then here = here + tonumber(c)
    else redis.call('HINCRBY', counters, 'r:' .. mm, -tonumber(c)) end
  end
  redis.call('ZREMRANGEBYSCORE', resv, '-inf', now)
  return here
end
`;

/**
 * One scope's state as a script reads it: the counters after the window's purge. Renewal
 * (once per window per scope) also checks the sums against the keys: a log or resv key
 * that expired while idle takes its sums with it.
 */
const READ_SCOPE = `
local function readScope(log, counters, resv, now, W, month, day, renewDue)
  local v = redis.call('HMGET', counters, 'rsum', 'tsum', 'x', 'd:' .. day, 's:' .. month, 'r:' .. month)
  local gone, freed = purgeLog(log, now, W)
  local st = {
    reqs = math.max(0, num(v[1]) - gone), tsum = math.max(0, num(v[2]) - freed),
    day = num(v[4]), newDay = not v[4], spent = num(v[5]), reserved = num(v[6]),
    dirty = gone > 0, renew = renewDue or num(v[3]) <= now,
  }
  if st.renew then
    st.reserved = st.reserved - purgeReservations(counters, resv, now, month)
    if redis.call('EXISTS', log) == 0 then st.reqs = 0; st.tsum = 0 end
    if redis.call('EXISTS', resv) == 0 then st.reserved = 0 end
    st.dirty = true
  end
  return st
end
`;

/**
 * Reserves a batch of requests of one team, in order, each all-or-nothing, as if each were
 * its own script run back to back (RedisGovernanceStore sends the reserves of one turn of
 * the event loop together: one round trip, and each scope's counters read and written
 * once per batch, however many of its requests the batch holds).
 *
 * KEYS: per distinct scope of the batch, log, counters, resv.
 * ARGV: now, W, countersTtlMs, month, day, reservationTtlMs, then the count of distinct
 * limit sets and each one's rpm, tpm, tokensPerDay, budget (-1 = none), warn (1 =
 * on_exceeded warn), then m, then per reservation: id, tokens, cost, n, then per scope (team
 * first) the scope's number in KEYS and its limit set's number (both 1-based). A
 * reservation expires reservationTtlMs after now.
 * Returns per reservation {1, warnMask, 0, 0} or {0, scopePosition, limit, retryMs}, then
 * for each of its scopes requests, oldestRequestAt, tokens, oldestTokensAt (-1 = none).
 */
export const RESERVE_SCRIPT = `${COMMON}${READ_SCOPE}
local now = tonumber(ARGV[1]); local W = tonumber(ARGV[2]); local ttl = tonumber(ARGV[3])
local month = ARGV[4]; local day = ARGV[5]; local resTtl = tonumber(ARGV[6])
local exp = now + resTtl
local K = ${KEYS_PER_SCOPE}
local a = 7
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
local out = {}
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
      if c.warn then warn = warn + 2 ^ (i - 1) else refusal = {0, i, 'budget', 0}; break end
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
`;

/**
 * Settles a batch of reservations (see RedisGovernanceStore: settles are sent together,
 * a few milliseconds at most after their responses). KEYS: per distinct scope of the batch,
 * log, counters, resv; ARGV: the count, then per reservation id, reservedTokens,
 * actualTokens, actualCost, reservedCost, month, day, atMs, n, then its n scopes' numbers in
 * KEYS (1-based).
 * Trues up the token log and the day and turns each reservation into spend. A reservation is
 * given back only while it is still open (one already settled, or expired, is not found in
 * resv); the spend is not idempotent: settle once. The counters of a scope are read and
 * written once per batch, however many of its requests the batch holds.
 */
export const SETTLE_SCRIPT = `
local m = tonumber(ARGV[1])
local a = 1
local corrections, corrected = {}, {}
local releases, released = {}, {}
local deltas, touched = {}, {}
local function bump(counters, field, d)
  local c = deltas[counters]
  if not c then
    c = {}
    deltas[counters] = c
    touched[#touched + 1] = counters
  end
  c[field] = (c[field] or 0) + d
end
for j = 1, m do
  local id = ARGV[a + 1]; local delta = tonumber(ARGV[a + 3]) - tonumber(ARGV[a + 2])
  local cost = tonumber(ARGV[a + 4]); local rcost = ARGV[a + 5]; local month = ARGV[a + 6]; local day = ARGV[a + 7]
  local at = ARGV[a + 8]; local n = tonumber(ARGV[a + 9])
  a = a + 9
  for i = 1, n do
    local k = (tonumber(ARGV[a + i]) - 1) * 3
    local log, counters, resv = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
    if delta ~= 0 then
      -- A correction at the reservation's own time: it leaves the window with the
      -- reservation, so the log's sum is right now and after. One per log and millisecond.
      local c = corrections[log]
      if not c then c = {}; corrections[log] = c; corrected[#corrected + 1] = log end
      local e = c[at]
      if not e then
        e = {id, 0}
        c[at] = e
        c[#c + 1] = at
      end
      e[2] = e[2] + delta
      bump(counters, 'tsum', delta)
      bump(counters, 'd:' .. day, delta)
    end
    local r = releases[resv]
    if not r then r = {}; releases[resv] = r; released[#released + 1] = resv end
    r[#r + 1] = {month .. ':' .. id .. ':' .. rcost, counters, 'r:' .. month, tonumber(rcost)}
    bump(counters, 's:' .. month, cost)
  end
  a = a + n
end
for _, log in ipairs(corrected) do
  local c = corrections[log]
  local args = {}
  for _, at in ipairs(c) do
    local e = c[at]
    if e[2] ~= 0 then args[#args + 1] = at; args[#args + 1] = e[1] .. '~' .. e[2] end
  end
  if #args > 0 then redis.call('ZADD', log, unpack(args)) end
end
for _, resv in ipairs(released) do
  local list = releases[resv]
  local members = {}
  for i, e in ipairs(list) do members[i] = e[1] end
  local scores = redis.call('ZMSCORE', resv, unpack(members))
  local open = {}
  for i, e in ipairs(list) do
    if scores[i] then
      open[#open + 1] = e[1]
      bump(e[2], e[3], -e[4])
    end
  end
  if #open > 0 then redis.call('ZREM', resv, unpack(open)) end
end
for _, counters in ipairs(touched) do
  local c = deltas[counters]
  local fields = {}
  for f in pairs(c) do fields[#fields + 1] = f end
  local v = redis.call('HMGET', counters, unpack(fields))
  local out = {}
  for i, f in ipairs(fields) do
    local kind = string.sub(f, 1, 1)
    -- A day that has already rolled over is history: only a day still counted is trued up.
    if not (kind == 'd' and not v[i]) then
      local value = tonumber(v[i] or '0') + c[f]
      if kind ~= 's' and value < 0 then value = 0 end
      out[#out + 1] = f; out[#out + 1] = value
    end
  end
  if #out > 0 then redis.call('HSET', counters, unpack(out)) end
end
return m
`;

/**
 * Same keys as RESERVE, ARGV: now, W, month, day, n. Purges the window and every expired
 * reservation, then returns per scope requests, tokens, day tokens, spent, reserved.
 */
export const STATUS_SCRIPT = `${COMMON}${READ_SCOPE}
local now = tonumber(ARGV[1]); local W = tonumber(ARGV[2]); local month = ARGV[3]; local day = ARGV[4]
local n = tonumber(ARGV[5])
local K = ${KEYS_PER_SCOPE}
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
`;
