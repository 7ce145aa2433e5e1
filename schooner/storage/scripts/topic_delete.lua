-- topic_delete.lua: unregisters a topic; the caller then unlinks its partitions' keys.
-- KEYS[1] topic hash   KEYS[2] set of topic names   KEYS[3] hash topic id -> name
-- ARGV[1] name   ARGV[2] expected topic id ('' for any): guards against a topic re-created meanwhile
-- ARGV[3] channel to publish the name on when deleted (topics notices)
-- Returns the number of partitions the topic had, or -1 when there was no such topic.
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return -1 end
local meta = redis.call('HMGET', KEYS[1], 'id', 'partitions')
if ARGV[2] ~= '' and meta[1] ~= ARGV[2] then return -1 end
if meta[1] then redis.call('HDEL', KEYS[3], meta[1]) end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return tonumber(meta[2] or 0)
