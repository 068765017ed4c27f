-- Shared by the reserve and status scripts (the store prepends it, then read-scope.lua):
-- the sliding log's purge and expired reservations. Each script runs atomically in Redis,
-- so one reserve is one check-and-commit across every replica. The decision is the memory
-- store's, in the same order; the shared suite in test/governance/ pins that both agree.
--
-- Per scope, three keys (all hash-tagged by team, so a team's keys share a Cluster slot):
--   log       ZSET  member = "<id>:<tokens>:<requests>", score = ms: the sliding log. One
--                   member holds the requests one batch admitted at one millisecond and their
--                   tokens, which leave the window with it (times are whole milliseconds, so
--                   the log stays exact). Settle's true-up adds a correction "<id>~<delta>"
--                   at the reservations' score, one per log and millisecond of a settle batch,
--                   so the log's sum stays exact without rewriting a member. A member written
--                   before batches, "<id>:<tokens>", is one request.
--   counters  HASH  rsum, tsum = requests and tokens in the log; d:<day> = tokens booked to
--                   that UTC day; s:<month>, r:<month> = spent and reserved micro-USD;
--                   x = when the keys' time to live is next renewed (ms).
--   resv      ZSET  member = "<month>:<id>:<cost>", score = expiry ms: reservations not yet
--                   settled, so that a crashed replica's are given back by themselves. Only a
--                   scope with a budget reserves (r:<month> and resv): nothing else reads them.
--
-- Redis spends its time per command a script calls, and on a small machine Redis competes
-- with the gateway for CPU (the governance-overhead bench, ADR-0020). So the hot path calls
-- few commands: the counters are read with one HMGET and written with one HSET of values the
-- script computed; the keys' time to live is renewed once per window, not per request; and
-- expired reservations are looked for only when they could change a decision (a budget that
-- would refuse) or when the time to live is renewed, and always by status.

-- Redis's own clock in whole milliseconds. Every replica's scripts read this one clock, so
-- a replica whose clock is wrong cannot move a window, a day or a month for the others.
local function redisNowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- The UTC day ("20261130") and month ("202611") of an epoch millisecond: the civil date of
-- the day count, proleptic Gregorian, as JavaScript's Date computes it (the store's encoding
-- test compares the two across leap years and month ends).
local function utcStamps(ms)
  local z = math.floor(ms / 86400000) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d%02d%02d', y, m, d), string.format('%04d%02d', y, m)
end
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
