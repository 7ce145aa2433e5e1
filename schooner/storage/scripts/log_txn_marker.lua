#!lua flags=allow-oom
-- uses: _ids
-- log_txn_marker.lua: ends a producer's transaction in one partition with a commit or abort marker.
-- KEYS: the partition's keys (keys.partition_keys): [1] stream [2] state hash [4] producers
--       [8] open transactions [9] aborted index
-- ARGV[1] sequence bits (-1: dense)   ARGV[2] producer id   ARGV[3] the marker's producer epoch
-- ARGV[4] 'commit' or 'abort'   ARGV[5] channel to publish on ('' for none)   ARGV[6] message to publish
-- ARGV[7] topic id: must equal the state hash's topic_id
-- ARGV[8] '1' to SPUBLISH on ARGV[5] (a Redis Cluster: a channel in the partition's slot), '0' to PUBLISH
-- ARGV[9] the coordinator's version of the end (its Prepare state's), or -1. The partition keeps the
--         last one it took per producer (field ended:<pid>, even when nothing was open): a marker of an
--         end it has taken already is stale and writes nothing. Without it a marker delayed on a frozen
--         link, of an end another broker completed meanwhile, closed the producer's next transaction.
-- Returns {status, marker ms, marker seq}: status 0 marker written; 1 no records of the producer are
-- open here, so no marker is needed (a retry after a crash finds this); -3 UNKNOWN_TOPIC_OR_PARTITION;
-- -47 INVALID_PRODUCER_EPOCH (the partition has seen a newer epoch: this marker is stale);
-- -56 KAFKA_STORAGE_ERROR (a dense stream that a plain `XADD key *` ended).
-- The marker is an entry: timestamp, control = commit|abort, txn = "producer id:epoch".
-- allow-oom: one marker entry and a few fields; ending a transaction moves the LSO, which the
-- archiver may not pass, so a full Redis must still take it.
local stream, state, producers, open, aborted = KEYS[1], KEYS[2], KEYS[4], KEYS[8], KEYS[9]
local bits = tonumber(ARGV[1])
local dense = bits < 0
local pid, epoch = ARGV[2], tonumber(ARGV[3])
local now = now_ms()
if redis.call('HGET', state, 'topic_id') ~= ARGV[7] then return {-3, 0, 0} end

local pfield = 'producer:' .. pid
local saved = redis.call('HGET', state, pfield)
if saved then
  local saved_epoch = tonumber(string.match(saved, '^[^,;]+'))
  if saved_epoch > epoch then return {-47, 0, 0} end
  if saved_epoch < epoch then
    -- The marker's epoch is the producer's from now on (transactions v2 bump it at every end):
    -- a late batch of the old epoch is refused, and the new epoch starts its sequences at 0.
    redis.call('HSET', state, pfield, string.format('%d,%d', epoch, now))
    redis.call('ZADD', producers, now, pid)
  end
elseif epoch >= 0 then
  redis.call('HSET', state, pfield, string.format('%d,%d', epoch, now))
  redis.call('ZADD', producers, now, pid)
end

local ended = tonumber(ARGV[9] or '-1')
if ended >= 0 then
  local efield = 'ended:' .. pid
  if tonumber(redis.call('HGET', state, efield) or '-1') >= ended then return {1, 0, 0} end
  redis.call('HSET', state, efield, ended)
end

local first = redis.call('HGET', open, pid)
if not first then return {1, 0, 0} end
local first_id = string.match(first, '^[^,]+,([^,]+)')

local ms, seq = next_entry_id(stream, state, dense, bits, now)
if ms < 0 then return {-56, 0, 0} end
local id = ms .. '-' .. seq
redis.call('XADD', stream, id, 'timestamp', now, 'control', ARGV[4], 'txn', pid .. ':' .. ARGV[3])
redis.call('HSET', state, 'last_ms', ms, 'last_seq', seq)
redis.call('HDEL', open, pid)
if ARGV[4] == 'abort' then
  local offset = offset_at(ms, seq, bits)
  redis.call('ZADD', aborted, offset, pid .. ',' .. first_id .. ',' .. id)
end
if ARGV[5] ~= '' then redis.call(ARGV[8] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[5], ARGV[6]) end
return {0, ms, seq}
