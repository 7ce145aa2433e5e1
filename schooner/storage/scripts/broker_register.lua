#!lua flags=allow-oom
-- broker_register.lua: registers or renews a broker's address hash, expiring after a few sessions.
-- KEYS[1] the broker's address hash   ARGV[1] its lifetime (ms)   ARGV[2..] field, value, ...
-- Returns 1.
-- allow-oom: the same few fields overwritten each heartbeat; a broker whose renewals Redis refused
-- while records waited to be archived would leave the deployment and let its groups go.
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
