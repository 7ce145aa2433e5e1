-- uses: _ids, _mq, _txn
-- queue_read.lua: delivers new entries of a partition to the member that holds its lease (XREADGROUP),
-- keeping transactions out (storage/log/transactions.py): markers are acked unseen; read committed
-- also acks the records of aborted transactions unseen and reads nothing at or past the last stable
-- offset, so the records of an open transaction wait, undelivered, until it ends.
-- KEYS[1] stream   KEYS[2] lease   KEYS[3] open transactions (txn-open)   KEYS[4] aborted index
-- ARGV[1] group   ARGV[2] member id (the lease's owner token)   ARGV[3] max entries
-- ARGV[4] '1' read committed, '0' read uncommitted   ARGV[5] sequence bits (-1: dense), to score IDs
-- Returns -1 when the lease is not the member's (so a member that lost a partition reads nothing more),
-- -2 when the group does not exist, else {{{id, {field, value, ...}}, ...}, skipped}: the entries to
-- handle (empty when none are new) and how many were acked unseen (the caller reads again at once).
-- Without transactions the cost over a plain XREADGROUP is an HVALS of an empty hash and one pass over
-- the field names of the entries read.
local stream, group, member = KEYS[1], ARGV[1], ARGV[2]
if redis.call('GET', KEYS[2]) ~= member then return -1 end
local count, committed, bits = tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5])
if committed then
  local lso = stable_id(KEYS[3])
  if lso then
    count = count_before(stream, group, lso, count)
    if count == -2 then return -2 end
    if count == 0 then return {{}, 0} end
  end
end
local ok, reply = pcall(redis.call, 'XREADGROUP', 'GROUP', group, member, 'COUNT', count,
  'STREAMS', stream, '>')
if not ok then
  if string.find(err_text(reply), 'NOGROUP', 1, true) then return -2 end
  return redis.error_reply(err_text(reply))
end
if not reply then return {{}, 0} end
local out, skip = split_txn_entries(reply[1][2], committed, KEYS[4], bits)
ack_all(stream, group, skip)
return {out, #skip}
