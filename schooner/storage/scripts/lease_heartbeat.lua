-- uses: _mq
-- lease_heartbeat.lua: keeps a group member registered, drops members whose heartbeat lapsed.
-- KEYS[1] the group's members (sorted set)   KEYS[2] the topic's MQ groups (set)
-- ARGV[1] member id   ARGV[2] heartbeat lifetime (ms)   ARGV[3] group name
-- Returns the live member ids, sorted.
local now = redis_now_ms()
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('SADD', KEYS[2], ARGV[3])
local live = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(live)
return live
