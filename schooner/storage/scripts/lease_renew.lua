-- lease_renew.lua: extends a lease only if the caller still owns it (compare and set).
-- KEYS[1] lease   ARGV[1] owner token   ARGV[2] lease time (ms)
-- Returns 1 when extended, 0 when the lease lapsed or belongs to another member.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
