-- group_txn_offsets.lua: ends a transaction's offset commits in one group: moved into the group's
-- committed offsets on commit, dropped on abort.
-- KEYS[1] the group's transactional offsets hash ("producer id|topic:partition" -> JSON)
-- KEYS[2] the group's offsets hash ("topic:partition" -> JSON)
-- ARGV[1] producer id   ARGV[2] '1' to commit, '0' to abort
-- Returns the number of offsets moved or dropped.
local prefix = ARGV[1] .. '|'
local fields = redis.call('HKEYS', KEYS[1])
local n = 0
for _, f in ipairs(fields) do
  if string.sub(f, 1, #prefix) == prefix then
    if ARGV[2] == '1' then
      redis.call('HSET', KEYS[2], string.sub(f, #prefix + 1), redis.call('HGET', KEYS[1], f))
    end
    redis.call('HDEL', KEYS[1], f)
    n = n + 1
  end
end
return n
