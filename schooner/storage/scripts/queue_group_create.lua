-- uses: _ids, _mq, _txn
-- queue_group_create.lua: creates a consumer group on one partition's stream, unless it exists.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] open transactions (txn-open)
-- ARGV[1] group   ARGV[2] start ID ('$' for the current end, '0' for the start)   ARGV[3] topic id
-- ARGV[4] '1' read committed: '$' then means the last stable offset, as a Kafka read_committed
--         consumer's "latest" does, so an open transaction's records are delivered once it commits
-- Returns 1 created, 0 already there, -3 when the partition is not that topic's (deleted or re-created),
-- so a consumer never brings back the stream of a deleted topic.
if redis.call('HGET', KEYS[2], 'topic_id') ~= ARGV[3] then return -3 end
local start = ARGV[2]
if start == '$' and ARGV[4] == '1' then start = before_stable(KEYS[1], KEYS[3]) or '$' end
local ok, err = pcall(redis.call, 'XGROUP', 'CREATE', KEYS[1], ARGV[1], start, 'MKSTREAM')
if ok then return 1 end
if string.find(err_text(err), 'BUSYGROUP', 1, true) then return 0 end
return redis.error_reply(err_text(err))
