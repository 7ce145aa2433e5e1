-- topic_update.lua: changes an existing topic's hash: set and delete fields, grow partitions.
-- KEYS[1] topic hash   KEYS[2] set of topic names
-- ARGV[1] name   ARGV[2] new partition count (0: unchanged)   ARGV[3] '1' to drop every config.* first
-- ARGV[4] channel to publish the name on when changed (topics notices)
-- ARGV[5] number of fields to delete d, then d field names, then field/value pairs to set.
-- Returns the old partition count, -1 when there is no such topic, -2 when the count would not grow.
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return -1 end
local old = tonumber(redis.call('HGET', KEYS[1], 'partitions'))
local wanted = tonumber(ARGV[2])
if wanted > 0 and wanted <= old then return -2 end
if ARGV[3] == '1' then
  for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(field, 1, 7) == 'config.' then redis.call('HDEL', KEYS[1], field) end
  end
end
local d = tonumber(ARGV[5])
if d > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, 6, 5 + d)) end
if #ARGV > 5 + d then redis.call('HSET', KEYS[1], unpack(ARGV, 6 + d)) end
if wanted > 0 then redis.call('HSET', KEYS[1], 'partitions', wanted) end
redis.call('PUBLISH', ARGV[4], ARGV[1])
return old
