-- uses: _ids, _mq, _share
-- share_acknowledge.lua: settles a member's acquired records of one share partition (ShareFetch's
-- piggybacked acknowledgements, ShareAcknowledge). Types: 0 gap, 1 accept (XACK), 2 release (available
-- again at once; archived when the delivery count limit is reached), 3 reject (archived), 4 renew (the
-- lock starts again). Every offset acknowledged, except gaps and offsets with no entry, must be acquired
-- by this member and still locked; otherwise nothing is settled and the reply is -1 (Kafka's
-- INVALID_RECORD_STATE).
-- KEYS[1] stream   KEYS[2] share partition state   KEYS[3] dead-letter stream
-- ARGV[1] group   ARGV[2] member   ARGV[3] lock duration ms   ARGV[4] delivery count limit
-- ARGV[5] sequence bits (-1: dense)   ARGV[6] '1' dead-letter archived records   ARGV[7] topic name
-- ARGV[8] partition   then per batch: first ID, last ID, first offset, types (one digit per offset, or
-- one digit for the whole batch)
-- Returns -1 (nothing settled) or {{dead-lettered ID, ...}, settled count}.
local stream, state, group, member = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local lock_ms, limit, bits = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local origin = nil
if ARGV[6] == '1' then origin = {topic = ARGV[7], partition = ARGV[8], bits = bits} end

local plan = {}  -- {id, type, delivery count}
for i = 9, #ARGV, 4 do
  local first_id, last_id, first, types = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  local width = offset_of(last_id, bits) - first + 1
  local ok, pending = pcall(redis.call, 'XPENDING', stream, group, first_id, last_id, width)
  if not ok then return -1 end
  local held = 0
  local seen = {}
  for _, p in ipairs(pending) do
    local id = p[1]
    local at = offset_of(id, bits) - first + 1
    local kind = tonumber(#types == 1 and types or string.sub(types, at, at))
    seen[id] = true
    if kind ~= 0 then
      if p[2] ~= member or p[3] >= lock_ms then return -1 end
      plan[#plan + 1] = {id, kind, p[4]}
      held = held + 1
    end
  end
  -- Offsets of the batch not pending for this member: gaps are fine, records that exist are not.
  if held < width then
    for _, e in ipairs(redis.call('XRANGE', stream, first_id, last_id, 'COUNT', width)) do
      if not seen[e[1]] then
        local at = offset_of(e[1], bits) - first + 1
        local kind = tonumber(#types == 1 and types or string.sub(types, at, at))
        if kind ~= 0 then return -1 end
      end
    end
  end
end

local now, dead = redis_now_ms(), {}
for _, step in ipairs(plan) do
  local id, kind, n = step[1], step[2], step[3]
  if kind == 1 or kind == 0 then
    redis.call('XACK', stream, group, id)
  elseif kind == 2 then
    if n >= limit then
      if archive(stream, group, state, KEYS[3], id, n, 'delivery_limit',
          'released after ' .. n .. ' deliveries', origin, now) then dead[#dead + 1] = id end
    else
      redis.call('XCLAIM', stream, group, member, 0, id, 'IDLE', RELEASED_IDLE_MS, 'JUSTID')
    end
  elseif kind == 3 then
    if archive(stream, group, state, KEYS[3], id, n, 'rejected', 'rejected by member ' .. member,
        origin, now) then dead[#dead + 1] = id end
  elseif kind == 4 then
    redis.call('XCLAIM', stream, group, member, 0, id, 'JUSTID')
  else
    return redis.error_reply('unknown acknowledge type ' .. kind)
  end
end
return {dead, #plan}
