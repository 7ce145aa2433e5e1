-- uses: _mq
-- dead_letter_replay.lua: hands a dead letter back to its origin partition: it leaves the dead-letter
-- stream and enters the retry schedule, due now, in one step; the retry mover appends it.
-- KEYS[1] dead-letter stream   KEYS[2] retry schedule   KEYS[3] retry payloads
-- ARGV[1] dead letter ID   ARGV[2] retry id   ARGV[3] packed record
-- Returns 1 when scheduled, 0 when that dead letter is gone (already replayed or deleted).
if redis.call('XDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], redis_now_ms(), ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
return 1
