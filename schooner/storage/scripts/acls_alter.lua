-- acls_alter.lua: adds and removes ACL bindings, and bumps the version when the set changed.
-- KEYS[1] set of encoded bindings   KEYS[2] version counter
-- ARGV[1] channel to publish the new version on   ARGV[2] number of bindings to add a,
-- then a encoded bindings to add, then the encoded bindings to remove.
-- Returns {version, added, removed}: the version after the change, and how many were really added
-- (not there before) and removed (there before).
local a = tonumber(ARGV[2])
local added, removed = 0, 0
if a > 0 then added = redis.call('SADD', KEYS[1], unpack(ARGV, 3, 2 + a)) end
if #ARGV > 2 + a then removed = redis.call('SREM', KEYS[1], unpack(ARGV, 3 + a)) end
local version
if added + removed > 0 then
  version = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', ARGV[1], version)
else
  version = tonumber(redis.call('GET', KEYS[2]) or '0')
end
return {version, added, removed}
