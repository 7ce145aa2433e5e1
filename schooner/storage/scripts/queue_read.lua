-- uses: _mq
-- queue_read.lua: delivers new entries of a partition to the member that holds its lease (XREADGROUP).
-- KEYS[1] stream   KEYS[2] lease
-- ARGV[1] group   ARGV[2] member id (the lease's owner token)   ARGV[3] max entries
-- Returns -1 when the lease is not the member's (so a member that lost a partition reads nothing more),
-- -2 when the group does not exist, else {{id, {field, value, ...}}, ...} (empty when none are new).
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
local ok, reply = pcall(redis.call, 'XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3],
  'STREAMS', KEYS[1], '>')
if not ok then
  if string.find(err_text(reply), 'NOGROUP', 1, true) then return -2 end
  return redis.error_reply(err_text(reply))
end
if not reply then return {} end
return reply[1][2]
