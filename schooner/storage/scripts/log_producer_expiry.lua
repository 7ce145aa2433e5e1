#!lua flags=allow-oom
-- uses: _ids
-- log_producer_expiry.lua: forgets one partition's idempotent producers that have been idle too long.
-- KEYS[1] partition state hash   KEYS[2] producers (sorted set: producer id -> last append ms)
-- ARGV[1] producer.id.expiration.ms   ARGV[2] at most this many producers are forgotten per call
-- Returns the number of producers forgotten (ARGV[2] means: call again, there may be more).
-- allow-oom: it forgets producers (dating a few old ones first), which frees memory when Redis is full.
local state, producers = KEYS[1], KEYS[2]
-- A deleted partition is left alone: writing its hash would bring a key of it back.
if redis.call('HEXISTS', state, 'topic_id') == 0 then return 0 end
local now = now_ms()

-- Entries written before expiry existed carry no time and are not in the sorted set. A scan over the
-- hash, resumed across calls from the cursor kept in producer_scan ('done' once through), dates them
-- to now: they may belong to a live producer, whose retried batch needs them to be found a duplicate.
local function date_untimed_entries()
  local cursor = redis.call('HGET', state, 'producer_scan')
  if cursor == 'done' then return end
  cursor = cursor or '0'
  for _ = 1, 10 do
    local reply = redis.call('HSCAN', state, cursor, 'MATCH', 'producer:*', 'COUNT', 1000)
    cursor = reply[1]
    local found = reply[2]
    for i = 1, #found, 2 do
      local head = string.match(found[i + 1], '^[^;]*')
      if not string.find(head, ',', 1, true) then
        redis.call('HSET', state, found[i], head .. ',' .. string.format('%d', now)
          .. string.sub(found[i + 1], #head + 1))
        redis.call('ZADD', producers, 'NX', now, string.sub(found[i], 10))
      end
    end
    if cursor == '0' then
      redis.call('HSET', state, 'producer_scan', 'done')
      return
    end
  end
  redis.call('HSET', state, 'producer_scan', cursor)
end

date_untimed_entries()
local cutoff = now - tonumber(ARGV[1])
local idle = redis.call('ZRANGEBYSCORE', producers, '-inf', cutoff, 'LIMIT', 0, tonumber(ARGV[2]))
if #idle == 0 then return 0 end
local fields = {}
for i, pid in ipairs(idle) do
  fields[2 * i - 1], fields[2 * i] = 'producer:' .. pid, 'ended:' .. pid -- ended: log_txn_marker.lua
end
redis.call('HDEL', state, unpack(fields))
redis.call('ZREM', producers, unpack(idle))

-- Redis shrinks the table of a hash or sorted set that held many producers only step by step as it is
-- used afterwards, and never back to the compact encoding; written anew, a small one is sized to what
-- it holds. SMALL is Redis's default hash-max-listpack-entries (and zset-max-listpack-entries).
local SMALL = 128
if redis.call('OBJECT', 'ENCODING', state) ~= 'listpack' and redis.call('HLEN', state) <= SMALL then
  local all = redis.call('HGETALL', state)
  redis.call('DEL', state)
  redis.call('HSET', state, unpack(all))
end
local left = redis.call('ZCARD', producers)
if left > 0 and left <= SMALL and redis.call('OBJECT', 'ENCODING', producers) ~= 'listpack' then
  local scored = redis.call('ZRANGE', producers, 0, -1, 'WITHSCORES')
  local args = {}
  for i = 1, #scored, 2 do
    args[i], args[i + 1] = scored[i + 1], scored[i] -- ZADD takes the score first
  end
  redis.call('DEL', producers)
  redis.call('ZADD', producers, unpack(args))
end
return #idle
