#!lua flags=allow-oom
-- uses: _ids
-- tier_trim.lua: trims a tiered partition's stream to what local.retention.* keep in Redis, never at or
-- past the archived end (the state's archived_end: what a committed Delta version holds).
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] time index   KEYS[4] aborted transactions
-- ARGV[1] topic id (must equal the state's topic_id)   ARGV[2] local retention ms (-1: none)
-- ARGV[3] local retention bytes (-1: none)   ARGV[4] '1' to trim with ~   ARGV[5] sequence bits (-1: dense)
-- ARGV[6] '1' to trim to the archived end whatever local.retention.* keep (Redis nears its memory limit)
-- Returns the number of entries removed. Aborted transactions whose marker is gone are forgotten.
-- allow-oom: it only removes entries (and moves valid_from); it is what frees memory when Redis is full.
local stream, state, tindex = KEYS[1], KEYS[2], KEYS[3]
local saved = redis.call('HMGET', state, 'topic_id', 'archived_end')
if saved[1] ~= ARGV[1] or not saved[2] then return 0 end
local local_ms, local_bytes = tonumber(ARGV[2]), tonumber(ARGV[3])
local to_archived_end = ARGV[6] == '1'
if local_ms < 0 and local_bytes < 0 and not to_archived_end then return 0 end
local bits = tonumber(ARGV[5])
local dense = bits < 0
local archived = tonumber(saved[2])
if archived <= 0 then return 0 end
-- The entry ID of the archived end: everything below it is in the cold tier.
local ams, aseq
if dense then
  ams, aseq = 0, archived + 1
else
  ams = math.floor(archived / 2 ^ bits)
  aseq = archived - ams * 2 ^ bits
end
local archived_id = string.format('%.0f-%.0f', ams, aseq)

-- What local.retention.* let go: the larger of the two bounds (a record goes when either says so).
local bound_ms, bound_seq = nil, nil
local function raise(id)
  local ms, seq = parse_id(id)
  if bound_ms == nil or id_less(bound_ms, bound_seq, ms, seq) then bound_ms, bound_seq = ms, seq end
end
if to_archived_end then
  raise(archived_id)
elseif local_ms >= 0 then
  local minid = retention_min_id(stream, tindex, dense, now_ms() - local_ms)
  if minid then raise(minid) end
end
if local_bytes >= 0 and not to_archived_end then
  local totals = redis.call('HMGET', state, 'bytes', 'records')
  local bytes, records = tonumber(totals[1] or 0), tonumber(totals[2] or 0)
  if records > 0 and bytes > 0 then
    local drop = redis.call('XLEN', stream) - math.floor(local_bytes / (bytes / records))
    if drop > 0 then
      -- Only entries below the archived end may go, so the scan stops there.
      local gone = redis.call('XRANGE', stream, '-', '(' .. archived_id, 'COUNT', drop)
      if #gone > 0 then
        local ms, seq = parse_id(gone[#gone][1])
        raise(string.format('%.0f-%.0f', ms, seq + 1))
      end
    end
  end
end
if bound_ms == nil then return 0 end
if id_less(ams, aseq, bound_ms, bound_seq) then bound_ms, bound_seq = ams, aseq end
local minid = string.format('%.0f-%.0f', bound_ms, bound_seq)
local n
if ARGV[4] == '1' then
  n = redis.call('XTRIM', stream, 'MINID', '~', minid)
else
  n = redis.call('XTRIM', stream, 'MINID', minid)
end
if n == 0 then return 0 end
local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
if ARGV[4] == '1' and first then set_valid_from(state, first[1]) else set_valid_from(state, minid) end
trim_time_index(stream, tindex)
forget_trimmed_aborts(stream, KEYS[4])
return n
