-- group_claim.lua: makes this broker the group's coordinator and returns the group's saved state.
-- KEYS[1] group hash   ARGV[1] broker id
-- Returns the hash as a flat field/value list, with owner and owner_epoch already updated.
-- Saves by the previous owner fail from now on (group_save.lua checks owner and epoch).
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'owner_epoch', 1)
return redis.call('HGETALL', KEYS[1])
