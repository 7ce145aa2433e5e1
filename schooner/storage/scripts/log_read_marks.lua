-- log_read_marks.lua: what a partition read needs beside its entries, in one command rather than three
-- or four: the stream's bounds, the state's marks, the open transactions and the aborted ones. Sent
-- right after the read's XRANGE, so that a trim which removed entries the read missed shows here.
-- KEYS[1] stream   KEYS[2] partition state   KEYS[3] txn-open   KEYS[4] aborted
-- KEYS[5] codec runs
-- ARGV[1] lowest aborted score ('' when the aborted list is not wanted)   ARGV[2] aborted members at most
-- ARGV[3] the read's first entry ID ('' when the codec runs are not wanted)
-- Returns {the stream's fields {'last-generated-id', id, 'entries-added', n, 'first-entry', {id} or nil}
--            (nil when the stream is missing: XINFO STREAM's error),
--          {valid_from, last_seq} (HMGET's reply), the txn-open hash (HGETALL's flat reply),
--          the aborted members (ZRANGEBYSCORE's reply; {} when not wanted),
--          the codec runs from the one covering ARGV[3], flat: {id, codec, ...} ({} when not wanted)}
local MAX_RUNS = 256 -- codec changes within one read at most; entries past them count as the last run's
local stream = false
local info = redis.pcall('XINFO', 'STREAM', KEYS[1])
if not info.err then
  stream = {}
  for i = 1, #info, 2 do
    local name = info[i]
    if name == 'last-generated-id' or name == 'entries-added' then
      stream[#stream + 1] = name
      stream[#stream + 1] = info[i + 1]
    elseif name == 'first-entry' then
      stream[#stream + 1] = name
      -- Only the ID is used: the entry's fields stay on the server.
      stream[#stream + 1] = info[i + 1] and {info[i + 1][1]} or false
    end
  end
end
local state = redis.call('HMGET', KEYS[2], 'valid_from', 'last_seq')
local open = redis.call('HGETALL', KEYS[3])
local aborted = {}
if ARGV[1] ~= '' then
  aborted = redis.call('ZRANGEBYSCORE', KEYS[4], ARGV[1], '+inf', 'LIMIT', 0, ARGV[2])
end
local runs = {}
-- A partition whose producers never compressed has no runs (the append sets `codec` at the first change).
if ARGV[3] ~= '' and redis.call('HEXISTS', KEYS[2], 'codec') == 1 then
  local found = redis.call('XREVRANGE', KEYS[5], ARGV[3], '-', 'COUNT', 1)
  local later = redis.call('XRANGE', KEYS[5], '(' .. ARGV[3], '+', 'COUNT', MAX_RUNS)
  for _, e in ipairs(found) do runs[#runs + 1] = e[1]; runs[#runs + 1] = e[2][2] end
  for _, e in ipairs(later) do runs[#runs + 1] = e[1]; runs[#runs + 1] = e[2][2] end
end
return {stream, state, open, aborted, runs}
