-- lease_acquire.lua: takes a partition's lease for one group member (SET NX PX with its owner token).
-- KEYS[1] lease   ARGV[1] owner token   ARGV[2] lease time (ms)
-- Returns 1 when the caller holds the lease now (newly taken, or already its own and so extended), else 0.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
