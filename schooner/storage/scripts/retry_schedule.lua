-- uses: _mq
-- retry_schedule.lua: schedules a retry and acks the original in one step, so no crash can lose it.
-- KEYS[1] stream   KEYS[2] retry schedule (sorted set)   KEYS[3] retry payloads (hash)
-- ARGV[1] group   ARGV[2] entry ID   ARGV[3] retry id   ARGV[4] delay (ms)   ARGV[5] packed record
-- Returns the due time (ms); 0 when the entry was no longer pending for the group (another member
-- settled it), in which case nothing is scheduled.
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
local due = redis_now_ms() + tonumber(ARGV[4])
redis.call('ZADD', KEYS[2], due, ARGV[3])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
return due
