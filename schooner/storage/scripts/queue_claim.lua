-- uses: _ids, _mq, _txn
-- queue_claim.lua: the new owner of a partition takes over the entries the group left pending there
-- (a dead or departed member's, or its own from before an error), oldest first, with XAUTOCLAIM.
-- Markers, and with read committed the records of aborted transactions, are acked unseen: a read
-- never leaves them pending, but a member that read uncommitted may have.
-- KEYS[1] stream   KEYS[2] lease   KEYS[3] aborted index
-- ARGV[1] group   ARGV[2] member id   ARGV[3] cursor ('0-0' to start)   ARGV[4] max entries
-- ARGV[5] '1' read committed, '0' read uncommitted   ARGV[6] sequence bits (-1: dense)
-- Returns -1 when the lease is not the member's, -2 when the group does not exist, else
-- {next cursor ('0-0' when done), {{id, {field, value, ...}, delivery count}, ...}}.
-- When done, consumers with nothing pending are removed from the group (they are re-created on a read).
local stream, group, member = KEYS[1], ARGV[1], ARGV[2]
if redis.call('GET', KEYS[2]) ~= member then return -1 end
local ok, reply = pcall(redis.call, 'XAUTOCLAIM', stream, group, member, 0, ARGV[3], 'COUNT', ARGV[4])
if not ok then
  if string.find(err_text(reply), 'NOGROUP', 1, true) then return -2 end
  return redis.error_reply(err_text(reply))
end
local claimed, out = reply[2], {}
local entries, skip = split_txn_entries(claimed, ARGV[5] == '1', KEYS[3], tonumber(ARGV[6]))
ack_all(stream, group, skip)
if #entries > 0 then
  local counts = {}
  local pending = redis.call('XPENDING', stream, group, entries[1][1], entries[#entries][1],
    #claimed + #reply[3], member)
  for _, p in ipairs(pending) do counts[p[1]] = p[4] end
  for i, e in ipairs(entries) do out[i] = {e[1], e[2], counts[e[1]] or 1} end
end
if reply[1] == '0-0' then
  for _, flat in ipairs(redis.call('XINFO', 'CONSUMERS', stream, group)) do
    local c = fields_of(flat)
    if c['pending'] == 0 and c['name'] ~= member then
      redis.call('XGROUP', 'DELCONSUMER', stream, group, c['name'])
    end
  end
end
return {reply[1], out}
