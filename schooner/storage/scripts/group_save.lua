-- group_save.lua: writes the group's state, only while this broker still owns it.
-- KEYS[1] group hash   ARGV[1] broker id   ARGV[2] owner epoch from group_claim.lua
-- then field/value pairs to set.
-- Returns 1 when saved, 0 when another broker has claimed the group since.
local owner = redis.call('HMGET', KEYS[1], 'owner', 'owner_epoch')
if owner[1] ~= ARGV[1] or owner[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
return 1
