-- Settles a batch of reservations (RedisGovernanceStore sends settles together, a few
-- milliseconds at most after their responses); redis-encoding.ts builds its KEYS and ARGV.
--
-- KEYS: per distinct scope of the batch, log, counters, resv.
-- ARGV: the count, then per reservation id, reservedTokens, actualTokens, actualCost,
-- reservedCost, month, day, atMs, n, then its n scopes' numbers in KEYS (1-based).
-- Returns the count.
--
-- Trues up the token log and the day and turns each reservation into spend. A reservation is
-- given back only while it is still open (one already settled, or expired, is not found in
-- resv); the spend is not idempotent: settle once. The counters of a scope are read and
-- written once per batch, however many of its requests the batch holds.

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
  -- A negative actual (tokens or cost) counts as zero: a settle never refunds what other
  -- requests booked, whatever a caller sends.
  local id = ARGV[a + 1]; local delta = math.max(0, tonumber(ARGV[a + 3])) - tonumber(ARGV[a + 2])
  local cost = math.max(0, tonumber(ARGV[a + 4])); local rcost = ARGV[a + 5]; local month = ARGV[a + 6]; local day = ARGV[a + 7]
  local at = ARGV[a + 8]; local n = tonumber(ARGV[a + 9])
  a = a + 9
  for i = 1, n do
    local k = (tonumber(ARGV[a + i]) - 1) * 3
    local log, counters, resv = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
    if delta ~= 0 then
      -- A correction at the reservation's own time: it leaves the window with the
      -- reservation, so the log's sum is right now and after. One per log and millisecond;
      -- the window's sum is trued up below, only while the reservation is still in the log.
      local c = corrections[log]
      if not c then c = {}; corrections[log] = c; corrected[#corrected + 1] = log end
      local e = c[at]
      if not e then
        e = {id, 0, counters}
        c[at] = e
        c[#c + 1] = at
      end
      e[2] = e[2] + delta
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
    -- A reservation that has already left the window (a request longer than the window, its
    -- entry purged) took its tokens out of the sum when it left: a correction now would be
    -- subtracted from the sum a second time when it left in turn, and would count tokens that
    -- are in no window. Its day is still trued up above.
    if e[2] ~= 0 and redis.call('ZCOUNT', log, at, at) > 0 then
      args[#args + 1] = at; args[#args + 1] = e[1] .. '~' .. e[2]
      bump(e[3], 'tsum', e[2])
    end
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
      if value < 0 then value = 0 end
      out[#out + 1] = f; out[#out + 1] = value
    end
  end
  if #out > 0 then redis.call('HSET', counters, unpack(out)) end
end
return m
