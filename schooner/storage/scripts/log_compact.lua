-- uses: _ids
-- log_compact.lua: one bounded step of a compacted partition's compactor.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] ckeys (record key -> latest ID)
-- KEYS[4] tombstones (tombstone or marker ID -> ms the compactor reached it)   KEYS[5] compactor claim
-- KEYS[6] txn-open   KEYS[7] aborted index   KEYS[8] caborts (producer id -> "first,marker;..." of its
-- aborted transactions whose marker is after clean_to, copied from the aborted index in marker order)
-- ARGV[1] claim token   ARGV[2] claim lifetime ms   ARGV[3] at most this many entries per step
-- ARGV[4] min.compaction.lag.ms   ARGV[5] delete.retention.ms   ARGV[6] end of every read (last ID)
-- ARGV[7] sequence bits, -1 for a dense topic   ARGV[8] min.cleanable.dirty.ratio
-- ARGV[9] max.compaction.lag.ms
-- A pass cleans from the state's clean_to up to the entry that was last when it began. It begins only
-- when the entries after clean_to are more than the ratio of all, or the first of them is older than
-- the max lag; it ends early at the first entry younger than the min lag (the head) or at the last
-- stable offset (the first entry of an open transaction). Cleaning an entry: a record of an aborted
-- transaction is deleted; a record with a key deletes the key's previous latest entry and becomes it;
-- a tombstone or a transaction marker is deleted delete.retention.ms after the compactor reached it
-- (an abort marker with its aborted-index member). Returns {scanned, removed, more (1: call again
-- now), dirty, total} (entries after clean_to and in all, before the step), or {-1} when the caller's
-- claim has lapsed (another broker may compact the partition now).
local stream, state, latest, tombs, claim = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local txn_open, aborted, caborts = KEYS[6], KEYS[7], KEYS[8]
if redis.call('GET', claim) ~= ARGV[1] then return {-1} end
redis.call('PEXPIRE', claim, ARGV[2])
if redis.call('EXISTS', stream) == 0 then return {0, 0, 0, 0, 0} end

local limit = tonumber(ARGV[3])
local now = now_ms()
local min_lag = tonumber(ARGV[4])
local horizon = min_lag > 0 and now - min_lag or nil -- as Kafka, no lag: no time check at all
local read_end = ARGV[6]
local bits = tonumber(ARGV[7])
local dense = bits < 0
local ratio = tonumber(ARGV[8])
local overdue = now - tonumber(ARGV[9])

local function before(a, b)
  local ams, aseq = parse_id(a)
  local bms, bseq = parse_id(b)
  return id_less(ams, aseq, bms, bseq)
end

-- The record key, whether it has a value, its timestamp, and its txn and control fields.
local function fields_of(id, f)
  local key, has_value, ts, txn, control = nil, false, nil, nil, nil
  for i = 1, #f, 2 do
    local name = f[i]
    if name == 'key' then
      key = f[i + 1]
    elseif name == 'value' then
      has_value = true
    elseif name == 'timestamp' then
      ts = tonumber(f[i + 1])
    elseif name == 'txn' then
      txn = f[i + 1]
    elseif name == 'control' then
      control = f[i + 1]
    end
  end
  if not ts then ts = dense and 0 or parse_id(id) end
  return key, has_value, ts, txn, control
end

local mark = redis.call('HGET', state, 'clean_to')

-- Aborted spans by producer id, read from caborts on first use and written back at the end.
local spans, touched = {}, {}
local function spans_of(pid)
  local s = spans[pid]
  if not s then
    s = {}
    for first, marker in string.gmatch(redis.call('HGET', caborts, pid) or '', '([^,;]+),([^;]+)') do
      s[#s + 1] = {first, marker}
    end
    spans[pid] = s
  end
  return s
end

-- The producer's spans whose marker is after id (those at or before it are behind the scan).
local function spans_after(pid, id)
  local s = spans_of(pid)
  while s[1] and not before(id, s[1][2]) do
    table.remove(s, 1)
    touched[pid] = true
  end
  return s
end

-- Whether the producer's record at id belongs to an aborted transaction: first <= id < marker.
local function aborted_at(pid, id)
  local s = spans_after(pid, id)
  return s[1] ~= nil and not before(id, s[1][1])
end

-- Copies the aborted index's new members into caborts, a page at a time; true when caught up.
-- Markers are appended in order, so members only arrive above the cursor (inclusive: equal scores).
local function take_aborts()
  local page = math.max(limit, 100)
  local cursor = redis.call('HGET', state, 'abort_cursor') or '-inf'
  local got = redis.call('ZRANGEBYSCORE', aborted, cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, page)
  for i = 1, #got, 2 do
    local pid, first, marker = string.match(got[i], '^([^,]+),([^,]+),([^,]+)$')
    if pid and (not mark or before(mark, marker)) then
      local s = spans_of(pid)
      if not s[#s] or before(s[#s][2], marker) then
        s[#s + 1] = {first, marker}
        touched[pid] = true
      end
    end
    cursor = got[i + 1]
  end
  if #got > 0 then redis.call('HSET', state, 'abort_cursor', cursor) end
  return #got < 2 * page
end

-- The last stable offset's entry ID: the smallest first ID of an open transaction, or nil.
local function stable_end()
  local lso = nil
  for _, v in ipairs(redis.call('HVALS', txn_open)) do
    local first = string.match(v, '^[^,]*,([^,]+)')
    if first and (not lso or before(first, lso)) then lso = first end
  end
  return lso
end

-- Entries at or before clean_to that remain: the count the last step left, less what others
-- (retention, DeleteRecords: always the oldest first) removed since.
local function clean_entries(len, added)
  local was = redis.call('HMGET', state, 'clean_count', 'clean_len', 'clean_added')
  local first = redis.call('XRANGE', stream, '-', read_end, 'COUNT', 1)[1]
  if not was[1] or not mark or not first or before(mark, first[1]) then return 0 end
  local gone = tonumber(was[2]) + (added - tonumber(was[3])) - len
  return math.min(len, math.max(0, tonumber(was[1]) - math.max(gone, 0)))
end

local function entries_added()
  local info = redis.call('XINFO', 'STREAM', stream)
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then return tonumber(info[i + 1]) end
  end
  return 0
end

local len, added = redis.call('XLEN', stream), entries_added()
local clean = clean_entries(len, added)
local dirty = len - clean
local from = mark and ('(' .. mark) or '-'
local pass_to = redis.call('HGET', state, 'pass_to')
if not pass_to and dirty > 0 then
  local next_entry = redis.call('XRANGE', stream, from, read_end, 'COUNT', 1)[1]
  if next_entry then
    local _, _, ts = fields_of(next_entry[1], next_entry[2])
    if dirty > ratio * len or ts < overdue then
      pass_to = redis.call('XREVRANGE', stream, read_end, '-', 'COUNT', 1)[1][1]
      redis.call('HSET', state, 'pass_to', pass_to)
    end
  end
end

local scanned, removed, more = 0, 0, 0
local caught_up = take_aborts()
if not caught_up then more = 1 end
if pass_to and caught_up then
  local range_end = pass_to
  local lso = stable_end()
  if lso and not before(pass_to, lso) then range_end = '(' .. lso end
  local entries = redis.call('XRANGE', stream, from, range_end, 'COUNT', limit)
  local ended = #entries < limit
  for _, e in ipairs(entries) do
    local id = e[1]
    local key, has_value, ts, txn, control = fields_of(id, e[2])
    if horizon and ts > horizon then
      ended = true -- the rest is the head, for now
      break
    end
    local pid = txn and string.match(txn, '^(%d+):')
    if control then
      if pid then spans_after(pid, id) end
      redis.call('ZADD', tombs, now, id)
    elseif pid and aborted_at(pid, id) then
      removed = removed + redis.call('XDEL', stream, id) -- a record of an aborted transaction
    elseif key then
      local old = redis.call('HGET', latest, key)
      if old then
        removed = removed + redis.call('XDEL', stream, old)
        redis.call('ZREM', tombs, old)
      end
      redis.call('HSET', latest, key, id)
      if not has_value then redis.call('ZADD', tombs, now, id) end
    end
    mark = id
    scanned = scanned + 1
  end
  if scanned > 0 then redis.call('HSET', state, 'clean_to', mark) end
  if ended then redis.call('HDEL', state, 'pass_to') else more = 1 end
end

local function drop_aborted(txn, id)
  local pid = string.match(txn or '', '^(%d+):')
  if not pid then return end
  local at = offset_of(id, bits)  -- the marker's offset, as the aborted index scores it
  local near = redis.call('ZRANGEBYSCORE', aborted, string.format('%.0f', at - 1), string.format('%.0f', at + 1))
  for _, m in ipairs(near) do
    if string.sub(m, 1, #pid + 1) == pid .. ',' and string.sub(m, -#id - 1) == ',' .. id then
      redis.call('ZREM', aborted, m)
    end
  end
end

local due = redis.call('ZRANGEBYSCORE', tombs, '-inf', now - tonumber(ARGV[5]), 'LIMIT', 0, limit)
for _, id in ipairs(due) do
  local e = redis.call('XRANGE', stream, id, id)[1]
  if e then
    local key, _, _, txn, control = fields_of(id, e[2])
    if control == 'abort' then drop_aborted(txn, id) end
    if key and redis.call('HGET', latest, key) == id then redis.call('HDEL', latest, key) end
    removed = removed + redis.call('XDEL', stream, id)
  end
  redis.call('ZREM', tombs, id)
end
if #due == limit then more = 1 end

for pid in pairs(touched) do
  local parts = {}
  for i, s in ipairs(spans[pid]) do parts[i] = s[1] .. ',' .. s[2] end
  if #parts == 0 then
    redis.call('HDEL', caborts, pid)
  else
    redis.call('HSET', caborts, pid, table.concat(parts, ';'))
  end
end
local left = redis.call('XLEN', stream)
redis.call('HSET', state, 'clean_count', math.max(0, clean + scanned - (len - left)), 'clean_len', left,
  'clean_added', added)
return {scanned, removed, more, dirty, len}
