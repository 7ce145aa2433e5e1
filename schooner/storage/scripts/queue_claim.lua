-- uses: _ids, _mq, _txn
-- queue_claim.lua: the new owner of a partition takes over the entries the group left pending there
-- (a dead or departed member's, or its own from before an error), oldest first: an XPENDING scan, then
-- XCLAIM of what it found. Entries held by share consumers (names starting with the share prefix: a
-- share group of the same name is the same queue, docs/share-groups.md) are left alone: they return
-- through their acquisition locks. Markers, and with read committed the records of aborted
-- transactions, are acked unseen: a read never leaves them pending, but a member that read uncommitted
-- may have.
-- KEYS[1] stream   KEYS[2] lease   KEYS[3] aborted index
-- ARGV[1] group   ARGV[2] member id   ARGV[3] cursor ('0-0' to start)   ARGV[4] max entries
-- ARGV[5] '1' read committed, '0' read uncommitted   ARGV[6] sequence bits (-1: dense)
-- ARGV[7] share consumer prefix
-- Returns -1 when the lease is not the member's, -2 when the group does not exist, else
-- {next cursor ('0-0' when done), {{id, {field, value, ...}, delivery count}, ...}}. Like XAUTOCLAIM,
-- one call looks at no more than ten times max entries, so a cursor may come back with none claimed.
-- When done, MQ consumers with nothing pending are removed from the group (re-created on a read).
local stream, group, member, prefix = KEYS[1], ARGV[1], ARGV[2], ARGV[7]
if redis.call('GET', KEYS[2]) ~= member then return -1 end
local want = math.max(tonumber(ARGV[4]), 1)
local budget, page = want * 10, want + 1

local function is_share(name)
  return string.sub(name, 1, #prefix) == prefix
end

-- Scan: ids to claim with their delivery counts, and the next cursor (the first entry not looked at).
local ids, counts, looked, cursor = {}, {}, 0, '0-0'
local start = ARGV[3] == '0-0' and '-' or ARGV[3]
local scanning = true
while scanning do
  local ok, pending = pcall(redis.call, 'XPENDING', stream, group, start, '+', page)
  if not ok then
    if string.find(err_text(pending), 'NOGROUP', 1, true) then return -2 end
    return redis.error_reply(err_text(pending))
  end
  for _, p in ipairs(pending) do
    if #ids >= want or looked >= budget then
      cursor, scanning = p[1], false
      break
    end
    looked = looked + 1
    if not is_share(p[2]) then
      ids[#ids + 1] = p[1]
      counts[p[1]] = p[4] + 1  -- XCLAIM below counts this delivery
    end
  end
  if scanning then
    if #pending < page then break end
    start = '(' .. pending[#pending][1]
  end
end

local out = {}
if #ids > 0 then
  -- Entries deleted from the stream (trimmed) leave the pending list here and are not returned.
  local claimed = {}
  for i = 1, #ids, 1000 do
    local last = math.min(i + 999, #ids)
    for _, e in ipairs(redis.call('XCLAIM', stream, group, member, 0, unpack(ids, i, last))) do
      claimed[#claimed + 1] = e
    end
  end
  local entries, skip = split_txn_entries(claimed, ARGV[5] == '1', KEYS[3], tonumber(ARGV[6]))
  ack_all(stream, group, skip)
  for i, e in ipairs(entries) do out[i] = {e[1], e[2], counts[e[1]]} end
end
if cursor == '0-0' then
  for _, flat in ipairs(redis.call('XINFO', 'CONSUMERS', stream, group)) do
    local c = fields_of(flat)
    if c['pending'] == 0 and c['name'] ~= member and not is_share(c['name']) then
      redis.call('XGROUP', 'DELCONSUMER', stream, group, c['name'])
    end
  end
end
return {cursor, out}
