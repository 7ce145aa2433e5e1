-- uses: _ids, _mq, _share
-- share_state.lua: what DescribeShareGroupOffsets and the CLI show of one share partition.
-- KEYS[1] stream   KEYS[2] share partition state
-- ARGV[1] group   ARGV[2] sequence bits (-1: dense)
-- Returns {} when the share partition is not initialized, else {start offset, in-flight count,
-- lag (-1 when it cannot be told), archived, dead-lettered}. The start offset is the oldest entry
-- still in the window, or past the last one delivered when the window is empty.
local stream, group, bits = KEYS[1], ARGV[1], tonumber(ARGV[2])
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', stream)
if not ok then return {} end
local g
for _, flat in ipairs(groups) do
  local t = fields_of(flat)
  if t['name'] == group then g = t end
end
if not g then return {} end
local summary = redis.call('XPENDING', stream, group)
local in_flight = tonumber(summary[1])
local start
if in_flight > 0 then start = offset_of(summary[2], bits)
else start = offset_of(g['last-delivered-id'], bits) + 1 end
local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
if first and in_flight == 0 then
  local low = offset_of(first[1], bits)
  if low > start then start = low end
end
-- Lag: the records in flight plus those not yet delivered. On dense topics offsets count records, so the
-- latter is an offset difference, as in Kafka; otherwise Redis's own count, which it loses after a read
-- from the middle of the stream until the group catches up (then -1).
local lag
if bits < 0 then
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
  local delivered = offset_of(g['last-delivered-id'], bits)
  if first then delivered = math.max(delivered, offset_of(first[1], bits) - 1) end
  lag = in_flight
  if last then lag = lag + math.max(0, offset_of(last[1], bits) - delivered) end
else
  lag = g['lag']
  if lag == nil or lag == false then lag = -1 else lag = tonumber(lag) + in_flight end
end
local s = redis.call('HMGET', KEYS[2], 'archived', 'dead_lettered')
return {string.format('%d', start), in_flight, lag, tonumber(s[1] or 0), tonumber(s[2] or 0)}
