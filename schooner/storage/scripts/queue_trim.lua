-- uses: _ids, _mq
-- queue_trim.lua: removes a partition's entries below an ID, but never one a consumer group still needs:
-- the bound is lowered to each group's oldest pending entry, or else to the entry after its last
-- delivered one. Keeps the partition state's valid-from mark and the time index in step, as
-- log_delete_records.lua does.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] time index
-- ARGV[1] the requested bound: entries below this ID may go
-- ARGV[2] '1' for a tiered topic (remote.storage.enable): the bound is lowered to the state's
--         archived_end, so records not yet in the cold tier stay (none archived: nothing goes)
-- ARGV[3] sequence bits (-1: dense), to turn archived_end into an ID
-- Returns {entries removed, the bound used}.
local stream = KEYS[1]
local want_ms, want_seq = parse_id(ARGV[1])
if ARGV[2] == '1' then
  local archived = tonumber(redis.call('HGET', KEYS[2], 'archived_end') or '0')
  local bits = tonumber(ARGV[3])
  local ams, aseq
  if bits < 0 then
    ams, aseq = 0, archived + 1
  else
    ams = math.floor(archived / 2 ^ bits)
    aseq = archived - ams * 2 ^ bits
  end
  if id_less(ams, aseq, want_ms, want_seq) then want_ms, want_seq = ams, aseq end
end
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', stream)
if not ok then return {0, ARGV[1]} end
for _, flat in ipairs(groups) do
  local g = fields_of(flat)
  local need_ms, need_seq
  if g['pending'] > 0 then
    need_ms, need_seq = parse_id(redis.call('XPENDING', stream, g['name'])[2])
  else
    need_ms, need_seq = parse_id(g['last-delivered-id'])
    need_seq = need_seq + 1
  end
  if id_less(need_ms, need_seq, want_ms, want_seq) then want_ms, want_seq = need_ms, need_seq end
end
local bound = string.format('%.0f-%.0f', want_ms, want_seq)
local removed = redis.call('XTRIM', stream, 'MINID', bound)
if removed > 0 then
  set_valid_from(KEYS[2], bound)
  trim_time_index(stream, KEYS[3])
end
return {removed, bound}
