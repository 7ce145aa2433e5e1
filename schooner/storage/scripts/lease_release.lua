-- lease_release.lua: gives a lease up only if the caller still owns it (compare and delete).
-- KEYS[1] lease   ARGV[1] owner token
-- Returns 1 when released, 0 when it was not the caller's.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
