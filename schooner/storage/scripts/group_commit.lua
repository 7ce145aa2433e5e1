-- group_commit.lua: stores committed offsets, only while this broker still coordinates the group.
-- KEYS[1] group hash   KEYS[2] group offsets hash
-- ARGV[1] broker id   ARGV[2] owner epoch from group_claim.lua   then "topic:partition"/JSON pairs.
-- Returns 1 when stored, 0 when another broker has claimed the group since (nothing is written).
local owner = redis.call('HMGET', KEYS[1], 'owner', 'owner_epoch')
if owner[1] ~= ARGV[1] or owner[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV, 3))
return 1
