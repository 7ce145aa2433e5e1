-- uses: _mq
-- queue_lag.lua: how far one group is behind on one partition.
-- KEYS[1] stream   ARGV[1] group   ARGV[2] most entries to count when Redis does not know the lag
-- Returns -2 when the group (or stream) does not exist, else
-- {undelivered, 1 if that count is exact else 0, pending, ID of the oldest unconsumed entry or '',
--  that entry's timestamp field or ''}: a dense topic's IDs carry no time.
local stream, group = KEYS[1], ARGV[1]
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', stream)
if not ok then return -2 end
local g
for _, flat in ipairs(groups) do
  local t = fields_of(flat)
  if t['name'] == group then g = t end
end
if not g then return -2 end
local last = g['last-delivered-id']
local undelivered, exact = g['lag'], 1
if not undelivered then
  -- XDEL or an arbitrary start ID leave Redis without a lag: count, up to the limit.
  undelivered = 0
  local limit, start = tonumber(ARGV[2]), '(' .. last
  while undelivered < limit do
    local chunk = redis.call('XRANGE', stream, start, '+', 'COUNT', math.min(1000, limit - undelivered))
    if #chunk == 0 then break end
    undelivered = undelivered + #chunk
    start = '(' .. chunk[#chunk][1]
  end
  if undelivered >= limit then exact = 0 end
end
local first
if g['pending'] > 0 then
  local id = redis.call('XPENDING', stream, group)[2]
  first = redis.call('XRANGE', stream, id, id)[1] or {id, {}}
elseif undelivered > 0 then
  first = redis.call('XRANGE', stream, '(' .. last, '+', 'COUNT', 1)[1]
end
if not first then return {undelivered, exact, g['pending'], '', ''} end
return {undelivered, exact, g['pending'], first[1], fields_of(first[2])['timestamp'] or ''}
