-- uses: _mq
-- share_reset.lua: AlterShareGroupOffsets and DeleteShareGroupOffsets on one share partition (the group
-- has no members then): drops the Redis consumer group with its window and counters, and with a start
-- ID makes it again so that the next record delivered is the first after that ID.
-- KEYS[1] stream   KEYS[2] share partition state   KEYS[3] partition state hash
-- ARGV[1] group   ARGV[2] last delivered ID to start after, or '' to delete   ARGV[3] topic id
-- Returns 1 done, 0 nothing to delete, -3 when the partition is not that topic's any more.
if redis.call('HGET', KEYS[3], 'topic_id') ~= ARGV[3] then return -3 end
local ok, n = pcall(redis.call, 'XGROUP', 'DESTROY', KEYS[1], ARGV[1])
local existed = ok and n == 1
redis.call('DEL', KEYS[2])
if ARGV[2] == '' then return existed and 1 or 0 end
redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM')
return 1
