-- log_count.lua: counts a stream's entries from an ID on, without sending them back.
-- KEYS[1] stream   ARGV[1] first ID to count   ARGV[2] at most this many (bounds the time Redis is busy)
-- Returns {count, next ID to continue from or '' when the end was reached}.
local start, cap, count = ARGV[1], tonumber(ARGV[2]), 0
while count < cap do
  local step = math.min(1000, cap - count)
  local entries = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', step)
  count = count + #entries
  if #entries < step then return {count, ''} end
  start = '(' .. entries[#entries][1]
end
return {count, start}
