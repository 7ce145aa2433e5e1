#!lua flags=allow-oom
-- broker_id_allocate.lua: the next broker id, from the deployment's counter.
-- KEYS[1] the counter   Returns the new id.
-- allow-oom: one counter, raised once per broker start: a broker restarted while Redis is over its
-- memory limit (an AOF that loaded past it) must start, to run the archiver that frees memory.
return redis.call('INCR', KEYS[1])
