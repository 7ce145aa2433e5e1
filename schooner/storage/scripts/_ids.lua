-- Shared helpers, prepended to scripts whose header says "-- uses: _ids".
local function parse_id(id)
  local dash = string.find(id, '-', 1, true)
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end

local function id_less(ams, aseq, bms, bseq)
  return ams < bms or (ams == bms and aseq < bseq)
end

-- The Kafka offset of entry ms-seq, as storage/offsets.py computes it (bits < 0: dense offsets).
local function offset_at(ms, seq, bits)
  if bits < 0 then return seq - 1 end
  return ms * 2 ^ bits + seq
end

local function offset_of(id, bits)
  local ms, seq = parse_id(id)
  return offset_at(ms, seq, bits)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Drops time-index entries wholly before the first remaining entry, keeping one so that a
-- lookup still has a start point at or before the log start.
local function trim_time_index(stream, tindex)
  local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
  if not first then
    redis.call('DEL', tindex)
    return
  end
  local fms, fseq = parse_id(first[1])
  while true do
    local two = redis.call('ZRANGE', tindex, 0, 1)
    if #two < 2 then return end
    local sms, sseq = parse_id(two[2])
    if id_less(fms, fseq, sms, sseq) then return end
    redis.call('ZREM', tindex, two[1])
  end
end

-- Records the lowest ID a reader may still ask for: every entry below it is gone.
local function set_valid_from(state, id)
  redis.call('HSET', state, 'valid_from', id)
end

-- The highest ID with ms 0: where every read of a dense topic ends.
local LAST_DENSE_ID = '0-18446744073709551615'

-- The sequence of a dense topic's last numbered entry (0 for none).
local function last_dense_seq(stream)
  local last = redis.call('XREVRANGE', stream, LAST_DENSE_ID, '-', 'COUNT', 1)[1]
  if not last then return 0 end
  local _, seq = parse_id(last[1])
  return seq
end

-- The first ID that retention.ms keeps. Timestamp-encoded topics: the cutoff time is an ID.
-- Dense topics: the time index's first batch whose running maximum timestamp reached the cutoff;
-- none means every indexed record is older, so all of the log goes. nil: nothing to trim.
local function retention_min_id(stream, tindex, dense, cutoff)
  if not dense then return tostring(math.max(cutoff, 0)) .. '-0' end
  local kept = redis.call('ZRANGEBYSCORE', tindex, cutoff, '+inf', 'LIMIT', 0, 1)[1]
  if kept then return kept end
  if redis.call('EXISTS', tindex) == 0 then return nil end
  return '0-' .. (last_dense_seq(stream) + 1)
end

-- retention.ms: trims by MINID the records older than now - retention_ms. Returns the number removed.
local function trim_by_time(stream, state, tindex, retention_ms, approx, now, dense)
  if retention_ms < 0 then return 0 end
  local minid = retention_min_id(stream, tindex, dense, now - retention_ms)
  if not minid then return 0 end
  local n
  if approx then
    n = redis.call('XTRIM', stream, 'MINID', '~', minid)
  else
    n = redis.call('XTRIM', stream, 'MINID', minid)
  end
  if n > 0 then
    local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
    -- With ~ some entries below minid may stay; the first remaining one bounds what is gone.
    if approx and first then set_valid_from(state, first[1]) else set_valid_from(state, minid) end
  end
  return n
end

-- retention.bytes: trims by MAXLEN, the count from the average record size, never below `keep`
-- entries. Returns the number removed.
local function trim_by_size(stream, state, retention_bytes, approx, keep)
  if retention_bytes < 0 then return 0 end
  local totals = redis.call('HMGET', state, 'bytes', 'records')
  local bytes, records = tonumber(totals[1] or 0), tonumber(totals[2] or 0)
  if records <= 0 or bytes <= 0 then return 0 end
  local maxlen = math.max(math.floor(retention_bytes / (bytes / records)), keep)
  local n
  if approx then
    n = redis.call('XTRIM', stream, 'MAXLEN', '~', maxlen)
  else
    n = redis.call('XTRIM', stream, 'MAXLEN', maxlen)
  end
  if n > 0 then
    local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
    if first then set_valid_from(state, first[1]) end
  end
  return n
end

-- The retention pass (log_retention.lua): retention.ms, then retention.bytes. Returns the number of
-- entries removed.
local function apply_retention(stream, state, tindex, retention_ms, retention_bytes, approx, now, dense)
  local removed = trim_by_time(stream, state, tindex, retention_ms, approx, now, dense)
    + trim_by_size(stream, state, retention_bytes, approx, 0)
  if removed > 0 then
    trim_time_index(stream, tindex)
  end
  return removed
end


-- The ID for one more entry written by a script other than log_append.lua (which inlines this, as it is
-- the hot path): after the state's last ID, the stream's tail and its last generated ID. Returns -1, -1
-- on a dense stream that a plain `XADD key *` ended (see log_append.lua).
local function next_entry_id(stream, state, dense, bits, now)
  local info = redis.call('XINFO', 'STREAM', stream)
  local gen_ms, gen_seq = 0, 0
  for k = 1, #info, 2 do
    if info[k] == 'last-generated-id' then gen_ms, gen_seq = parse_id(info[k + 1]) end
  end
  if dense and gen_ms > 0 then return -1, -1 end
  local saved = redis.call('HMGET', state, 'last_ms', 'last_seq')
  local ms, seq = tonumber(saved[1] or 0), tonumber(saved[2] or 0)
  if id_less(ms, seq, gen_ms, gen_seq) then ms, seq = gen_ms, gen_seq end
  if dense then return 0, seq + 1 end
  if now > ms then return now, 0 end
  if seq + 1 > 2 ^ bits - 1 then return ms + 1, 0 end
  return ms, seq + 1
end

-- Forgets the aborted transactions (a sorted set of "...,<marker id>") whose marker is below the
-- stream's first entry: a trim removed the marker, so no read can meet the transaction again.
local function forget_trimmed_aborts(stream, aborted)
  local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
  while true do
    local low = redis.call('ZRANGE', aborted, 0, 0)[1]
    if not low then break end
    local marker = string.match(low, ',([^,]+)$')
    local mms, mseq = parse_id(marker)
    if first then
      local fms, fseq = parse_id(first[1])
      if not id_less(mms, mseq, fms, fseq) then break end
    end
    redis.call('ZREM', aborted, low)
  end
end
