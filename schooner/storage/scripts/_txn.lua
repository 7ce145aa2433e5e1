-- Shared helpers of the MQ scripts that keep transactions out of deliveries, prepended to scripts whose
-- header says "-- uses: _ids, _mq, _txn" (they use _ids' parse_id and id_less, and _mq's fields_of).
-- The format is storage/log/transactions.py's: a transactional record has txn = "producer id:epoch", a
-- commit or abort marker has control and txn; txn-open maps producer id -> "epoch,first id,transactional
-- id"; the aborted index holds "producer id,first id,marker id" scored by the marker's offset.

-- Most aborted transactions read for one batch, as Fetch reads (transactions.ABORTED_READ_LIMIT).
local ABORTED_READ_LIMIT = 1000

-- The first entry ID of the partition's oldest open transaction: the last stable offset's entry.
-- nil when none is open (the common case: one lookup of an empty key).
local function stable_id(open)
  local best, best_ms, best_seq
  for _, v in ipairs(redis.call('HVALS', open)) do
    local id = string.match(v, '^[^,]*,([^,]+)')
    local ms, seq = parse_id(id)
    if not best or id_less(ms, seq, best_ms, best_seq) then best, best_ms, best_seq = id, ms, seq end
  end
  return best
end

-- The last ID a group created at '$' should count as delivered under read_committed: the entry before
-- the oldest open transaction, so that the transaction's records are delivered once it commits.
-- nil when none is open ('$' is right then).
local function before_stable(stream, open)
  local lso = stable_id(open)
  if not lso then return nil end
  local prev = redis.call('XREVRANGE', stream, '(' .. lso, '-', 'COUNT', 1)[1]
  return prev and prev[1] or '0-0'
end

-- How many entries lie after the group's last delivered one and before the LSO, up to count; -2 when
-- the stream or group does not exist. XREADGROUP '>' takes no end ID, so a read committed member reads
-- exactly this many: nothing at or past the LSO ever enters the group's pending list.
local function count_before(stream, group, lso, count)
  local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', stream)
  if not ok then return -2 end
  local last
  for _, flat in ipairs(groups) do
    local g = fields_of(flat)
    if g['name'] == group then last = g['last-delivered-id'] end
  end
  if not last then return -2 end
  local lms, lseq = parse_id(last)
  local sms, sseq = parse_id(lso)
  if not id_less(lms, lseq, sms, sseq) then return 0 end
  return #redis.call('XRANGE', stream, '(' .. last, '(' .. lso, 'COUNT', count)
end

-- Splits delivered entries ({id, fields} each) into those a handler gets and the IDs nobody should see:
-- markers always, and when committed the records of aborted transactions. An entry without txn costs
-- one pass over its field names; the aborted index is read only when a transactional record is there.
-- Every entry given must be below the LSO (its transaction has ended), which the read ensures.
local function split_txn_entries(entries, committed, aborted, bits)
  local kinds, any_txn, low = {}, false, nil
  for i, e in ipairs(entries) do
    local f, kind = e[2], false  -- false: plain record; true: marker; a string: a record's txn
    if f then
      for j = 1, #f - 1, 2 do
        local name = f[j]
        if name == 'control' then kind = true break end
        if name == 'txn' then kind = f[j + 1] end
      end
    end
    kinds[i] = kind
    if kind then
      any_txn = true
      if committed and kind ~= true then
        local ms, seq = parse_id(e[1])
        local score = offset_at(ms, seq, bits)
        if not low or score < low then low = score end
      end
    end
  end
  if not any_txn then return entries, {} end
  local spans = {}
  if low then
    -- A record at X of producer P is aborted iff a member (P, first, marker) has first <= X < marker:
    -- only markers scored at or after the lowest such X can matter.
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', aborted, low, '+inf', 'LIMIT', 0, ABORTED_READ_LIMIT)) do
      local pid, first, marker = string.match(m, '^([^,]+),([^,]+),([^,]+)$')
      local fms, fseq = parse_id(first)
      local mms, mseq = parse_id(marker)
      spans[#spans + 1] = {pid, fms, fseq, mms, mseq}
    end
  end
  local out, skip = {}, {}
  for i, e in ipairs(entries) do
    local kind = kinds[i]
    local drop = kind == true
    if committed and type(kind) == 'string' and #spans > 0 then
      local pid = string.match(kind, '^([^:]+)')
      local ms, seq = parse_id(e[1])
      for _, s in ipairs(spans) do
        if s[1] == pid and not id_less(ms, seq, s[2], s[3]) and id_less(ms, seq, s[4], s[5]) then
          drop = true
          break
        end
      end
    end
    if drop then skip[#skip + 1] = e[1] else out[#out + 1] = e end
  end
  return out, skip
end

-- Acks IDs in slices (unpack has a limit on the number of arguments).
local function ack_all(stream, group, ids)
  for i = 1, #ids, 1000 do
    redis.call('XACK', stream, group, unpack(ids, i, math.min(i + 999, #ids)))
  end
end
