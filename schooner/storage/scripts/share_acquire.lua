-- uses: _ids, _mq, _txn, _share
-- share_acquire.lua: acquires records of one share partition for a member (ShareFetch), oldest first:
-- first the window's available entries (released, or locked longer than the lock duration), then new
-- ones, while the window holds fewer than its maximum. An available entry that was already delivered
-- the delivery count limit times is archived instead (dead-lettered when the group has a DLQ).
-- Markers, and with read committed aborted records, are acked unseen; read committed reads nothing at
-- or past the last stable offset.
-- KEYS[1] stream   KEYS[2] partition state hash   KEYS[3] txn-open   KEYS[4] aborted index
-- KEYS[5] share partition state (hash: archived, dead_lettered)   KEYS[6] dead-letter stream
-- KEYS[7] the MQ group's lease on the partition (storage/mq/leases.py)
-- ARGV[1] group   ARGV[2] member   ARGV[3] max records   ARGV[4] lock duration ms
-- ARGV[5] delivery count limit   ARGV[6] max in-flight records   ARGV[7] '1' read committed
-- ARGV[8] sequence bits (-1: dense)   ARGV[9] topic id   ARGV[10] start ID for a new group ('$', '0')
-- ARGV[11] '1' dead-letter archived records   ARGV[12] topic name   ARGV[13] partition
-- Returns -3 when the partition is not that topic's any more, else
-- {created (1 when the share partition was initialized now), {{id, fields, delivery count}, ...},
--  {dead-lettered ID, ...}}.
local stream, state, group, member = KEYS[1], KEYS[5], ARGV[1], ARGV[2]
local want, lock_ms, limit = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local max_locks, committed, bits = tonumber(ARGV[6]), ARGV[7] == '1', tonumber(ARGV[8])
local origin = nil
if ARGV[11] == '1' then origin = {topic = ARGV[12], partition = ARGV[13], bits = bits} end
local now = redis_now_ms()

local created = 0
local ok, info = pcall(redis.call, 'XPENDING', stream, group)
if not ok then
  if not string.find(err_text(info), 'NOGROUP', 1, true) then return redis.error_reply(err_text(info)) end
  if redis.call('HGET', KEYS[2], 'topic_id') ~= ARGV[9] then return -3 end
  local start = ARGV[10]
  if start == '$' and committed then start = before_stable(stream, KEYS[3]) or '$' end
  redis.call('XGROUP', 'CREATE', stream, group, start, 'MKSTREAM')
  created = 1
  info = {0}
end
local in_flight = tonumber(info[1])

local out, dead = {}, {}
-- Available entries of the window: those idle for at least the lock duration. An MQ member's (a
-- consumer name without the share prefix) only while no MQ member holds the partition's lease: the
-- lease holder claims them itself (queue_claim.lua), and a live one may still be handling them.
if in_flight > 0 then
  local mq_free = redis.call('EXISTS', KEYS[7]) == 0
  local start, looked = '-', 0
  while #out < want and looked < 20 * want do
    local asked = want - #out
    local page = redis.call('XPENDING', stream, group, 'IDLE', lock_ms, start, '+', asked)
    if #page == 0 then break end
    local ids, counts = {}, {}
    for _, p in ipairs(page) do
      if mq_free or string.sub(p[2], 1, #SHARE_PREFIX) == SHARE_PREFIX then
        ids[#ids + 1] = p[1]
        counts[p[1]] = p[4] + 1
      end
    end
    looked = looked + #page
    start = '(' .. page[#page][1]
    if #page < asked then looked = 20 * want end  -- the last page
    if #ids > 0 then
      local claimed = redis.call('XCLAIM', stream, group, member, lock_ms, unpack(ids))
      local entries, skip = split_txn_entries(claimed, committed, KEYS[4], bits)
      ack_all(stream, group, skip)
      for _, e in ipairs(entries) do
        local n = counts[e[1]]
        if n > limit then
          -- Delivered the limit times already: archived, not delivered again.
          if archive(stream, group, state, KEYS[6], e[1], n - 1, 'delivery_limit',
              'delivered ' .. (n - 1) .. ' times without being accepted', origin, now) then
            dead[#dead + 1] = e[1]
          end
        else
          out[#out + 1] = {e[1], e[2], n}
        end
      end
    end
  end
  in_flight = tonumber(redis.call('XPENDING', stream, group)[1])
end

-- New entries, within the window's limit.
local room = math.min(want - #out, max_locks - in_flight)
if room > 0 and committed then
  local lso = stable_id(KEYS[3])
  if lso then room = count_before(stream, group, lso, room) end
end
if room > 0 then
  local reply = redis.call('XREADGROUP', 'GROUP', group, member, 'COUNT', room, 'STREAMS', stream, '>')
  if reply then
    local entries, skip = split_txn_entries(reply[1][2], committed, KEYS[4], bits)
    ack_all(stream, group, skip)
    for _, e in ipairs(entries) do out[#out + 1] = {e[1], e[2], 1} end
  end
end
return {created, out, dead}
