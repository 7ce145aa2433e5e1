-- Shared helpers of the share-group scripts (storage/share/partition.py), prepended to scripts whose
-- header says "-- uses: _ids, ..., _share" (archive() takes _ids' offset_of). A share partition is a
-- Redis consumer group on the partition's stream: its pending entries list is the in-flight window,
-- XPENDING's idle time is the acquisition lock, its delivery counter is the delivery count. An entry
-- pending longer than the lock duration is available again; a released one is made so at once by
-- setting its idle time far past any lock.

-- Archives an entry: out of the window for good, counted, and with a dead-letter queue configured,
-- added to the partition's dead-letter stream in the MQ library's format (storage/mq/dead_letters.py).
-- Returns true when a dead letter was written.
local function archive(stream, group, state, dlq, id, deliveries, reason, message, origin, now)
  redis.call('XACK', stream, group, id)
  redis.call('HINCRBY', state, 'archived', 1)
  if not origin then return false end
  local entry = redis.call('XRANGE', stream, id, id)[1]
  if not entry then return false end
  local letter = {
    'origin_topic', origin.topic, 'origin_partition', origin.partition,
    'origin_offset', string.format('%d', offset_of(id, origin.bits)), 'origin_id', id,
    'group', group, 'attempts', deliveries, 'deliveries', deliveries,
    'first_failure_ms', now, 'last_failure_ms', now, 'error_type', reason, 'error_message', message,
  }
  local f, ts = entry[2], nil
  for j = 1, #f - 1, 2 do
    local name = f[j]
    if name == 'timestamp' then ts = f[j + 1]
    elseif name == 'key' or name == 'value' or name == 'headers' then
      letter[#letter + 1] = name
      letter[#letter + 1] = f[j + 1]
    end
  end
  letter[#letter + 1] = 'timestamp'
  letter[#letter + 1] = ts or '-1'
  redis.call('XADD', dlq, '*', unpack(letter))
  redis.call('HINCRBY', state, 'dead_lettered', 1)
  return true
end

-- Far past any acquisition lock: the idle time a released entry gets, so the next acquire takes it.
local RELEASED_IDLE_MS = 1000000000000

-- The prefix of share members' consumer names (storage/share/partition.py CONSUMER_PREFIX).
local SHARE_PREFIX = 'share:'
