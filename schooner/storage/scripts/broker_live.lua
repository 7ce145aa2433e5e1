#!lua flags=allow-oom
-- broker_live.lua: sets when a broker's registration lapses, in the live set.
-- KEYS[1] the live set (broker id -> lapse time, ms)   ARGV[1] the lapse time   ARGV[2] the broker id
-- Returns 1.
-- allow-oom: one member per broker, its score moved each heartbeat (see broker_register.lua).
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 1
