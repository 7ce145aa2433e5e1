#!lua flags=allow-oom
-- uses: _ids
-- log_delete_records.lua: moves a partition's log start forward (Kafka DeleteRecords).
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] time index
-- ARGV[1] the entry ID of the new log start: entries below it are removed
-- Returns {start_ms, start_seq} of the first remaining entry, or {-1, -1} when none remain.
-- allow-oom: it only removes entries (and moves valid_from), which frees memory when Redis is full.
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[1])
set_valid_from(KEYS[2], ARGV[1])
trim_time_index(KEYS[1], KEYS[3])
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
if not first then return {-1, -1} end
local ms, seq = parse_id(first[1])
return {ms, seq}
