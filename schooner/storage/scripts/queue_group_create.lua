-- uses: _mq
-- queue_group_create.lua: creates a consumer group on one partition's stream, unless it exists.
-- KEYS[1] stream   KEYS[2] partition state hash
-- ARGV[1] group   ARGV[2] start ID ('$' for the current end, '0' for the start)   ARGV[3] topic id
-- Returns 1 created, 0 already there, -3 when the partition is not that topic's (deleted or re-created),
-- so a consumer never brings back the stream of a deleted topic.
if redis.call('HGET', KEYS[2], 'topic_id') ~= ARGV[3] then return -3 end
local ok, err = pcall(redis.call, 'XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM')
if ok then return 1 end
if string.find(err_text(err), 'BUSYGROUP', 1, true) then return 0 end
return redis.error_reply(err_text(err))
