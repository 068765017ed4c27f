-- One scope's state as a script reads it: the counters after the window's purge. Renewal
-- (once per window per scope) also checks the sums against the keys: a log or resv key
-- that expired while idle takes its sums with it. Needs common.lua before it.

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
