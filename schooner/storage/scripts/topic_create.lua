-- topic_create.lua: registers a topic, unless one of that name exists.
-- KEYS[1] topic hash   KEYS[2] set of topic names   KEYS[3] hash topic id -> name
-- ARGV[1] name   ARGV[2] id   ARGV[3] channel to publish the name on when created (topics notices)
-- then field/value pairs of the topic hash (partitions, configs, ...)
-- Returns 1 when created, 0 when the name is taken.
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'name', ARGV[1], 'id', ARGV[2], unpack(ARGV, 4))
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
