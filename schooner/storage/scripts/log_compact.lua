-- uses: _ids
-- log_compact.lua: one bounded step of a compacted partition's compactor.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] compaction keys (record key -> latest ID)
-- KEYS[4] tombstones (ID -> ms the compactor reached it)   KEYS[5] compactor claim (string, PX)
-- ARGV[1] claim token   ARGV[2] claim lifetime ms   ARGV[3] at most this many entries per step
-- ARGV[4] min.compaction.lag.ms   ARGV[5] delete.retention.ms   ARGV[6] end of every read (last ID)
-- ARGV[7] '1' for a dense topic (an entry without a timestamp field then counts as old)
-- Scans on from the state's clean_to mark: each entry with a key deletes the earlier entry of that
-- key (XDEL) and becomes the key's latest; the scan stops at the first entry younger than the lag,
-- so what is after it (the head) stays as written. Then removes tombstones reached more than
-- delete.retention.ms ago. Returns {scanned, removed, more (1: call again now)}, or {-1} when the
-- caller's claim has lapsed (another broker may compact the partition now).
local stream, state, latest, tombs, claim = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if redis.call('GET', claim) ~= ARGV[1] then return {-1} end
redis.call('PEXPIRE', claim, ARGV[2])

local limit = tonumber(ARGV[3])
local now = now_ms()
local horizon = now - tonumber(ARGV[4])
local dense = ARGV[7] == '1'

-- The record key, whether it has a value, and its timestamp.
local function fields_of(id, f)
  local key, has_value, ts = nil, false, nil
  for i = 1, #f, 2 do
    local name = f[i]
    if name == 'key' then
      key = f[i + 1]
    elseif name == 'value' then
      has_value = true
    elseif name == 'timestamp' then
      ts = tonumber(f[i + 1])
    end
  end
  if not ts then ts = dense and 0 or parse_id(id) end
  return key, has_value, ts
end

local mark = redis.call('HGET', state, 'clean_to')
local entries = redis.call('XRANGE', stream, mark and ('(' .. mark) or '-', ARGV[6], 'COUNT', limit)
local scanned, removed, more = 0, 0, #entries == limit and 1 or 0
for _, e in ipairs(entries) do
  local id = e[1]
  local key, has_value, ts = fields_of(id, e[2])
  if ts > horizon then
    more = 0 -- the rest is the head, for now
    break
  end
  if key then
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

local due = redis.call('ZRANGEBYSCORE', tombs, '-inf', now - tonumber(ARGV[5]), 'LIMIT', 0, limit)
for _, id in ipairs(due) do
  local e = redis.call('XRANGE', stream, id, id)[1]
  if e then
    local key = fields_of(id, e[2])
    if key and redis.call('HGET', latest, key) == id then redis.call('HDEL', latest, key) end
    removed = removed + redis.call('XDEL', stream, id)
  end
  redis.call('ZREM', tombs, id)
end
if #due == limit then more = 1 end
return {scanned, removed, more}
