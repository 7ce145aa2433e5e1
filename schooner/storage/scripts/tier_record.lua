#!lua flags=allow-oom
-- tier_record.lua: records how far the cold tier holds a partition, in its state hash.
-- KEYS[1] partition state hash
-- ARGV[1] topic id: must equal the hash's topic_id, so a deleted or re-created topic is left alone
-- ARGV[2] the archived end (the offset after the last record a committed Delta version holds), or -1
--         to leave it: it only ever grows, so a late writer never moves it back
-- ARGV[3] the cold tier's first offset when an archive step added rows ('' to leave it): set only
--         while the hash has none
-- ARGV[4] a cold trim's offset ('' for none): the cold start moves up to it; at or past the archived
--         end the cold tier holds nothing and cold_start goes
-- Returns {archived_end, cold_start} after the change ('' for none), or {} for another topic id.
-- allow-oom: two numbers in an existing hash; recording an archive step is what lets the trim free memory.
local state = KEYS[1]
if redis.call('HGET', state, 'topic_id') ~= ARGV[1] then return {} end
local saved = redis.call('HMGET', state, 'archived_end', 'cold_start')
local ended, start = saved[1] or '', saved[2] or ''
if tonumber(ARGV[2]) >= 0 and (ended == '' or tonumber(ARGV[2]) > tonumber(ended)) then
  ended = ARGV[2]
  redis.call('HSET', state, 'archived_end', ended)
end
if ARGV[3] ~= '' and start == '' then
  start = ARGV[3]
  redis.call('HSET', state, 'cold_start', start)
end
if ARGV[4] ~= '' and start ~= '' then
  local below = tonumber(ARGV[4])
  if ended ~= '' and below >= tonumber(ended) then
    start = ''
    redis.call('HDEL', state, 'cold_start')
  elseif below > tonumber(start) then
    start = ARGV[4]
    redis.call('HSET', state, 'cold_start', start)
  end
end
return {ended, start}
