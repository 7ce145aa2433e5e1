-- uses: _ids
-- log_append.lua: appends one produce batch to one partition, atomically.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] time index
-- KEYS[4] producers: idempotent producer id -> last append ms (log_producer_expiry.lua reads it)
-- KEYS[8] open transactions: producer id -> "epoch,first entry id,transactional id"
-- ARGV[1] sequence bits (-1: dense) ARGV[2] timestamp type (0 CreateTime, 1 LogAppendTime)
-- ARGV[3] producer id (-1: none) ARGV[4] producer epoch   ARGV[5] base sequence
-- ARGV[6] record count n         ARGV[7] retention.ms (-1: none; sizes the time index's spans only)
-- ARGV[8] retention.bytes (-1: none)   ARGV[9] '1' to trim with ~   ARGV[10] batch size in bytes
-- ARGV[11] channel to publish on ('' for none)   ARGV[12] message to publish
-- ARGV[13] topic id: must equal the state hash's topic_id, so a deleted or re-created topic is refused
-- ARGV[14] the batch's highest timestamp   ARGV[15] the 0-based index of the record that has it
-- ARGV[16] transactional id ('' for a batch outside a transaction): each entry then gets the field
--          txn = "producer id:epoch", and the partition's open transactions gain the producer
-- ARGV[17] '1' to SPUBLISH on ARGV[11] (a Redis Cluster: that channel carries the partition's hash
--          tag, so it is in this script's slot); '0' to PUBLISH (one Redis)
-- ARGV[18] the codec the producer compressed the batch with (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)
-- ARGV[19] '1' to use SCHOONER.XADDRUN where the server has it, '0' never (SCHOONER_COMPILED=0)
-- KEYS[12] codec runs: a new entry at the batch's first ID when its codec differs from the last batch's
-- then the records in runs of one shape and timestamp: a count k, the shape (bit 1 key, 2 value,
-- 4 headers), the timestamp, then for each of the k records the key if bit 1, the value if bit 2 and
-- the encoded headers if bit 4.
-- Returns {status, base_ms, base_seq, last_ms, last_seq, append_ms, start_ms, start_seq, foreign, open}
--   (open, the partition's open transactions after the append, only when appended):
--   status 0 appended; 1 duplicate of a recent batch (the IDs are that batch's);
--   -3 UNKNOWN_TOPIC_OR_PARTITION; -45 OUT_OF_ORDER_SEQUENCE_NUMBER; -47 INVALID_PRODUCER_EPOCH.
--   -56 KAFKA_STORAGE_ERROR: a dense topic's stream holds an ID with ms > 0 (a plain `XADD key *`),
--   after which Redis takes no ID 0-n again; foreign is then that ID. start_ms is -1 for an empty stream.
-- Dense topics (bits -1): IDs are 0-1, 0-2, ...; the time index gets LogAppendTime batches too.
local stream, state, tindex = KEYS[1], KEYS[2], KEYS[3]
local bits = tonumber(ARGV[1])
local dense = bits < 0
local log_append_time = ARGV[2] == '1'
local pid = tonumber(ARGV[3])
local epoch = tonumber(ARGV[4])
local base_seq = tonumber(ARGV[5])
local n = tonumber(ARGV[6])
local mask = dense and 2 ^ 53 or 2 ^ bits - 1
local now = now_ms()
if redis.call('HGET', state, 'topic_id') ~= ARGV[13] then return {-3, 0, 0, 0, 0, now, -1, -1, ''} end

local function log_start()
  local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
  if not first then return -1, -1 end
  return parse_id(first[1])
end

-- Idempotent producers: epoch fencing and the last five batches, as Kafka's producer state.
local pfield, pbatches
if pid >= 0 then
  pfield = 'producer:' .. ARGV[3]
  pbatches = {}
  local saved = redis.call('HGET', state, pfield)
  local last_seq = base_seq + n - 1
  if last_seq > 2147483647 then last_seq = last_seq - 2147483648 end
  if saved then
    local parts = {}
    for part in string.gmatch(saved, '[^;]+') do parts[#parts + 1] = part end
    -- parts[1] is "epoch,last append ms"; entries written before expiry existed have the epoch only.
    local saved_epoch = tonumber(string.match(parts[1], '^[^,]+'))
    for i = 2, #parts do
      local b = {}
      for v in string.gmatch(parts[i], '[^,]+') do b[#b + 1] = tonumber(v) end
      pbatches[#pbatches + 1] = b -- {first seq, last seq, base ms, base seq, last ms, last seq}
    end
    if epoch < saved_epoch then
      return {-47, 0, 0, 0, 0, now, -1, -1, ''}
    elseif epoch > saved_epoch then
      if base_seq ~= 0 then return {-45, 0, 0, 0, 0, now, -1, -1, ''} end
      pbatches = {}
    else
      for _, b in ipairs(pbatches) do
        if b[1] == base_seq and b[2] == last_seq then
          local sms, sseq = log_start()
          return {1, b[3], b[4], b[5], b[6], now, sms, sseq, ''}
        end
      end
      local expected = 0
      if #pbatches > 0 then
        expected = pbatches[#pbatches][2] + 1
        if expected > 2147483647 then expected = 0 end
        if base_seq ~= expected then return {-45, 0, 0, 0, 0, now, -1, -1, ''} end
      end
    end
  end
end

-- The next ID: after both our own last ID and the stream's tail (a native writer may have added).
local tail = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
if dense and tail and string.sub(tail[1], 1, 2) ~= '0-' then
  redis.call('HSET', state, 'foreign_id', tail[1])
  return {-56, 0, 0, 0, 0, now, -1, -1, tail[1]}
end
local saved_ids = redis.call('HMGET', state, 'last_ms', 'last_seq', 'max_ts', 'tindex_member', 'tindex_since', 'tindex_records', 'codec')
local last_ms, last_seq = tonumber(saved_ids[1] or -1), tonumber(saved_ids[2] or -1)
if tail then
  local tms, tseq = parse_id(tail[1])
  if id_less(last_ms, last_seq, tms, tseq) then last_ms, last_seq = tms, tseq end
end

local function first_id_after(ms, seq)
  if dense then return 0, math.max(seq, 0) + 1 end
  if now > ms then return now, 0 end
  seq = seq + 1
  if seq > mask then return ms + 1, 0 end
  return ms, seq
end

local ms, seq = first_id_after(last_ms, last_seq)
local base_ms, base_seq_id = ms, seq
local max_ts = tonumber(saved_ids[3] or -1)
local txn = nil
if ARGV[16] ~= '' then txn = ARGV[3] .. ':' .. ARGV[4] end
local now_text = tostring(now)

-- One XADD of any shape (bit 1 key, 2 value, 4 headers) at `at`; returns where the next record starts.
-- Field names are constants here rather than arguments: fewer bytes to send and to convert.
local function add(id, shape, ts, at)
  local fields = {'timestamp', ts}
  if shape % 2 == 1 then
    fields[#fields + 1] = 'key'; fields[#fields + 1] = ARGV[at]; at = at + 1
  end
  if shape % 4 >= 2 then
    fields[#fields + 1] = 'value'; fields[#fields + 1] = ARGV[at]; at = at + 1
  end
  if shape >= 4 then
    fields[#fields + 1] = 'headers'; fields[#fields + 1] = ARGV[at]; at = at + 1
  end
  if txn then
    fields[#fields + 1] = 'txn'; fields[#fields + 1] = txn
  end
  redis.call('XADD', stream, id, unpack(fields))
  return at
end

-- The records come in runs: a count, a shape and a timestamp, then that many records' fields.
local i = 20
local run_left, run_shape, run_ts = 0, 0, now_text
local function next_run()
  run_left, run_shape = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  if not log_append_time then run_ts = ARGV[i + 2] end
  i = i + 3
end
next_run()

-- The first XADD fails when a native writer deleted the tail after a higher ID: then the batch
-- starts after the stream's last generated ID (on a dense topic, unless that was a deleted `*` entry).
-- The rest run without pcall, which costs.
local ok, after_first = pcall(add, ms .. '-' .. seq, run_shape, run_ts, i)
if not ok then
  local info = redis.call('XINFO', 'STREAM', stream)
  local gen_ms, gen_seq = 0, 0
  for k = 1, #info, 2 do
    if info[k] == 'last-generated-id' then gen_ms, gen_seq = parse_id(info[k + 1]) end
  end
  if dense and gen_ms > 0 then
    local gen_id = gen_ms .. '-' .. gen_seq
    redis.call('HSET', state, 'foreign_id', gen_id)
    return {-56, 0, 0, 0, 0, now, -1, -1, gen_id}
  end
  last_ms, last_seq = gen_ms, gen_seq
  ms, seq = first_id_after(last_ms, last_seq)
  base_ms, base_seq_id = ms, seq
  after_first = add(ms .. '-' .. seq, run_shape, run_ts, i)
end
i = after_first
run_left = run_left - 1

-- The ID of the batch's record j (0-based): sequences run up to mask, then carry into the next ms.
local function id_at(j)
  if dense then return 0, base_seq_id + j end
  local t = base_seq_id + j
  return base_ms + math.floor(t / (mask + 1)), t % (mask + 1)
end

-- The other records take `ms-*` (`0-*` on a dense topic): Redis picks the sequence after the entry
-- just added, which is ours (the script is atomic), and Lua builds no ID string per record.
local star = ms .. '-*'
local room = mask - seq -- records that still fit in this ms before the sequence carries
local next_seq = seq + 1

-- Where the server has Schooner's stream module (redis/_stream_module.c), a run of values, or of keys and
-- values, is one SCHOONER.XADDRUN per chunk instead of one redis.call per record, which costs Redis twice
-- a bare XADD. The chunk stays well under what Lua's unpack can return (about 8,000 values).
local RUN_CHUNK = 1000
local xaddrun = false
if n > 2 and ARGV[19] == '1' then
  local found, allowed = pcall(redis.acl_check_cmd, 'schooner.xaddrun', stream)
  xaddrun = found and allowed
end
local function add_run(k, width)
  local left, from = k, next_seq
  while left > 0 do
    local c = math.min(left, RUN_CHUNK)
    local last = i + c * width - 1
    local added
    if width == 1 and txn then
      added = redis.call('SCHOONER.XADDRUN', stream, ms, from, 'crc', 'timestamp', run_ts, 'value', 'txn', txn,
        unpack(ARGV, i, last))
    elseif width == 1 then
      added = redis.call('SCHOONER.XADDRUN', stream, ms, from, 'cr', 'timestamp', run_ts, 'value',
        unpack(ARGV, i, last))
    elseif txn then
      added = redis.call('SCHOONER.XADDRUN', stream, ms, from, 'crrc', 'timestamp', run_ts, 'key', 'value', 'txn',
        txn, unpack(ARGV, i, last))
    else
      added = redis.call('SCHOONER.XADDRUN', stream, ms, from, 'crr', 'timestamp', run_ts, 'key', 'value',
        unpack(ARGV, i, last))
    end
    if added ~= c then error('SCHOONER.XADDRUN added ' .. added .. ' of ' .. c) end
    from = from + c
    i = last + 1
    left = left - c
  end
end

local done = 1
while done < n do
  if run_left == 0 then next_run() end
  if room == 0 then -- a timestamp topic's sequence carries into the next ms, where `ms-*` gives 0
    ms = ms + 1
    star, room, next_seq = ms .. '-*', mask + 1, 0
  end
  -- Up to the run's end, or to a carry, all with one ID pattern.
  local k = run_left
  if room < k then k = room end
  if xaddrun and (run_shape == 2 or run_shape == 3) then
    add_run(k, run_shape - 1)
  elseif txn then
    if run_shape == 2 then
      for a = i, i + k - 1 do
        redis.call('XADD', stream, star, 'timestamp', run_ts, 'value', ARGV[a], 'txn', txn)
      end
      i = i + k
    elseif run_shape == 3 then
      for a = i, i + 2 * k - 2, 2 do
        redis.call('XADD', stream, star, 'timestamp', run_ts, 'key', ARGV[a], 'value', ARGV[a + 1], 'txn', txn)
      end
      i = i + 2 * k
    else
      for _ = 1, k do i = add(star, run_shape, run_ts, i) end
    end
  else
    if run_shape == 2 then
      for a = i, i + k - 1 do
        redis.call('XADD', stream, star, 'timestamp', run_ts, 'value', ARGV[a])
      end
      i = i + k
    elseif run_shape == 3 then
      for a = i, i + 2 * k - 2, 2 do
        redis.call('XADD', stream, star, 'timestamp', run_ts, 'key', ARGV[a], 'value', ARGV[a + 1])
      end
      i = i + 2 * k
    else
      for _ = 1, k do i = add(star, run_shape, run_ts, i) end
    end
  end
  next_seq = next_seq + k
  room = room - k
  run_left = run_left - k
  done = done + k
end
last_ms, last_seq = id_at(n - 1)
local batch_max_ms, batch_max_seq = id_at(tonumber(ARGV[15]))
local batch_max_ts = tonumber(ARGV[14])
if log_append_time then batch_max_ts, batch_max_ms, batch_max_seq = now, last_ms, last_seq end

-- The time index is sparse, as Kafka's: a batch that raises the highest timestamp raises the score of
-- the last member instead of adding one while that member spans at most INDEX_SPAN_RECORDS records and
-- INDEX_SPAN_MS of timestamps. Small batches then cost a member per span, not one each (80-100 bytes).
-- A lookup scans forward from a member, so it stays exact; dense retention.ms keeps a span until its
-- highest timestamp expires, so a record may outlive retention.ms by up to INDEX_SPAN_MS, which is
-- at most a tenth of retention.ms.
local INDEX_SPAN_RECORDS, INDEX_SPAN_MS = 500, 1000
if tonumber(ARGV[7]) >= 0 then INDEX_SPAN_MS = math.min(INDEX_SPAN_MS, math.floor(tonumber(ARGV[7]) / 10)) end
local span_records = tonumber(saved_ids[6] or 0) + n
local span_fields = {}
if batch_max_ts > max_ts then
  redis.call('HSET', state, 'max_ts', batch_max_ts, 'max_ts_id', batch_max_ms .. '-' .. batch_max_seq)
  -- A timestamp-encoded LogAppendTime topic needs no index: its IDs are the append times.
  if dense or not log_append_time then
    local member, since = saved_ids[4], tonumber(saved_ids[5] or -1)
    local extend = member and since >= 0 and span_records <= INDEX_SPAN_RECORDS
      and batch_max_ts - since <= INDEX_SPAN_MS
    -- XX CH answers 0 when the member is gone (trimmed with the stream): start a new one then.
    if not (extend and redis.call('ZADD', tindex, 'XX', 'CH', batch_max_ts, member) == 1) then
      member = base_ms .. '-' .. base_seq_id
      redis.call('ZADD', tindex, batch_max_ts, member)
      span_records = n
      span_fields = {'tindex_member', member, 'tindex_since', batch_max_ts}
    end
  end
end
redis.call('HSET', state, 'last_ms', last_ms, 'last_seq', last_seq, 'tindex_records', span_records,
  unpack(span_fields))
redis.call('HINCRBY', state, 'bytes', tonumber(ARGV[10]))
redis.call('HINCRBY', state, 'records', n)

if pid >= 0 then
  local last_seq_no = base_seq + n - 1
  if last_seq_no > 2147483647 then last_seq_no = last_seq_no - 2147483648 end
  pbatches[#pbatches + 1] = {base_seq, last_seq_no, base_ms, base_seq_id, last_ms, last_seq}
  while #pbatches > 5 do table.remove(pbatches, 1) end
  local parts = {string.format('%d,%d', epoch, now)}
  for _, b in ipairs(pbatches) do
    parts[#parts + 1] = string.format('%d,%d,%d,%d,%d,%d', b[1], b[2], b[3], b[4], b[5], b[6])
  end
  redis.call('HSET', state, pfield, table.concat(parts, ';'))
  redis.call('ZADD', KEYS[4], now, ARGV[3])
end

if txn and redis.call('HEXISTS', KEYS[8], ARGV[3]) == 0 then
  redis.call('HSET', KEYS[8], ARGV[3], ARGV[4] .. ',' .. base_ms .. '-' .. base_seq_id .. ',' .. ARGV[16])
end

-- retention.ms is not applied here, only by the retention pass (log_retention.lua), as in Kafka: a
-- record stamped older than retention.ms (a backfill) stays readable until that pass. retention.bytes
-- is, since Redis memory is what it bounds, but never below this batch's n records.
if trim_by_size(stream, state, tonumber(ARGV[8]), ARGV[9] == '1', n) > 0 then trim_time_index(stream, tindex) end

if ARGV[11] ~= '' then redis.call(ARGV[17] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[11], ARGV[12]) end

local sms, sseq = log_start()

-- Codec runs: an entry where the codec changes (none before the first compressed batch). pcall: an ID
-- not above the last run's (a repaired partition) costs the run's codec, never the append.
if ARGV[18] ~= (saved_ids[7] or '0') then
  redis.pcall('XADD', KEYS[12], base_ms .. '-' .. base_seq_id, 'codec', ARGV[18])
  redis.call('HSET', state, 'codec', ARGV[18])
  if sms >= 0 then -- runs wholly below the log start go: the one that covers it stays
    local cover = redis.call('XREVRANGE', KEYS[12], sms .. '-' .. sseq, '-', 'COUNT', 1)[1]
    if cover then redis.call('XTRIM', KEYS[12], 'MINID', cover[1]) end
  end
end
return {0, base_ms, base_seq_id, last_ms, last_seq, now, sms, sseq, '', redis.call('HLEN', KEYS[8])}
