-- quotas_alter.lua: sets and removes the quotas of one client-quota entity, and keeps the index of
-- entities in step (an entity is listed exactly while it has a quota), then publishes the entity id on
-- the quotas channel so that every broker reloads its quotas.
-- KEYS[1] the entity's hash   KEYS[2] the set of entity ids
-- ARGV[1] entity id   ARGV[2] the quotas channel   ARGV[3] n, the number of quotas to set   then n
-- key/value pairs, then the keys to remove.
-- Returns the number of quotas the entity has afterwards.
local n = tonumber(ARGV[3])
if n > 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 4, 3 + 2 * n))
end
if #ARGV > 3 + 2 * n then
  redis.call('HDEL', KEYS[1], unpack(ARGV, 4 + 2 * n))
end
local left = redis.call('HLEN', KEYS[1])
if left > 0 then
  redis.call('SADD', KEYS[2], ARGV[1])
else
  redis.call('SREM', KEYS[2], ARGV[1])
end
redis.call('PUBLISH', ARGV[2], ARGV[1])
return left
