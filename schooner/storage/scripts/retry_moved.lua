-- uses: _mq
-- retry_moved.lua: confirms a move batch once its append is done (or was found a duplicate).
-- KEYS[1] retry schedule   KEYS[2] retry payloads   KEYS[3] mover state
-- ARGV[1] the batch's base sequence   ARGV[2] records appended
-- Returns the number of retries removed; 0 when that batch was already confirmed.
local state = KEYS[3]
if redis.call('HGET', state, 'batch_seq') ~= ARGV[1] then return 0 end
local ids = split_lines(redis.call('HGET', state, 'batch') or '')
if #ids > 0 then
  redis.call('ZREM', KEYS[1], unpack(ids))
  redis.call('HDEL', KEYS[2], unpack(ids))
end
local next_seq = tonumber(ARGV[1]) + tonumber(ARGV[2])
if next_seq > 2147483647 then next_seq = next_seq - 2147483648 end
redis.call('HSET', state, 'next_seq', next_seq)
redis.call('HDEL', state, 'batch', 'batch_seq')
return #ids
