-- uses: _ids
-- log_renumber.lua: repairs a dense partition whose stream got entries from a plain `XADD key *`.
-- Redis takes no ID 0-n after such an entry (XSETID cannot go below a deleted ID either), so the
-- whole stream is copied, a page per call, into a new key: entries with ms 0 keep their IDs, the
-- others follow the last of them as 0-(n+1), 0-(n+2), ... with a timestamp field from their old ID.
-- The last call renames the copy over the stream, carrying consumer groups over, and clears the mark.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] the copy (same hash tag)
-- ARGV[1] the last ID copied ('' to start)   ARGV[2] page size
-- Returns {'more', last ID copied, entries moved so far} or {'done', entries renumbered, last offset + 1}.
local stream, state, copy = KEYS[1], KEYS[2], KEYS[3]
local after, page = ARGV[1], tonumber(ARGV[2])
if after == '' then
  -- Moved entries go after every ID the partition ever gave out, so no offset is used twice.
  local given = tonumber(redis.call('HGET', state, 'last_seq') or 0)
  redis.call('DEL', copy)
  redis.call('HSET', state, 'renumber_next', math.max(given, last_dense_seq(stream)), 'renumber_moved', 0)
  after = '-'
else
  after = '(' .. after
end
local next_seq = tonumber(redis.call('HGET', state, 'renumber_next'))
local moved = tonumber(redis.call('HGET', state, 'renumber_moved'))
local entries = redis.call('XRANGE', stream, after, '+', 'COUNT', page)
for _, e in ipairs(entries) do
  local ms, seq = parse_id(e[1])
  local fields = e[2]
  local id = e[1]
  if ms > 0 then
    next_seq = next_seq + 1
    id = '0-' .. next_seq
    moved = moved + 1
    local stamped = false
    for k = 1, #fields, 2 do
      if fields[k] == 'timestamp' then stamped = true end
    end
    if not stamped then
      fields[#fields + 1] = 'timestamp'; fields[#fields + 1] = tostring(ms)
    end
    redis.call('HSET', state, 'renumbered:' .. e[1], id)
  end
  redis.call('XADD', copy, id, unpack(fields))
end
redis.call('HSET', state, 'renumber_next', next_seq, 'renumber_moved', moved)
if #entries == page then return {'more', entries[#entries][1], moved} end

-- Consumer groups: a group that was given a moved entry goes back to before its new ID, and so does
-- one with pending entries, so nothing it has not acknowledged is lost (it may see some twice).
if redis.call('EXISTS', copy) == 0 then  -- nothing to copy: an empty stream all the same
  redis.call('XGROUP', 'CREATE', copy, 'renumber', '0', 'MKSTREAM')
  redis.call('XGROUP', 'DESTROY', copy, 'renumber')
end
if next_seq > 0 then redis.call('XSETID', copy, '0-' .. next_seq) end
local function mapped(id)
  if string.sub(id, 1, 2) == '0-' then return id end
  return redis.call('HGET', state, 'renumbered:' .. id) or ('0-' .. next_seq)
end
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', stream)
if ok then
  for _, g in ipairs(groups) do
    local name, delivered, pending
    for k = 1, #g, 2 do
      if g[k] == 'name' then name = g[k + 1]
      elseif g[k] == 'last-delivered-id' then delivered = g[k + 1]
      elseif g[k] == 'pending' then pending = g[k + 1] end
    end
    local from = mapped(delivered)
    if pending > 0 then
      local oldest = redis.call('XPENDING', stream, name, '-', '+', 1)[1][1]
      local _, oseq = parse_id(mapped(oldest))
      local _, fseq = parse_id(from)
      if oseq - 1 < fseq then from = '0-' .. (oseq - 1) end
    end
    redis.call('XGROUP', 'CREATE', copy, name, from)
  end
end
redis.call('RENAME', copy, stream)
for _, f in ipairs(redis.call('HKEYS', state)) do
  if string.sub(f, 1, 11) == 'renumbered:' then redis.call('HDEL', state, f) end
end
redis.call('HDEL', state, 'foreign_id', 'renumber_next', 'renumber_moved')
redis.call('HSET', state, 'last_ms', 0, 'last_seq', next_seq)
return {'done', moved, next_seq}
